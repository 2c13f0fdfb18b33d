// RDMA probes as the daemon runs them: plans from config and snapshot, both session sides.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/core/probe_scheduler.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"
#include "probes/rdma_session.hpp"

namespace rocewatch {

// The active side's plan for a job: per-rail kinds use the job's rail, rdma_multirail_bw
// every rail of the peer. nullopt with `why` when a rail has no usable local RDMA port.
std::optional<RdmaClientPlan> rdma_plan(const Config& cfg, const Snapshot& snap, const ProbeJob& job, std::string& why);

// Runs one RDMA job; `exchange` carries the session request to the peer. Never throws.
ProbeResult run_rdma_job(const Config& cfg, const Snapshot* snap, const ProbeJob& job, const SessionExchange& exchange,
                         Deadline deadline);

// Every rail of the peer whose local RDMA port the snapshot knows, with its transmit counter
// (port_xmit_data, or the GID netdev's tx_bytes on Soft-RoCE). Runs over all rails (UCX's
// own lanes) read these around the run.
std::vector<std::pair<std::string, RdmaTxCounter>> rail_tx_counters(const Config& cfg, const Snapshot& snap,
                                                                    const PeerConfig& peer);

// What this daemon grants a peer's RDMA session: its own [probes.rdma_*] budget.
RdmaServeLimits rdma_serve_limits(const Config& cfg);

// The passive side of a peer's request, with endpoints found in our snapshot; *cancel ends
// its serve step early.
RdmaSessionAccept accept_rdma_session(const Config& cfg, const Snapshot& snap, const nlohmann::json& request,
                                      const std::atomic<bool>* cancel = nullptr);

}  // namespace rocewatch
