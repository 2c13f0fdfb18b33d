// An RDMA probe session between two nodes, independent of what carries its two JSON
// messages: the daemon sends them over its HTTP control port (POST /api/v1/peer/rdma),
// rdma_probe_cli over a plain TCP line.
//
//   active side                                   passive side
//   open endpoints (one per QP per rail)
//   request {kind, settings, rails: [{name,       rdma_session_accept: caps the request by
//     device, address, endpoints: [info]}]}  -->    its own limits, opens and connects an
//                                                   endpoint per remote one, and answers
//                                             <--   {rails: [{name, endpoints: [info]}]}
//   connect each endpoint to its remote            serve(): waits for the closing writes
//   read tx counters, run, read them again           (bw) or answers each ping (lat)
//
// The passive side's QPs are at RTR before it answers, so the active side may post at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/deadline.hpp"
#include "probes/rdma.hpp"
#include "probes/result.hpp"
#include "probes/session.hpp"

namespace rocewatch {

// Where to read the bytes a rail's port has sent: port_xmit_data (4-byte words) where the
// driver has it, else the tx_bytes of the netdev the probe's GID sits on (Soft-RoCE has no
// counters/ directory). An empty path: no counter found.
struct RdmaTxCounter {
    std::string path;
    uint64_t scale = 1;
    std::string source;  // "port_xmit_data", "railA tx_bytes"
};
RdmaTxCounter rdma_tx_counter(const std::string& sysfs_root, const std::string& device, uint8_t port, int gid_index);
std::optional<uint64_t> read_tx_counter(const RdmaTxCounter& c);

// One rail of the active side's plan.
struct RdmaRailPlan {
    std::string name;
    RdmaEndpointOptions local;   // device, port, gid_index (-1: chosen from the GID table)
    std::string remote_device;   // the peer's device; "" lets the peer find it by address
    int remote_gid_index = -1;   // -1: the peer chooses
    std::string remote_address;  // the peer's address on this rail
};

struct RdmaClientPlan {
    ProbeKind kind = ProbeKind::rdma_write_bw;  // rdma_write_bw, rdma_write_lat, rdma_multirail_bw
    std::vector<RdmaRailPlan> rails;            // exactly one unless rdma_multirail_bw
    uint32_t qps_per_rail = 1;                  // bandwidth kinds; latency uses one QP
    RdmaBwSettings bw;
    RdmaLatSettings lat;
    std::string sysfs_root = "/sys";  // for the per-rail tx counters
};

// Runs the active side. bytes_per_rail is filled from each rail's tx counter around the
// data phase (rdma_multirail_bw; per-rail runs too, for the record). Never throws.
ProbeResult rdma_probe_run(const RdmaClientPlan& plan, const SessionExchange& exchange, Deadline deadline);

// What a passive side grants, whatever the request asks: its own configured budget.
struct RdmaServeLimits {
    double max_bw_seconds = 10;              // longest timed bandwidth run
    uint64_t max_bw_iterations = 1'000'000;  // WRs per QP of a counted run
    uint64_t max_lat_iterations = 100'000;
    uint32_t max_message_size = 1u << 20;
    uint32_t max_qps_per_rail = 8;
    size_t max_rails = 8;
    double max_session_seconds = 60;  // the passive side gives up after this, always
    int retry_cnt = 7;                // 6 on Soft-RoCE (it retries forever at 7)
};

// Finds the local endpoint for a rail the peer asked for, by device name (may be "") and
// the address the peer dialled; nullopt with `why` when there is none.
using RdmaDeviceResolver = std::function<std::optional<RdmaEndpointOptions>(
    const std::string& device, int gid_index, const std::string& address, std::string& why)>;

struct RdmaSessionAccept {
    // {"rails": [...]} when accepted; {"reason": ..., "detail": ...} when not.
    nlohmann::json reply;
    // Runs the passive side to its end or deadline (owns the endpoints); empty when refused.
    std::function<ProbeResult()> serve;
    [[nodiscard]] bool ok() const { return static_cast<bool>(serve); }
};

// Checks the request against the limits, opens and connects the passive endpoints. Never
// throws: a malformed request is refused with "protocol_error", one over budget with
// "bad_target" naming the limit, device and QP failures with their own reasons. Setting
// *cancel ends serve() early (the peer ended the session).
RdmaSessionAccept rdma_session_accept(const nlohmann::json& request, const RdmaServeLimits& limits,
                                      const RdmaDeviceResolver& resolve, const std::atomic<bool>* cancel = nullptr);

// The request rdma_probe_run sends (exposed for tests of the passive side's checks).
nlohmann::json rdma_session_request(const RdmaClientPlan& plan, const std::vector<nlohmann::json>& rail_endpoints,
                                    double timeout_seconds);

}  // namespace rocewatch
