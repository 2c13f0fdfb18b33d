// The routes peers and probe users call: hello, the passive session sides, the probe book,
// on-demand runs (POST /api/v1/probes/run) and the blackbox-style GET /probe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "api/server.hpp"
#include "core/probe_scheduler.hpp"
#include "peering/session_host.hpp"

namespace rocewatch::api {

// The passive side of one session kind: the reply to the peer, and the serve step for the
// session host's thread (empty when refused: the reply then says why).
using SessionAccept = std::function<std::pair<nlohmann::json, std::function<ProbeResult()>>(
    const Config&, const Snapshot&, const nlohmann::json& request, const std::atomic<bool>* cancel)>;

struct PeerRoutes {
    const SnapshotSource& snapshots;
    std::shared_ptr<const Config> config;  // for snapshots that carry none
    std::string token_hex;                 // "" when peer probing is off
    std::string no_probing;                // why it is off
    uint16_t data_port = 0;
    ProbeScheduler& scheduler;
    SessionHost& sessions;
    // POST path ("/api/v1/peer/rdma") -> its kind's name for logs and how it is accepted.
    std::vector<std::tuple<std::string, std::string, SessionAccept>> session_kinds;
    std::shared_ptr<spdlog::logger> log;
};

// Registers the routes on `api` (before start()). Everything in `routes` must outlive it.
void add_peer_routes(ApiServer& api, PeerRoutes routes);

// The bound of a GET /probe from Prometheus's X-Prometheus-Scrape-Timeout-Seconds: half a
// second less, for the answer to travel, within 0.1..60 s; 10 s when absent, not a number
// or not finite.
[[nodiscard]] double probe_timeout_seconds(const std::string& header);

}  // namespace rocewatch::api
