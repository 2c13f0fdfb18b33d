// Probe results, peer hellos and the peer-facing checks, as JSON and metric text: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <prometheus/metric_family.h>

#include "daemon/model/probe.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch::api {

// Version of the control exchange (GET /api/v1/peer/hello) and of what it leads to; bumped on
// incompatible change. 2: the TCP data port's challenge and HMAC (probes/tcp_wire.hpp), which
// a daemon of version 1 cannot speak: the hello says version_mismatch before either tries.
inline constexpr int kPeerProtocolVersion = 2;

// A ProbeResult as JSON, and back: the REST API's spelling, which the UCX session child
// and the probe tools print too. The reader takes what it finds and leaves the rest
// default (a field of the wrong type counts as missing; never throws); `started` is the
// reader's own to set (another process's clock).
nlohmann::json probe_result_json(const ProbeResult& r);
ProbeResult probe_result_from_json(const nlohmann::json& j, ProbeKind kind_if_missing);

// GET /api/v1/probes: whether probing is on, peers with their hellos, the latest result per
// (peer, rail, kind) and its short history (newest last).
nlohmann::json probes_json(const Snapshot& s);

// GET /api/v1/peer/hello: what a peer needs to probe us and compare its settings with ours.
nlohmann::json hello_json(const Snapshot& s, uint16_t data_port);
// The other side of hello_json; throws nlohmann::json::exception on a malformed document, and
// std::invalid_argument when a number is not a whole number in its range.
PeerHello hello_from_json(const nlohmann::json& j);

// "Authorization: Bearer <token>" against the expected token, in constant time.
bool bearer_matches(const std::string& authorization_header, const std::string& token);
// "Bearer <token>", or "Basic base64(<any user>:<token>)"; false when token is empty.
bool credentials_match(const std::string& authorization_header, const std::string& token);

// rocewatch_probe_* families for /metrics: per peer, rail and kind, from the latest results.
void add_probe_families(std::vector<prometheus::MetricFamily>& out, const Snapshot& s);

// Blackbox-style GET /probe body: probe_success, probe_duration_seconds and the figures.
std::string render_probe_result(const ProbeResult& r);

}  // namespace rocewatch::api
