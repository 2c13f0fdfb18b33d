// An RC endpoint over libibverbs: device context, PD, CQ, one QP and a registered
// buffer, opened and connected with every failure mapped to a reason; RAII throughout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <infiniband/verbs.h>

#include "probes/deadline.hpp"
#include "probes/rdma_info.hpp"

namespace rocewatch {

struct RdmaEndpointOptions {
    std::string device;  // verbs device name
    uint8_t port = 1;
    int gid_index = -1;               // -1: the first RoCE v2 GID holding an IPv4 address
    uint32_t buffer_size = 1u << 20;  // registered bytes (at least the message size)
    uint32_t max_send_wr = 256;       // >= tx depth
    uint32_t max_recv_wr = 16;
    int retry_cnt = 7;  // 0..7; use 6 on Soft-RoCE, which retries forever at 7
    int timeout = 14;   // local ACK timeout: 4.096 us * 2^14 = 67 ms
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
    // The steps of open(), in order; each says why it failed.
    RdmaStatus open_device();
    RdmaStatus read_port_and_gid();
    RdmaStatus alloc_buffer();
    RdmaStatus create_qp();

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

}  // namespace rocewatch
