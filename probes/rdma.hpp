// RDMA verbs probes: ib_write_bw / ib_write_lat style probes over RC endpoints
// (rdma_endpoint.hpp), one endpoint per QP per rail.
//
// Line rate on real hardware (2 x 100G, ~186 Gbps of raw verbs measured between two DGX Spark nodes) comes
// from doing what perftest does and not more: 64 KiB RDMA writes (one WR moves 16 packets
// of 4096 B MTU, so per-WR CPU cost is amortised), a deep send queue (128 outstanding WRs
// per QP) with selective signalling (one CQE per 100 WRs), inline off (the NIC DMAs the
// payload; inline only helps tiny messages), buffers aligned to 2 MiB and madvised for
// transparent huge pages (fewer IOTLB/MTT entries for the NIC), one polling thread per
// rail (optionally pinned to its own CPU, ideally on the NIC's NUMA node) that never
// sleeps, and qps_per_rail > 1 so that one QP's ACK round trips never limit a 100G port.
// The rails run at the same time from separate threads and separate device contexts, so
// nothing is shared between rails on the data path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probes/deadline.hpp"
#include "probes/rdma_endpoint.hpp"
#include "probes/rdma_errors.hpp"
#include "probes/rdma_info.hpp"
#include "probes/result.hpp"

namespace rocewatch {

struct RdmaBwSettings {
    uint32_t message_size = 64 * 1024;  // perftest -s 65536
    uint64_t iterations = 5000;         // WRs per QP (perftest -n); 0: run for `seconds`
    double seconds = 0;                 // when iterations == 0 (perftest -D)
    uint32_t tx_depth = 128;            // outstanding WRs per QP (perftest -t)
    uint32_t cq_mod = 100;              // one signalled WR every cq_mod (perftest -Q)
    int cpu = -1;                       // pin the polling thread (multi-rail), -1: don't
};

struct RdmaLatSettings {
    uint32_t message_size = 2;  // perftest ib_write_lat default
    uint64_t iterations = 1000;
};

// Active side of ib_write_bw over one connected endpoint: bytes / (last completion -
// first post). Ends with an RDMA write with immediate (imm = WRs posted) that the
// passive side's rdma_write_bw_serve waits for. Never throws.
ProbeResult rdma_write_bw(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaBwSettings& s, Deadline deadline);
// Passive side: waits for the closing write with immediate; iterations = the peer's WRs,
// bytes = WRs x message_size (the size the peer asked for).
ProbeResult rdma_write_bw_serve(RdmaEndpoint& ep, uint32_t message_size, Deadline deadline);

// Ping-pong as ib_write_lat: writes `message_size` bytes into the peer's buffer, whose
// last byte carries the iteration number, and spins on the last byte of its own buffer
// for the peer's write back. Latency = half round trip, perftest statistics.
ProbeResult rdma_write_lat(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaLatSettings& s,
                           Deadline deadline);
// Passive side: waits for each write, answers it.
ProbeResult rdma_write_lat_serve(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaLatSettings& s,
                                 Deadline deadline);

// One rail of a multi-rail run: its connected endpoints (qps_per_rail of them, each
// with its own context and CQ) and their remotes, in the same order.
struct RdmaRail {
    std::string name;
    std::vector<RdmaEndpoint*> endpoints;
    std::vector<RdmaEndpointInfo> remotes;
    int cpu = -1;  // pin this rail's polling thread
};

// All rails at once, one polling thread per rail driving all of its QPs. The result's
// figures are the sum over rails (bandwidth = all bytes / (last completion anywhere -
// first post anywhere)); bytes_per_stream holds the payload per rail in rail order and
// info["rail.<name>.bits_per_second"] each rail's own figure. bytes_per_rail is left
// empty: the caller fills it from the ports' counters around the run, because the
// benchmark alone cannot tell one rail at 100% from two at 50%. The daemon will use
// port_xmit_data deltas (x 4 bytes); Soft-RoCE has no port_xmit_data, so the VM test
// and rdma_probe_cli fall back to the netdev's tx_bytes.
ProbeResult rdma_multirail_bw(std::vector<RdmaRail>& rails, const RdmaBwSettings& s, Deadline deadline);
// Passive side: waits for every endpoint's closing write with immediate; bytes and
// bytes_per_stream (one a rail) as rdma_write_bw_serve's.
ProbeResult rdma_multirail_bw_serve(std::vector<RdmaRail>& rails, uint32_t message_size, Deadline deadline);

}  // namespace rocewatch
