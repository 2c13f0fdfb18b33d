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
#include "daemon/core/probe_scheduler.hpp"
#include "daemon/peering/probers.hpp"
#include "daemon/peering/session_host.hpp"

namespace rocewatch::api {

struct PeerRoutes {
    const SnapshotSource& snapshots;
    std::shared_ptr<const Config> config;  // for snapshots that carry none
    std::string token_hex;                 // "" when peer probing is off
    std::string no_probing;                // why it is off
    uint16_t data_port = 0;
    ProbeScheduler& scheduler;
    SessionHost& sessions;
    std::vector<SessionKind> session_kinds;
    std::shared_ptr<spdlog::logger> log;
    ProbeBudget* budget = nullptr;  // sessions are admitted against it and charged; nullptr: none
    // A user of the web config's basic auth (ApiServer::web_user) may use the token-guarded
    // routes too; unset: only the token opens them.
    std::function<bool(const std::string& authorization)> web_user;
};

// Registers the routes on `api` (before start()). Everything in `routes` must outlive it.
void add_peer_routes(ApiServer& api, PeerRoutes routes);

// The bound of a GET /probe from Prometheus's X-Prometheus-Scrape-Timeout-Seconds: half a
// second less, for the answer to travel, within 0.1..60 s; 10 s when absent, not a number
// or not finite.
[[nodiscard]] double probe_timeout_seconds(const std::string& header);

}  // namespace rocewatch::api
