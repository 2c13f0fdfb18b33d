// RDMA verbs probes: RC endpoints (RAII over libibverbs) and ib_write_bw / ib_write_lat
// methods, blackbox style: every probe returns a ProbeResult and never throws.
#include "probes/rdma.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <thread>

#include "probes/errors.hpp"
#include "probes/stats.hpp"

namespace rocewatch {

const char* reason_from_wc_status(ibv_wc_status status) {
    switch (status) {
        case IBV_WC_SUCCESS: return "";
        // The transport gave up: no ACK within timeout x retry_cnt (cable pulled, peer
        // gone, path broken), or the peer kept answering "receiver not ready".
        case IBV_WC_RETRY_EXC_ERR: return reason::peer_unreachable;
        case IBV_WC_RNR_RETRY_EXC_ERR: return reason::peer_busy;
        // Everything behind the failed WR is flushed; the first error is what counts.
        case IBV_WC_WR_FLUSH_ERR: return reason::peer_closed;
        // The peer refused our rkey/address/size or the request itself.
        case IBV_WC_REM_ACCESS_ERR:
        case IBV_WC_REM_INV_REQ_ERR:
        case IBV_WC_REM_OP_ERR:
        case IBV_WC_REM_INV_RD_REQ_ERR:
        case IBV_WC_REM_ABORT_ERR:
        case IBV_WC_INV_EECN_ERR:
        case IBV_WC_INV_EEC_STATE_ERR:
        case IBV_WC_BAD_RESP_ERR:
            return reason::protocol_error;
        case IBV_WC_LOC_LEN_ERR:
        case IBV_WC_LOC_QP_OP_ERR:
        case IBV_WC_LOC_EEC_OP_ERR:
        case IBV_WC_LOC_PROT_ERR:
        case IBV_WC_MW_BIND_ERR:
        case IBV_WC_LOC_ACCESS_ERR:
        case IBV_WC_LOC_RDD_VIOL_ERR:
        case IBV_WC_FATAL_ERR:
        case IBV_WC_RESP_TIMEOUT_ERR:
        case IBV_WC_GENERAL_ERR:
        case IBV_WC_TM_ERR:
        case IBV_WC_TM_RNDV_INCOMPLETE:
            return reason::internal_error;
    }
    return reason::internal_error;
}

const char* reason_from_verbs_errno(int err) {
    switch (err) {
        case ENODEV:
        case ENXIO:
        case ENOSYS:  // no uverbs in the kernel at all
            return reason::device_not_found;
        case ENOMEM:
        case ENOSPC:
            return reason::local_resources;
        case EINVAL:
            return reason::bad_target;
        default:
            return reason_from_errno(err);
    }
}

namespace {

using Mono = SteadyClock;

double seconds_between(Mono::time_point a, Mono::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

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
        int n = 0;
        errno = 0;
        ibv_device** list = ibv_get_device_list(&n);
        if (!list) {
            out.status = fail(reason::device_not_found,
                              errno_detail("ibv_get_device_list (looking for " + opt.device + ")", errno ? errno : ENODEV));
            return out;
        }
        for (int i = 0; i < n; ++i) {
            if (opt.device == ibv_get_device_name(list[i])) {
                ep->ctx_ = ibv_open_device(list[i]);
                if (!ep->ctx_) out.status = fail_errno("ibv_open_device " + opt.device, errno);
                break;
            }
        }
        ibv_free_device_list(list);
        if (!out.status.ok()) return out;
        if (!ep->ctx_) {
            out.status = fail(reason::device_not_found, "no RDMA device named '" + opt.device + "' (" +
                                                           std::to_string(n) + " devices present)");
            return out;
        }
        ibv_port_attr pa{};
        if (int err = ibv_query_port(ep->ctx_, opt.port, &pa)) {
            out.status = fail(reason::device_not_found, errno_detail(opt.device + " port " + std::to_string(opt.port), err));
            return out;
        }
        if (pa.state != IBV_PORT_ACTIVE) {
            out.status = fail(reason::peer_unreachable, opt.device + "/" + std::to_string(opt.port) +
                                                           " is not ACTIVE (" + ibv_port_state_str(pa.state) + ")");
            return out;
        }
        auto& info = ep->info_;
        info.device = opt.device;
        info.port = opt.port;
        info.active_mtu = mtu_bytes(pa.active_mtu);
        info.gid_index = opt.gid_index >= 0 ? opt.gid_index : choose_roce_v2_gid(ep->ctx_, opt.port);
        if (info.gid_index < 0) {
            out.status = fail(reason::gid_mismatch, opt.device + ": no RoCE v2 GID in the table");
            return out;
        }
        ibv_gid_entry ge{};
        if (int err = ibv_query_gid_ex(ep->ctx_, opt.port, static_cast<uint32_t>(info.gid_index), &ge, 0)) {
            out.status = fail(reason::gid_mismatch,
                              errno_detail(opt.device + " GID index " + std::to_string(info.gid_index), err));
            return out;
        }
        std::memcpy(info.gid.data(), ge.gid.raw, 16);
        info.gid_type = gid_type_name(ge.gid_type);

        // Registered memory: 2 MiB aligned so transparent huge pages can back it (fewer
        // translation entries for the NIC); never inline, the NIC DMAs the payload.
        constexpr size_t huge = 2u << 20;
        const size_t len = std::max<size_t>(opt.buffer_size, 4096);
        ep->buf_len_ = (len + huge - 1) / huge * huge;
        ep->buf_ = static_cast<uint8_t*>(std::aligned_alloc(huge, ep->buf_len_));
        if (!ep->buf_) {
            out.status = fail(reason::local_resources, "cannot allocate " + std::to_string(ep->buf_len_) + " bytes");
            return out;
        }
        (void)madvise(ep->buf_, ep->buf_len_, MADV_HUGEPAGE);
        std::memset(ep->buf_, 0, ep->buf_len_);

        ep->channel_ = ibv_create_comp_channel(ep->ctx_);
        if (!ep->channel_) {
            out.status = fail_errno("ibv_create_comp_channel on " + opt.device, errno);
            return out;
        }
        ep->pd_ = ibv_alloc_pd(ep->ctx_);
        if (!ep->pd_) {
            out.status = fail_errno("ibv_alloc_pd on " + opt.device, errno);
            return out;
        }
        ep->mr_ = ibv_reg_mr(ep->pd_, ep->buf_, ep->buf_len_,
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        if (!ep->mr_) {
            out.status = fail_errno("ibv_reg_mr " + std::to_string(ep->buf_len_) + " bytes on " + opt.device, errno);
            return out;
        }
        const int cqe = static_cast<int>(opt.max_send_wr + opt.max_recv_wr);
        ep->cq_ = ibv_create_cq(ep->ctx_, cqe, nullptr, ep->channel_, 0);
        if (!ep->cq_) {
            out.status = fail_errno("ibv_create_cq on " + opt.device, errno);
            return out;
        }
        ibv_qp_init_attr qa{};
        qa.send_cq = ep->cq_;
        qa.recv_cq = ep->cq_;
        qa.qp_type = IBV_QPT_RC;
        qa.sq_sig_all = 0;  // selective signalling
        qa.cap.max_send_wr = opt.max_send_wr;
        qa.cap.max_recv_wr = opt.max_recv_wr;
        qa.cap.max_send_sge = 1;
        qa.cap.max_recv_sge = 1;
        qa.cap.max_inline_data = 0;
        ep->qp_ = ibv_create_qp(ep->pd_, &qa);
        if (!ep->qp_) {
            out.status = fail_errno("ibv_create_qp on " + opt.device, errno);
            return out;
        }
        std::random_device rd;
        info.qpn = ep->qp_->qp_num;
        info.psn = rd() & 0xffffff;
        info.rkey = ep->mr_->rkey;
        info.addr = reinterpret_cast<uintptr_t>(ep->buf_);
        info.size = static_cast<uint32_t>(std::min<size_t>(ep->buf_len_, opt.buffer_size ? opt.buffer_size : ep->buf_len_));
        out.endpoint = std::move(ep);
    } catch (const std::exception& e) {
        out.endpoint.reset();
        out.status = fail(reason::internal_error, std::string("opening ") + opt.device + ": " + e.what());
    }
    return out;
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

// ------------------------------------------------------------------ probes

namespace {

ProbeResult start_result(ProbeKind kind, const std::string& rail) {
    ProbeResult r;
    r.kind = kind;
    r.rail = rail;
    r.started = std::chrono::system_clock::now();
    return r;
}

void finish(ProbeResult& r, Mono::time_point t0) {
    r.duration_seconds = seconds_between(t0, Mono::now());
    r.success = r.reason.empty();
}

std::string wc_detail(const RdmaEndpoint& ep, const ibv_wc& wc, const char* what) {
    return ep.info().device + ": " + what + " completed with " + ibv_wc_status_str(wc.status) + " (status " +
           std::to_string(static_cast<int>(wc.status)) + ", vendor_err " + std::to_string(wc.vendor_err) + ")";
}

// One QP of a bandwidth run.
struct QpRun {
    RdmaEndpoint* ep = nullptr;
    RdmaEndpointInfo remote;
    uint64_t posted = 0;
    uint64_t completed = 0;
    bool last_posted = false;   // no more data WRs
    bool closing = false;       // write-with-imm posted
    bool closed = false;        // and completed
    Mono::time_point first_post{};
    Mono::time_point last_completion{};
};

constexpr uint64_t kCloseWrId = ~0ull;

struct RailOutcome {
    std::string reason;
    std::string detail;
    uint64_t bytes = 0;
    uint64_t wrs = 0;
    Mono::time_point first_post{};
    Mono::time_point last_completion{};
};

void pin_to_cpu(int cpu) {
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<unsigned>(cpu), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int post_write_imm(QpRun& q) {
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = kCloseWrId;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.num_sge = 0;
    wr.imm_data = htonl(static_cast<uint32_t>(q.posted));
    wr.wr.rdma.remote_addr = q.remote.addr;
    wr.wr.rdma.rkey = q.remote.rkey;
    return ibv_post_send(q.ep->qp(), &wr, &bad);
}

// Drives every QP of one rail until all posted WRs completed (perftest's run_iter_bw),
// then closes each with a write with immediate. Stops early on `stop` (another rail
// failed) or at the deadline.
RailOutcome run_bw_rail(std::vector<QpRun>& qps, const RdmaBwSettings& s, Deadline deadline,
                        std::atomic<bool>& stop) {
    RailOutcome o;
    const uint32_t size = s.message_size;
    const uint32_t depth = std::max<uint32_t>(1, s.tx_depth);
    const uint32_t cq_mod = std::clamp<uint32_t>(s.cq_mod, 1, depth);
    const bool by_time = s.iterations == 0;
    Mono::time_point end_post{};
    bool started = false;
    ibv_wc wc[16];
    size_t done = 0;
    while (done < qps.size()) {
        const auto now = Mono::now();
        if (!started) {
            started = true;
            end_post = now + std::chrono::duration_cast<Mono::duration>(std::chrono::duration<double>(s.seconds));
        }
        if (now >= deadline.at) {
            o.reason = reason::timeout;
            o.detail = "deadline passed with WRs outstanding";
            break;
        }
        if (stop.load(std::memory_order_relaxed)) {
            o.reason = reason::internal_error;
            o.detail = "stopped: another rail failed";
            break;
        }
        for (auto& q : qps) {
            if (q.closed) continue;
            // Post while the send queue has room (at most tx_depth outstanding).
            while (!q.last_posted && q.posted - q.completed < depth) {
                const uint64_t n = q.posted;
                const bool last = by_time ? Mono::now() >= end_post : n + 1 >= s.iterations;
                const bool signal = last || (n + 1) % cq_mod == 0;
                const uint32_t slots_local = std::max<uint32_t>(1, q.ep->info().size / size);
                const uint32_t slots_remote = std::max<uint32_t>(1, q.remote.size / size);
                ibv_sge sge{};
                sge.addr = reinterpret_cast<uintptr_t>(q.ep->buffer()) + (n % slots_local) * uint64_t{size};
                sge.length = size;
                sge.lkey = q.ep->lkey();
                ibv_send_wr wr{};
                ibv_send_wr* bad = nullptr;
                wr.wr_id = n + 1;  // WRs completed once this one has
                wr.sg_list = &sge;
                wr.num_sge = 1;
                wr.opcode = IBV_WR_RDMA_WRITE;
                wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
                wr.wr.rdma.remote_addr = q.remote.addr + (n % slots_remote) * uint64_t{size};
                wr.wr.rdma.rkey = q.remote.rkey;
                if (n == 0) q.first_post = Mono::now();
                if (int err = ibv_post_send(q.ep->qp(), &wr, &bad)) {
                    o.reason = reason_from_verbs_errno(err);
                    o.detail = errno_detail(q.ep->info().device + ": ibv_post_send", err);
                    break;
                }
                q.posted = n + 1;
                if (last) q.last_posted = true;
            }
            if (o.reason.empty() && q.last_posted && q.completed == q.posted && !q.closing) {
                if (int err = post_write_imm(q)) {
                    o.reason = reason_from_verbs_errno(err);
                    o.detail = errno_detail(q.ep->info().device + ": ibv_post_send (closing write)", err);
                    break;
                }
                q.closing = true;
            }
            if (!o.reason.empty()) break;
            const int got = ibv_poll_cq(q.ep->cq(), 16, wc);
            if (got < 0) {
                o.reason = reason::internal_error;
                o.detail = q.ep->info().device + ": ibv_poll_cq failed";
                break;
            }
            const auto t = got > 0 ? Mono::now() : Mono::time_point{};
            for (int i = 0; i < got; ++i) {
                if (wc[i].status != IBV_WC_SUCCESS) {
                    if (o.reason.empty()) {
                        o.reason = reason_from_wc_status(wc[i].status);
                        o.detail = wc_detail(*q.ep, wc[i], "RDMA write");
                    }
                    break;
                }
                if (wc[i].wr_id == kCloseWrId) {
                    q.closed = true;
                    ++done;
                } else {
                    q.completed = wc[i].wr_id;
                    q.last_completion = t;
                }
            }
            if (!o.reason.empty()) break;
        }
        if (!o.reason.empty()) {
            stop = true;  // the other rails end too: the run has failed
            break;
        }
    }
    // Payload that completed, failed runs included (what reached the peer for sure).
    bool any = false;
    for (const auto& q : qps) {
        o.bytes += q.completed * uint64_t{size};
        o.wrs += q.completed;
        if (q.posted == 0) continue;
        if (!any || q.first_post < o.first_post) o.first_post = q.first_post;
        if (!any || q.last_completion > o.last_completion) o.last_completion = q.last_completion;
        any = true;
    }
    return o;
}

ProbeResult bw_core(ProbeKind kind, std::vector<RdmaRail>& rails, const RdmaBwSettings& s, Deadline deadline) {
    const auto t0 = Mono::now();
    ProbeResult r = start_result(kind, rails.size() == 1 ? rails[0].name : "");
    try {
        std::vector<std::vector<QpRun>> runs(rails.size());
        for (size_t i = 0; i < rails.size(); ++i) {
            auto& rail = rails[i];
            if (rail.endpoints.empty() || rail.endpoints.size() != rail.remotes.size()) {
                r.reason = reason::bad_target;
                r.detail = "rail " + rail.name + ": endpoints and remotes do not pair up";
                finish(r, t0);
                return r;
            }
            for (size_t k = 0; k < rail.endpoints.size(); ++k) {
                auto* ep = rail.endpoints[k];
                if (!ep || !ep->connected()) {
                    r.reason = reason::qp_transition_failed;
                    r.detail = "rail " + rail.name + ": endpoint not connected";
                    finish(r, t0);
                    return r;
                }
                if (s.message_size == 0 || ep->info().size < s.message_size || rail.remotes[k].size < s.message_size) {
                    r.reason = reason::bad_target;
                    r.detail = "message size " + std::to_string(s.message_size) + " larger than a buffer (" +
                               std::to_string(ep->info().size) + " local, " + std::to_string(rail.remotes[k].size) +
                               " remote)";
                    finish(r, t0);
                    return r;
                }
                if (ep->options().max_send_wr < s.tx_depth + 1) {
                    r.reason = reason::bad_target;
                    r.detail = "tx depth " + std::to_string(s.tx_depth) + " needs max_send_wr > it";
                    finish(r, t0);
                    return r;
                }
                runs[i].push_back(QpRun{ep, rail.remotes[k]});
            }
        }
        std::atomic<bool> stop{false};
        std::vector<RailOutcome> outs(rails.size());
        // One rail unpinned runs on the caller's thread; pinning happens on a thread of
        // our own so the caller's affinity is never changed.
        if (rails.size() == 1 && rails[0].cpu < 0) {
            outs[0] = run_bw_rail(runs[0], s, deadline, stop);
        } else {
            std::vector<std::thread> threads;
            for (size_t i = 0; i < rails.size(); ++i)
                threads.emplace_back([&, i] {
                    pin_to_cpu(rails[i].cpu);
                    try {
                        outs[i] = run_bw_rail(runs[i], s, deadline, stop);
                    } catch (const std::exception& e) {
                        outs[i].reason = reason::internal_error;
                        outs[i].detail = e.what();
                        stop = true;
                    }
                });
            for (auto& t : threads) t.join();
        }
        Mono::time_point first{}, last{};
        bool any = false;
        for (size_t i = 0; i < rails.size(); ++i) {
            const auto& o = outs[i];
            // The first failure is the cause; "stopped: another rail failed" is its echo.
            if (!o.reason.empty() && (r.reason.empty() || r.detail.starts_with("stopped"))) {
                r.reason = o.reason;
                r.detail = (rails.size() > 1 ? "rail " + rails[i].name + ": " : std::string()) + o.detail;
            }
            r.bytes += o.bytes;
            r.iterations += o.wrs;
            r.bytes_per_stream.push_back(o.bytes);
            r.streams += static_cast<uint32_t>(rails[i].endpoints.size());
            if (o.wrs) {
                const double secs = seconds_between(o.first_post, o.last_completion);
                if (rails.size() > 1)
                    r.info["rail." + rails[i].name + ".bits_per_second"] = std::to_string(bandwidth_bps(o.bytes, secs));
                if (!any || o.first_post < first) first = o.first_post;
                if (!any || o.last_completion > last) last = o.last_completion;
                any = true;
            }
        }
        const auto& ep0 = *rails[0].endpoints[0];
        r.info["device"] = ep0.info().device;
        r.info["remote_device"] = ep0.remote().device;
        r.info["gid_index"] = std::to_string(ep0.info().gid_index);
        r.info["path_mtu"] = std::to_string(ep0.path_mtu());
        r.info["message_size"] = std::to_string(s.message_size);
        if (any && r.reason.empty()) {
            const double secs = seconds_between(first, last);
            r.info["transfer_seconds"] = std::to_string(secs);
            if (secs > 0) r.bandwidth_bits_per_second = bandwidth_bps(r.bytes, secs);
            if (r.bytes == 0) {
                r.reason = reason::no_data;
                r.detail = "no write completed";
            }
        } else if (r.reason.empty()) {
            r.reason = reason::no_data;
            r.detail = "no write completed";
        }
    } catch (const std::exception& e) {
        r.reason = reason::internal_error;
        r.detail = e.what();
    }
    finish(r, t0);
    return r;
}

// Waits for the closing write with immediate on one endpoint; returns the WR count in it.
RdmaStatus wait_close(RdmaEndpoint& ep, Deadline deadline, uint64_t& wrs) {
    for (;;) {
        ibv_wc wc{};
        const int n = ep.wait_cq(deadline, &wc);
        if (n < 0) return RdmaStatus{reason::internal_error, errno_detail(ep.info().device + ": waiting on the CQ", -n)};
        if (n == 0) return RdmaStatus{reason::timeout, ep.info().device + ": the peer's closing write did not arrive"};
        if (wc.status != IBV_WC_SUCCESS)
            return RdmaStatus{reason_from_wc_status(wc.status), wc_detail(ep, wc, "receive")};
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            wrs = ntohl(wc.imm_data);
            return {};
        }
    }
}

// Spins on the last byte of `p` until it reads `want`, reaping send completions on the
// way (errors end the wait). perftest busy-polls too: the figure is the wire, not a wakeup.
RdmaStatus spin_for(RdmaEndpoint& ep, volatile uint8_t* p, uint8_t want, Deadline deadline, uint32_t& outstanding) {
    uint32_t k = 0;
    for (;;) {
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == want) return {};
        if (outstanding) {
            ibv_wc wc{};
            const int n = ibv_poll_cq(ep.cq(), 1, &wc);
            if (n > 0) {
                if (wc.status != IBV_WC_SUCCESS)
                    return RdmaStatus{reason_from_wc_status(wc.status), wc_detail(ep, wc, "RDMA write")};
                if (wc.opcode == IBV_WC_RDMA_WRITE) --outstanding;
            }
        }
        if ((++k & 0xff) == 0 && deadline.expired())
            return RdmaStatus{reason::timeout, ep.info().device + ": no answer from the peer before the deadline"};
    }
}

RdmaStatus post_lat_write(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, uint32_t size, uint8_t value,
                          uint32_t& outstanding, Deadline deadline) {
    // Keep the send queue from filling when completions lag.
    while (outstanding + 2 >= ep.options().max_send_wr) {
        ibv_wc wc{};
        const int n = ibv_poll_cq(ep.cq(), 1, &wc);
        if (n > 0) {
            if (wc.status != IBV_WC_SUCCESS)
                return RdmaStatus{reason_from_wc_status(wc.status), wc_detail(ep, wc, "RDMA write")};
            --outstanding;
        }
        if (deadline.expired()) return RdmaStatus{reason::timeout, ep.info().device + ": send queue stuck"};
    }
    uint8_t* src = ep.buffer() + ep.info().size / 2;  // source half; the peer writes the first half
    src[size - 1] = value;
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(src);
    sge.length = size;
    sge.lkey = ep.lkey();
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = value;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote.addr;
    wr.wr.rdma.rkey = remote.rkey;
    if (int err = ibv_post_send(ep.qp(), &wr, &bad))
        return RdmaStatus{reason_from_verbs_errno(err), errno_detail(ep.info().device + ": ibv_post_send", err)};
    ++outstanding;
    return {};
}

ProbeResult lat_core(bool active, RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaLatSettings& s,
                     Deadline deadline) {
    const auto t0 = Mono::now();
    ProbeResult r = start_result(ProbeKind::rdma_write_lat, "");
    try {
        r.streams = 1;
        r.info["device"] = ep.info().device;
        r.info["remote_device"] = remote.device;
        r.info["gid_index"] = std::to_string(ep.info().gid_index);
        r.info["message_size"] = std::to_string(s.message_size);
        if (!ep.connected()) {
            r.reason = reason::qp_transition_failed;
            r.detail = ep.info().device + ": endpoint not connected";
        } else if (s.message_size == 0 || s.message_size > ep.info().size / 2 || s.message_size > remote.size / 2) {
            r.reason = reason::bad_target;
            r.detail = "message size " + std::to_string(s.message_size) + " larger than half a buffer";
        } else {
            r.info["path_mtu"] = std::to_string(ep.path_mtu());
            volatile uint8_t* in = ep.buffer() + s.message_size - 1;
            uint32_t outstanding = 0;
            std::vector<double> rtts;
            if (active) rtts.reserve(s.iterations);
            RdmaStatus st;
            for (uint64_t i = 1; i <= s.iterations && st.ok(); ++i) {
                const auto v = static_cast<uint8_t>(i);
                if (active) {
                    const auto ts = Mono::now();
                    st = post_lat_write(ep, remote, s.message_size, v, outstanding, deadline);
                    if (st.ok()) st = spin_for(ep, in, v, deadline, outstanding);
                    if (st.ok()) rtts.push_back(seconds_between(ts, Mono::now()));
                } else {
                    st = spin_for(ep, in, v, deadline, outstanding);
                    if (st.ok()) st = post_lat_write(ep, remote, s.message_size, v, outstanding, deadline);
                }
                if (st.ok()) r.iterations = i;
            }
            // Reap the last completions so a failed final write is not missed.
            while (st.ok() && outstanding) {
                ibv_wc wc{};
                const int n = ibv_poll_cq(ep.cq(), 1, &wc);
                if (n > 0) {
                    if (wc.status != IBV_WC_SUCCESS) st = RdmaStatus{reason_from_wc_status(wc.status), wc_detail(ep, wc, "RDMA write")};
                    --outstanding;
                } else if (deadline.expired()) {
                    st = RdmaStatus{reason::timeout, ep.info().device + ": last write not completed"};
                }
            }
            r.reason = st.reason;
            r.detail = st.detail;
            r.bytes = r.iterations * s.message_size;
            if (active && !rtts.empty()) r.latency = latency_stats(half_round_trips(std::move(rtts)));
        }
    } catch (const std::exception& e) {
        r.reason = reason::internal_error;
        r.detail = e.what();
    }
    finish(r, t0);
    return r;
}

}  // namespace

ProbeResult rdma_write_bw(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaBwSettings& s,
                          Deadline deadline) {
    std::vector<RdmaRail> rails(1);
    rails[0].endpoints = {&ep};
    rails[0].remotes = {remote};
    rails[0].cpu = s.cpu;
    return bw_core(ProbeKind::rdma_write_bw, rails, s, deadline);
}

ProbeResult rdma_multirail_bw(std::vector<RdmaRail>& rails, const RdmaBwSettings& s, Deadline deadline) {
    if (rails.empty()) {
        ProbeResult r = start_result(ProbeKind::rdma_multirail_bw, "");
        r.reason = reason::bad_target;
        r.detail = "no rails";
        r.success = false;
        return r;
    }
    auto r = bw_core(ProbeKind::rdma_multirail_bw, rails, s, deadline);
    r.rail.clear();
    return r;
}

ProbeResult rdma_multirail_bw_serve(std::vector<RdmaRail>& rails, Deadline deadline) {
    const auto t0 = Mono::now();
    ProbeResult r = start_result(ProbeKind::rdma_multirail_bw, "");
    try {
        for (auto& rail : rails) {
            uint64_t rail_wrs = 0;
            for (auto* ep : rail.endpoints) {
                uint64_t wrs = 0;
                auto st = ep && ep->connected() ? wait_close(*ep, deadline, wrs)
                                                : RdmaStatus{reason::qp_transition_failed, "endpoint not connected"};
                if (!st.ok()) {
                    r.reason = st.reason;
                    r.detail = (rails.size() > 1 ? "rail " + rail.name + ": " : std::string()) + st.detail;
                    break;
                }
                rail_wrs += wrs;
                ++r.streams;
            }
            r.iterations += rail_wrs;
            r.bytes_per_stream.push_back(rail_wrs);
            if (!r.reason.empty()) break;
        }
        if (rails.size() == 1) r.rail = rails[0].name;
    } catch (const std::exception& e) {
        r.reason = reason::internal_error;
        r.detail = e.what();
    }
    finish(r, t0);
    return r;
}

ProbeResult rdma_write_bw_serve(RdmaEndpoint& ep, Deadline deadline) {
    std::vector<RdmaRail> rails(1);
    rails[0].endpoints = {&ep};
    rails[0].remotes = {ep.remote()};
    auto r = rdma_multirail_bw_serve(rails, deadline);
    r.kind = ProbeKind::rdma_write_bw;
    r.bytes_per_stream.clear();
    r.info["device"] = ep.info().device;
    return r;
}

ProbeResult rdma_write_lat(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaLatSettings& s,
                           Deadline deadline) {
    return lat_core(true, ep, remote, s, deadline);
}

ProbeResult rdma_write_lat_serve(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaLatSettings& s,
                                 Deadline deadline) {
    return lat_core(false, ep, remote, s, deadline);
}

}  // namespace rocewatch
