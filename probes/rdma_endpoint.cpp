// An RC endpoint over libibverbs, opened step by step and released in reverse order.
#include "probes/rdma_endpoint.hpp"

#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>

#include "probes/errors.hpp"
#include "probes/rdma_errors.hpp"

namespace rocewatch {

namespace {

int mtu_bytes(ibv_mtu m) {
    switch (m) {
        case IBV_MTU_256: return 256;
        case IBV_MTU_512: return 512;
        case IBV_MTU_1024: return 1024;
        case IBV_MTU_2048: return 2048;
        case IBV_MTU_4096: return 4096;
    }
    return 0;
}

ibv_mtu mtu_enum(int bytes) {
    switch (bytes) {
        case 256: return IBV_MTU_256;
        case 512: return IBV_MTU_512;
        case 1024: return IBV_MTU_1024;
        case 2048: return IBV_MTU_2048;
        default: return IBV_MTU_4096;
    }
}

const char* gid_type_name(uint32_t t) {
    switch (t) {
        case IBV_GID_TYPE_IB: return "IB";
        case IBV_GID_TYPE_ROCE_V1: return "IB/RoCE v1";
        case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
        default: return "";
    }
}

bool ipv4_mapped(const uint8_t* g) {
    for (int i = 0; i < 10; ++i)
        if (g[i]) return false;
    return g[10] == 0xff && g[11] == 0xff;
}

RdmaStatus fail(const char* reason, std::string detail) { return RdmaStatus{reason, std::move(detail)}; }
RdmaStatus fail_errno(const std::string& what, int err) {
    if (err == 0) err = EIO;
    return RdmaStatus{reason_from_verbs_errno(err), errno_detail(what, err)};
}

}  // namespace

int choose_roce_v2_gid(ibv_context* ctx, uint8_t port) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, port, &pa)) return -1;
    int first_v2 = -1;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
        ibv_gid_entry e{};
        if (ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(i), &e, 0)) continue;  // empty slot
        if (e.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
        if (ipv4_mapped(e.gid.raw)) return i;
        if (first_v2 < 0) first_v2 = i;
    }
    return first_v2;
}

RdmaOpen RdmaEndpoint::open(const RdmaEndpointOptions& opt) {
    RdmaOpen out;
    try {
        std::unique_ptr<RdmaEndpoint> ep(new RdmaEndpoint());
        ep->opt_ = opt;
        for (auto step : {&RdmaEndpoint::open_device, &RdmaEndpoint::read_port_and_gid, &RdmaEndpoint::alloc_buffer,
                          &RdmaEndpoint::create_qp}) {
            out.status = (ep.get()->*step)();
            if (!out.status.ok()) return out;
        }
        out.endpoint = std::move(ep);
    } catch (const std::exception& e) {
        out.endpoint.reset();
        out.status = fail(reason::internal_error, std::string("opening ") + opt.device + ": " + e.what());
    }
    return out;
}

RdmaStatus RdmaEndpoint::open_device() {
    int n = 0;
    errno = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list)
        return fail(reason::device_not_found,
                    errno_detail("ibv_get_device_list (looking for " + opt_.device + ")", errno ? errno : ENODEV));
    RdmaStatus st;
    for (int i = 0; i < n; ++i) {
        if (opt_.device == ibv_get_device_name(list[i])) {
            ctx_ = ibv_open_device(list[i]);
            if (!ctx_) st = fail_errno("ibv_open_device " + opt_.device, errno);
            break;
        }
    }
    ibv_free_device_list(list);
    if (!st.ok()) return st;
    if (!ctx_)
        return fail(reason::device_not_found,
                    "no RDMA device named '" + opt_.device + "' (" + std::to_string(n) + " devices present)");
    return {};
}

