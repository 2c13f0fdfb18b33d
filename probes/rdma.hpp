// RDMA verbs probes: an RC endpoint per rail, and ib_write_bw / ib_write_lat style probes.
//
// Line rate on real hardware (2 x 100G, ~186 Gbps of raw verbs in the field notes) comes
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
#include <memory>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "probes/deadline.hpp"
#include "probes/rdma_info.hpp"
#include "probes/result.hpp"

namespace rocewatch {

// ibv_wc_status -> probes/errors.hpp reason ("" for IBV_WC_SUCCESS). errno values
// go through reason_from_errno, except the verbs-specific ones mapped by
// reason_from_verbs_errno. Lives here (not errors.cpp) to keep libibverbs out of
// the TCP-only parts.
const char* reason_from_wc_status(ibv_wc_status status);
const char* reason_from_verbs_errno(int err);

struct RdmaEndpointOptions {
    std::string device;           // verbs device name
    uint8_t port = 1;
    int gid_index = -1;           // -1: the first RoCE v2 GID holding an IPv4 address
    uint32_t buffer_size = 1u << 20;  // registered bytes (at least the message size)
    uint32_t max_send_wr = 256;   // >= tx depth
    uint32_t max_recv_wr = 16;
    int retry_cnt = 7;            // 0..7; use 6 on Soft-RoCE, which retries forever at 7
    int timeout = 14;             // local ACK timeout: 4.096 us * 2^14 = 67 ms
    int rnr_retry = 7;
};

// What a failed verbs step reports: a reason word and human detail.
struct RdmaStatus {
    std::string reason;  // "" = ok
    std::string detail;
    [[nodiscard]] bool ok() const { return reason.empty(); }
};

class RdmaEndpoint;
struct RdmaOpen {
    std::unique_ptr<RdmaEndpoint> endpoint;  // null on failure
    RdmaStatus status;
};

// Device context, PD, CQ, one RC QP and a registered buffer; all released in reverse
// order by the destructor. Not thread-safe: one thread drives an endpoint at a time.
class RdmaEndpoint {
 public:
    // Never throws: a missing device is {nullptr, "device_not_found"}, any other failed
    // verbs call its mapped reason with the call named in the detail.
    [[nodiscard]] static RdmaOpen open(const RdmaEndpointOptions& opt);
    ~RdmaEndpoint();
    RdmaEndpoint(const RdmaEndpoint&) = delete;
    RdmaEndpoint& operator=(const RdmaEndpoint&) = delete;

    // What the peer needs (send it over the control path).
    const RdmaEndpointInfo& info() const { return info_; }
    const RdmaEndpointOptions& options() const { return opt_; }
    // INIT -> RTR -> RTS towards `remote` with the agreed MTU, global routing to the
    // remote GID from our gid_index. Posts the receive the passive side of a bandwidth
    // probe waits on. "gid_mismatch"/"bad_target" from agree(), else
    // "qp_transition_failed" naming the state.
    [[nodiscard]] RdmaStatus connect(const RdmaEndpointInfo& remote);
    bool connected() const { return connected_; }
    const RdmaEndpointInfo& remote() const { return remote_; }
    int path_mtu() const { return path_mtu_; }

    // Data path helpers for the probes (no exceptions, errno-style returns).
    uint8_t* buffer() { return buf_; }
    ibv_qp* qp() { return qp_; }
    ibv_cq* cq() { return cq_; }
    uint32_t lkey() const;
    // Posts a zero-length receive (RDMA write with immediate lands there).
    [[nodiscard]] int post_recv();
    // Sleeps on the completion channel for one completion: 1 with *wc filled, 0 at the
    // deadline, -errno on failure. For passive sides, which must not steal the CPU.
    [[nodiscard]] int wait_cq(Deadline deadline, ibv_wc* wc);

 private:
    RdmaEndpoint() = default;
    RdmaEndpointOptions opt_;
    RdmaEndpointInfo info_;
    RdmaEndpointInfo remote_;
    bool connected_ = false;
    int path_mtu_ = 0;
    ibv_context* ctx_ = nullptr;
    ibv_comp_channel* channel_ = nullptr;
    unsigned unacked_events_ = 0;
    ibv_pd* pd_ = nullptr;
    ibv_cq* cq_ = nullptr;
    ibv_qp* qp_ = nullptr;
    ibv_mr* mr_ = nullptr;
    uint8_t* buf_ = nullptr;
    size_t buf_len_ = 0;
};

// Picks the GID index open() uses with gid_index = -1: the first "RoCE v2" entry whose
// GID is IPv4-mapped (::ffff:a.b.c.d), else the first RoCE v2 entry, else -1.
int choose_roce_v2_gid(ibv_context* ctx, uint8_t port);

struct RdmaBwSettings {
    uint32_t message_size = 64 * 1024;  // perftest -s 65536
    uint64_t iterations = 5000;         // WRs per QP (perftest -n); 0: run for `seconds`
    double seconds = 0;                 // when iterations == 0 (perftest -D)
    uint32_t tx_depth = 128;            // outstanding WRs per QP (perftest -t)
    uint32_t cq_mod = 100;              // one signalled WR every cq_mod (perftest -Q)
    int cpu = -1;                       // pin the polling thread (multi-rail), -1: don't
};

struct RdmaLatSettings {
    uint32_t message_size = 2;          // perftest ib_write_lat default
    uint64_t iterations = 1000;
};

// Active side of ib_write_bw over one connected endpoint: bytes / (last completion -
// first post). Ends with an RDMA write with immediate (imm = WRs posted) that the
// passive side's rdma_write_bw_serve waits for. Never throws.
ProbeResult rdma_write_bw(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaBwSettings& s,
                          Deadline deadline);
// Passive side: waits for the closing write with immediate; iterations = the peer's WRs.
ProbeResult rdma_write_bw_serve(RdmaEndpoint& ep, Deadline deadline);

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
// Passive side: waits for every endpoint's closing write with immediate.
ProbeResult rdma_multirail_bw_serve(std::vector<RdmaRail>& rails, Deadline deadline);

}  // namespace rocewatch
