// Pure translation of a Snapshot (and the server's own counters) into Prometheus metric families.
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "api/http_stats.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch::api {

struct WebReloadStatus;  // web_guard.hpp

// Everything the snapshot says, as families named rocewatch_* (base units, _total on
// counters, _info for metadata). Built fresh for every scrape, so a device or link that
// has gone leaves no stale series behind. Values the snapshot does not have are left
// out, never exported as 0; families without a sample are dropped.
std::vector<prometheus::MetricFamily> snapshot_to_families(const Snapshot& s);

// rocewatch_http_requests_total{handler,code} and rocewatch_http_rejected_total{reason}.
// With a web config, also rocewatch_web_config_last_reload_successful and
// rocewatch_web_config_last_reload_success_timestamp_seconds.
std::vector<prometheus::MetricFamily> http_families(const HttpStats& stats, const WebReloadStatus* web = nullptr);

// The /metrics body in text exposition format 0.0.4.
std::string render_metrics(const Snapshot& s, const HttpStats& stats);

// The two halves of render_metrics: the snapshot's part changes only when a new snapshot is
// published, so the server renders it once per snapshot and appends the live HTTP part.
std::string render_snapshot_metrics(const Snapshot& s);
// What one render learns for the next: each family's size, so that the next one allocates
// each family's text once (see Builder). Any sizes do: a family that grew is grown again.
struct RenderSizes {
    std::vector<std::size_t> family_bytes;
};
// render_snapshot_metrics in pieces (a family each, the probe and cluster views last) whose
// concatenation is the text: deflated piece by piece, a body that only Prometheus takes (gzip)
// is never joined into one string (at 128 NICs, 800 KB written and faulted in per snapshot).
std::vector<std::string> render_snapshot_pieces(const Snapshot& s, RenderSizes* sizes = nullptr);
// The pieces as one string.
std::string join_pieces(const std::vector<std::string>& pieces);
std::string render_http_metrics(const HttpStats& stats, const WebReloadStatus* web = nullptr);

// Content-Type of render_metrics' output.
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace rocewatch::api