RdmaStatus RdmaEndpoint::read_port_and_gid() {
    const auto& opt = opt_;
    ibv_port_attr pa{};
    if (int err = ibv_query_port(ctx_, opt.port, &pa))
        return fail(reason::device_not_found, errno_detail(opt.device + " port " + std::to_string(opt.port), err));
    if (pa.state != IBV_PORT_ACTIVE)
        return fail(reason::local_port_down, opt.device + "/" + std::to_string(opt.port) + " is not ACTIVE (" +
                                                 ibv_port_state_str(pa.state) + ")");
    auto& info = info_;
    info.device = opt.device;
    info.port = opt.port;
    info.active_mtu = mtu_bytes(pa.active_mtu);
    info.gid_index = opt.gid_index >= 0 ? opt.gid_index : choose_roce_v2_gid(ctx_, opt.port);
    if (info.gid_index < 0) return fail(reason::gid_mismatch, opt.device + ": no RoCE v2 GID in the table");
    ibv_gid_entry ge{};
    if (int err = ibv_query_gid_ex(ctx_, opt.port, static_cast<uint32_t>(info.gid_index), &ge, 0))
        return fail(reason::gid_mismatch,
                    errno_detail(opt.device + " GID index " + std::to_string(info.gid_index), err));
    std::memcpy(info.gid.data(), ge.gid.raw, 16);
    info.gid_type = gid_type_name(ge.gid_type);
    return {};
}

// Registered memory: 2 MiB aligned so transparent huge pages can back it (fewer
// translation entries for the NIC); never inline, the NIC DMAs the payload.
RdmaStatus RdmaEndpoint::alloc_buffer() {
    constexpr size_t huge = 2u << 20;
    const size_t len = std::max<size_t>(opt_.buffer_size, 4096);
    buf_len_ = (len + huge - 1) / huge * huge;
    buf_ = static_cast<uint8_t*>(std::aligned_alloc(huge, buf_len_));
    if (!buf_) return fail(reason::local_resources, "cannot allocate " + std::to_string(buf_len_) + " bytes");
    (void)madvise(buf_, buf_len_, MADV_HUGEPAGE);
    std::memset(buf_, 0, buf_len_);
    return {};
}

RdmaStatus RdmaEndpoint::create_qp() {
    const auto& opt = opt_;
    channel_ = ibv_create_comp_channel(ctx_);
    if (!channel_) return fail_errno("ibv_create_comp_channel on " + opt.device, errno);
    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) return fail_errno("ibv_alloc_pd on " + opt.device, errno);
    mr_ = ibv_reg_mr(pd_, buf_, buf_len_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!mr_) return fail_errno("ibv_reg_mr " + std::to_string(buf_len_) + " bytes on " + opt.device, errno);
    const int cqe = static_cast<int>(opt.max_send_wr + opt.max_recv_wr);
    cq_ = ibv_create_cq(ctx_, cqe, nullptr, channel_, 0);
    if (!cq_) return fail_errno("ibv_create_cq on " + opt.device, errno);
    ibv_qp_init_attr qa{};
    qa.send_cq = cq_;
    qa.recv_cq = cq_;
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;  // selective signalling
    qa.cap.max_send_wr = opt.max_send_wr;
    qa.cap.max_recv_wr = opt.max_recv_wr;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = 0;
    qp_ = ibv_create_qp(pd_, &qa);
    if (!qp_) return fail_errno("ibv_create_qp on " + opt.device, errno);
    std::random_device rd;
    info_.qpn = qp_->qp_num;
    info_.psn = rd() & 0xffffff;
    info_.rkey = mr_->rkey;
    info_.addr = reinterpret_cast<uintptr_t>(buf_);
    info_.size = static_cast<uint32_t>(std::min<size_t>(buf_len_, opt.buffer_size ? opt.buffer_size : buf_len_));
    return {};
}

RdmaEndpoint::~RdmaEndpoint() {
    if (qp_) ibv_destroy_qp(qp_);
    if (cq_) {
        if (unacked_events_) ibv_ack_cq_events(cq_, unacked_events_);
        ibv_destroy_cq(cq_);
    }
    if (mr_) ibv_dereg_mr(mr_);
    if (pd_) ibv_dealloc_pd(pd_);
    if (channel_) ibv_destroy_comp_channel(channel_);
    if (ctx_) ibv_close_device(ctx_);
    std::free(buf_);
}

