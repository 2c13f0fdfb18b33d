// RDMA probes as the daemon runs them: plans from config and snapshot, both session sides.
#include "daemon/peering/rdma_runner.hpp"

#include <algorithm>
#include <chrono>

#include "daemon/rules/rail_resolve.hpp"
#include "probes/errors.hpp"

namespace rocewatch {
namespace {

// Soft-RoCE retries forever at retry_cnt 7; 6 gives up, and costs nothing on real NICs.
constexpr int kRetryCount = 6;

bool is_rxe(const Snapshot& s, const std::string& device) {
    for (const auto& d : s.devices)
        if (d.name == device) return d.driver == "rxe" || d.name.rfind("rxe", 0) == 0;
    return false;
}

}  // namespace

std::optional<RdmaClientPlan> rdma_plan(const Config& cfg, const Snapshot& snap, const ProbeJob& job,
                                        std::string& why) {
    RdmaClientPlan plan;
    plan.kind = job.kind;
    plan.sysfs_root = cfg.daemon.sysfs_root;
    const auto& bw = cfg.probes.rdma_bw;
    plan.qps_per_rail = bw.qps_per_rail;
    plan.bw.message_size = bw.message_size;
    plan.bw.iterations = 0;  // timed, as perftest -D
    plan.bw.seconds = as_seconds(bw.duration);
    plan.bw.tx_depth = bw.tx_depth;
    plan.lat.message_size = cfg.probes.rdma_lat.size;
    plan.lat.iterations = cfg.probes.rdma_lat.count;

    std::vector<PeerRailConfig> rails;
    if (job.kind == ProbeKind::rdma_multirail_bw)
        rails = job.peer.rails;
    else if (job.rail)
        rails.push_back(*job.rail);
    if (rails.empty()) {
        why = "peer " + job.peer.name + " has no rails: RDMA probes need [[peers.rails]]";
        return std::nullopt;
    }
    for (const auto& r : rails) {
        auto local = find_local_rail_port(snap, r, why);
        if (!local) return std::nullopt;
        RdmaRailPlan rp;
        rp.name = r.name;
        rp.local.device = local->device;
        rp.local.port = static_cast<uint8_t>(local->port);
        rp.local.gid_index = local->gid_index;
        rp.local.retry_cnt = kRetryCount;
        rp.remote_device = r.remote_device;
        rp.remote_address = r.remote_address;
        plan.rails.push_back(std::move(rp));
    }
    return plan;
}

ProbeResult run_rdma_job(const Config& cfg, const Snapshot* snap, const ProbeJob& job, const SessionExchange& exchange,
                         Deadline deadline) {
    std::string why;
    std::optional<RdmaClientPlan> plan;
    if (snap)
        plan = rdma_plan(cfg, *snap, job, why);
    else
        why = "no snapshot yet";
    if (!plan) {
        ProbeResult r;
        r.kind = job.kind;
        r.reason = reason::device_not_found;
        r.detail = why;
        return r;
    }
    auto r = rdma_probe_run(*plan, exchange, deadline);
    // Soft-RoCE makes every figure a CPU figure: say so next to it.
    if (snap && !plan->rails.empty() && is_rxe(*snap, plan->rails[0].local.device)) r.info["soft_roce"] = "true";
    return r;
}

std::vector<std::pair<std::string, RdmaTxCounter>> rail_tx_counters(const Config& cfg, const Snapshot& snap,
                                                                    const PeerConfig& peer) {
    std::vector<std::pair<std::string, RdmaTxCounter>> out;
    for (const auto& r : peer.rails) {
        std::string why;
        auto c = find_local_rail_port(snap, r, why);
        if (!c) continue;
        auto counter = rdma_tx_counter(cfg.daemon.sysfs_root, c->device, static_cast<uint8_t>(c->port), c->gid_index);
        if (!counter.path.empty()) out.emplace_back(r.name, std::move(counter));
    }
    return out;
}

RdmaServeLimits rdma_serve_limits(const Config& cfg) {
    RdmaServeLimits l;
    const auto& bw = cfg.probes.rdma_bw;
    const auto& lat = cfg.probes.rdma_lat;
    l.max_bw_seconds = as_seconds(bw.duration);
    l.max_bw_iterations = 0;  // the daemon's probes are timed; counted runs are the CLI's
    l.max_lat_iterations = lat.count;
    l.max_message_size = std::max(bw.message_size, lat.size);
    l.max_qps_per_rail = bw.qps_per_rail;
    l.max_session_seconds = std::max(as_seconds(probe_timing(cfg.probes, ProbeKind::rdma_write_bw).budget),
                                     as_seconds(lat.timeout)) +
                            5;
    l.retry_cnt = kRetryCount;
    return l;
}

RdmaSessionAccept accept_rdma_session(const Config& cfg, const Snapshot& snap, const nlohmann::json& request,
                                      const std::atomic<bool>* cancel) {
    auto resolve = [&](const std::string& device, int gid_index, const std::string& address,
                       std::string& why) -> std::optional<RdmaEndpointOptions> {
        auto c = find_session_port(snap, device, gid_index, address, why);
        if (!c) return std::nullopt;
        RdmaEndpointOptions o;
        o.device = c->device;
        o.port = static_cast<uint8_t>(c->port);
        o.gid_index = c->gid_index;
        return o;
    };
    return rdma_session_accept(request, rdma_serve_limits(cfg), resolve, cancel);
}

}  // namespace rocewatch