uint32_t RdmaEndpoint::lkey() const { return mr_->lkey; }

int RdmaEndpoint::post_recv() {
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = 0;
    wr.num_sge = 0;  // an RDMA write with immediate consumes it without payload
    return ibv_post_recv(qp_, &wr, &bad);
}

RdmaStatus RdmaEndpoint::connect(const RdmaEndpointInfo& remote) {
    const auto a = agree(info_, remote);
    if (!a.ok()) return fail(a.reason.c_str(), a.detail);
    if (connected_) return fail(reason::qp_transition_failed, "already connected");

    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.pkey_index = 0;
    at.port_num = opt_.port;
    at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int err = ibv_modify_qp(qp_, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return RdmaStatus{reason::qp_transition_failed, errno_detail(info_.device + ": QP to INIT", err)};
    // The receives the passive side's closing "write with immediate" lands in.
    for (uint32_t i = 0; i < std::min<uint32_t>(opt_.max_recv_wr, 4); ++i)
        if (int err = post_recv()) return fail_errno(info_.device + ": ibv_post_recv", err);

    at = ibv_qp_attr{};
    at.qp_state = IBV_QPS_RTR;
    at.path_mtu = mtu_enum(a.mtu);
    at.dest_qp_num = remote.qpn;
    at.rq_psn = remote.psn;
    at.max_dest_rd_atomic = 1;
    at.min_rnr_timer = 12;
    at.ah_attr.is_global = 1;
    std::memcpy(at.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    at.ah_attr.grh.sgid_index = static_cast<uint8_t>(info_.gid_index);
    at.ah_attr.grh.hop_limit = 64;
    at.ah_attr.dlid = 0;
    at.ah_attr.sl = 0;
    at.ah_attr.src_path_bits = 0;
    at.ah_attr.port_num = opt_.port;
    if (int err = ibv_modify_qp(qp_, &at,
                                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return RdmaStatus{reason::qp_transition_failed,
                          errno_detail(info_.device + ": QP to RTR towards " + remote.device + " qpn " +
                                           std::to_string(remote.qpn) + " gid " + gid_to_string(remote.gid),
                                       err)};

    at = ibv_qp_attr{};
    at.qp_state = IBV_QPS_RTS;
    at.timeout = static_cast<uint8_t>(opt_.timeout);
    at.retry_cnt = static_cast<uint8_t>(std::clamp(opt_.retry_cnt, 0, 7));
    at.rnr_retry = static_cast<uint8_t>(std::clamp(opt_.rnr_retry, 0, 7));
    at.sq_psn = info_.psn;
    at.max_rd_atomic = 1;
    if (int err = ibv_modify_qp(qp_, &at,
                                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                    IBV_QP_MAX_QP_RD_ATOMIC))
        return RdmaStatus{reason::qp_transition_failed, errno_detail(info_.device + ": QP to RTS", err)};
    remote_ = remote;
    path_mtu_ = a.mtu;
    connected_ = true;
    return {};
}

int RdmaEndpoint::wait_cq(Deadline deadline, ibv_wc* wc) {
    for (;;) {
        int n = ibv_poll_cq(cq_, 1, wc);
        if (n != 0) return n;
        if (int err = ibv_req_notify_cq(cq_, 0)) return -err;
        n = ibv_poll_cq(cq_, 1, wc);  // what arrived before the arm
        if (n != 0) return n;
        const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
        if (left_ms <= 0) return 0;
        pollfd p{channel_->fd, POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left_ms, 100)));
        if (r < 0 && errno != EINTR) return -errno;
        if (r > 0) {
            ibv_cq* cq = nullptr;
            void* ctx = nullptr;
            if (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ++unacked_events_;
        }
        if (deadline.expired()) {
            n = ibv_poll_cq(cq_, 1, wc);
            return n;
        }
    }
}

}  // namespace rocewatch
