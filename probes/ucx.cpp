// UCX probes: ucp endpoints (RAII over libucp) and ucp_put_bw / ucp_put_lat methods,
// blackbox style: every probe returns a ProbeResult and never throws.
#include "probes/ucx.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <random>

#include <ucm/api/ucm.h>

#include "probes/errors.hpp"
#include "probes/stats.hpp"

namespace rocewatch {

const char* reason_from_ucs_status(ucs_status_t status) {
    switch (status) {
        case UCS_OK:
        case UCS_INPROGRESS:
            return "";
        // The transport could not reach the peer, or gave up on it (keepalive).
        case UCS_ERR_UNREACHABLE:
        case UCS_ERR_SOME_CONNECTS_FAILED:
        case UCS_ERR_ENDPOINT_TIMEOUT:
            return reason::peer_unreachable;
        case UCS_ERR_REJECTED:
            return reason::connection_refused;
        // The peer went away mid-probe: its sockets reset, our requests were flushed.
        case UCS_ERR_CONNECTION_RESET:
        case UCS_ERR_NOT_CONNECTED:
        case UCS_ERR_CANCELED:
            return reason::peer_closed;
        case UCS_ERR_TIMED_OUT:
            return reason::timeout;
        case UCS_ERR_BUSY:
            return reason::peer_busy;
        case UCS_ERR_NO_DEVICE:
        case UCS_ERR_NO_ELEM:
            return reason::device_not_found;
        case UCS_ERR_NO_MEMORY:
        case UCS_ERR_NO_RESOURCE:
        case UCS_ERR_EXCEEDS_LIMIT:
        case UCS_ERR_OUT_OF_RANGE:
            return reason::local_resources;
        case UCS_ERR_INVALID_PARAM:
        case UCS_ERR_INVALID_ADDR:
        case UCS_ERR_UNSUPPORTED:
        case UCS_ERR_NOT_IMPLEMENTED:
            return reason::bad_target;
        case UCS_ERR_MESSAGE_TRUNCATED:
            return reason::protocol_error;
        case UCS_ERR_IO_ERROR:
            return reason::socket_error;
        default:
            // Link and endpoint failure ranges: the path to the peer broke.
            if (UCS_IS_LINK_ERROR(status) || UCS_IS_ENDPOINT_ERROR(status)) return reason::peer_unreachable;
            return reason::internal_error;
    }
}

std::string ucx_runtime_version() {
    const char* v = ucp_get_version_string();
    return v ? v : "";
}

std::string ucx_disable_memory_hooks() {
    static std::once_flag once;
    static std::string said;
    std::call_once(once, [] {
        for (const char* var : {"UCX_MEM_EVENTS", "UCX_MEM_MMAP_HOOK_MODE", "UCX_MEM_MALLOC_HOOKS"}) {
            if (std::getenv(var)) {
                said = std::string("UCX memory hooks left as configured (") + var + " is set)";
                return;
            }
        }
        // Only what is safe after load: the mmap hook mode must stay as libucs installed
        // it (switching a bistro-patched process to "none" makes ucm_mmap recurse into
        // its own patch until the stack overflows). New event handlers (registration
        // caches) are refused from now on, and no malloc hooks get installed.
        ucm_global_config_t o = ucm_global_opts;
        o.enable_events = 0;
        o.enable_malloc_hooks = 0;
        o.enable_malloc_reloc = 0;
        ucm_set_global_opts(&o);
        said = "UCX memory events turned off for new UCX contexts (mmap hook mode left as loaded)";
    });
    return said;
}

namespace {

using Mono = SteadyClock;

double seconds_between(Mono::time_point a, Mono::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

UcxStatus fail(const char* reason, std::string detail) { return UcxStatus{reason, std::move(detail)}; }

UcxStatus fail_ucs(const std::string& what, ucs_status_t st) {
    if (st == UCS_OK || st == UCS_INPROGRESS) st = UCS_ERR_IO_ERROR;
    return UcxStatus{reason_from_ucs_status(st), what + ": " + ucs_status_string(st)};
}

std::string major_of(const std::string& version) { return version.substr(0, version.find('.')); }

}  // namespace

void UcxEndpoint::on_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* self = static_cast<UcxEndpoint*>(arg);
    if (self->failure_ == UCS_OK) self->failure_ = status;
}

UcxOpen UcxEndpoint::open(const UcxEndpointOptions& opt) {
    UcxOpen out;
    try {
        (void)ucx_disable_memory_hooks();
        std::unique_ptr<UcxEndpoint> ep(new UcxEndpoint());
        ep->opt_ = opt;
        ucp_config_t* cfg = nullptr;
        if (ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg); st != UCS_OK) {
            out.status = fail_ucs("ucp_config_read", st);
            return out;
        }
        struct ConfigRelease {
            ucp_config_t* c;
            ~ConfigRelease() { ucp_config_release(c); }
        } release{cfg};
        if (!opt.transports.empty())
            if (ucs_status_t st = ucp_config_modify(cfg, "TLS", opt.transports.c_str()); st != UCS_OK) {
                out.status = fail(reason::bad_target, "UCX_TLS=" + opt.transports + ": " + ucs_status_string(st));
                return out;
            }
        if (!opt.net_devices.empty())
            if (ucs_status_t st = ucp_config_modify(cfg, "NET_DEVICES", opt.net_devices.c_str()); st != UCS_OK) {
                out.status = fail(reason::bad_target, "UCX_NET_DEVICES=" + opt.net_devices + ": " + ucs_status_string(st));
                return out;
            }
        ucp_params_t params{};
        params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
        params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
        params.name = "rocewatch";
        if (ucs_status_t st = ucp_init(&params, cfg, &ep->ctx_); st != UCS_OK) {
            ep->ctx_ = nullptr;
            out.status = fail_ucs("ucp_init (UCX_TLS=" + (opt.transports.empty() ? "default" : opt.transports) +
                                      ", UCX_NET_DEVICES=" + (opt.net_devices.empty() ? "all" : opt.net_devices) + ")",
                                  st);
            return out;
        }
        ucp_worker_params_t wp{};
        wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        // Serialized, not single: the daemon opens an endpoint on one thread and serves on another.
        wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
        if (ucs_status_t st = ucp_worker_create(ep->ctx_, &wp, &ep->worker_); st != UCS_OK) {
            ep->worker_ = nullptr;
            out.status = fail_ucs("ucp_worker_create", st);
            return out;
        }
        if (ucs_status_t st = ucp_worker_get_efd(ep->worker_, &ep->efd_); st != UCS_OK) {
            out.status = fail_ucs("ucp_worker_get_efd", st);
            return out;
        }
        ucp_address_t* addr = nullptr;
        size_t addr_len = 0;
        if (ucs_status_t st = ucp_worker_get_address(ep->worker_, &addr, &addr_len); st != UCS_OK) {
            out.status = fail_ucs("ucp_worker_get_address", st);
            return out;
        }
        const auto* a = reinterpret_cast<const uint8_t*>(addr);
        ep->info_.worker_address.assign(a, a + addr_len);
        ucp_worker_release_address(ep->worker_, addr);

        // Data area plus the control words behind it, page aligned, registered as one.
        const size_t data = std::max<size_t>(opt.buffer_size, 64);
        ep->buf_len_ = (data + kUcxControlBytes + 4095) / 4096 * 4096;
        ep->buf_ = static_cast<uint8_t*>(std::aligned_alloc(4096, ep->buf_len_));
        if (!ep->buf_) {
            out.status = fail(reason::local_resources, "cannot allocate " + std::to_string(ep->buf_len_) + " bytes");
            return out;
        }
        std::memset(ep->buf_, 0, ep->buf_len_);
        ucp_mem_map_params_t mp{};
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address = ep->buf_;
        mp.length = ep->buf_len_;
        if (ucs_status_t st = ucp_mem_map(ep->ctx_, &mp, &ep->memh_); st != UCS_OK) {
            ep->memh_ = nullptr;
            out.status = fail_ucs("ucp_mem_map " + std::to_string(ep->buf_len_) + " bytes", st);
            return out;
        }
        void* rkey_buf = nullptr;
        size_t rkey_len = 0;
        if (ucs_status_t st = ucp_rkey_pack(ep->ctx_, ep->memh_, &rkey_buf, &rkey_len); st != UCS_OK) {
            out.status = fail_ucs("ucp_rkey_pack", st);
            return out;
        }
        const auto* k = static_cast<const uint8_t*>(rkey_buf);
        ep->info_.rkey.assign(k, k + rkey_len);
        ucp_rkey_buffer_release(rkey_buf);
        ep->info_.ucx_version = ucx_runtime_version();
        ep->info_.addr = reinterpret_cast<uintptr_t>(ep->buf_);
        ep->info_.size = static_cast<uint32_t>(data);
        out.endpoint = std::move(ep);
    } catch (const std::exception& e) {
        out.endpoint.reset();
        out.status = fail(reason::internal_error, std::string("opening a UCX endpoint: ") + e.what());
    }
    return out;
}

void UcxEndpoint::close_ep() {
    if (rkey_) {
        ucp_rkey_destroy(rkey_);
        rkey_ = nullptr;
    }
    if (!ep_) return;
    const auto until = Deadline::after_seconds(opt_.close_timeout_seconds);
    const auto wait = [&](void* req) {
        if (!UCS_PTR_IS_PTR(req)) return;
        while (ucp_request_check_status(req) == UCS_INPROGRESS && !until.expired()) progress_or_wait(until);
        ucp_request_free(req);  // unfinished (dead peer): ucp_worker_destroy() reclaims it
    };
    // Forced: the probes flush their own puts, and a graceful close (or a flush here)
    // waits for the peer to progress, which a peer closing its own endpoint at the same
    // moment never does.
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    wait(ucp_ep_close_nbx(ep_, &p));
    ep_ = nullptr;
}

UcxEndpoint::~UcxEndpoint() {
    if (worker_) close_ep();
    if (memh_) ucp_mem_unmap(ctx_, memh_);
    if (worker_) ucp_worker_destroy(worker_);
    if (ctx_) ucp_cleanup(ctx_);
    std::free(buf_);
}

unsigned UcxEndpoint::progress() { return ucp_worker_progress(worker_); }

void UcxEndpoint::progress_or_wait(Deadline deadline) {
    // Keep spinning for a moment after the last event: messages of a running probe come
    // back to back, and a sleep per message would be the figure.
    static constexpr auto kSpin = std::chrono::milliseconds(2);
    if (ucp_worker_progress(worker_)) {
        idle_since_ = {};
        return;
    }
    const auto now = Mono::now();
    if (idle_since_ == Mono::time_point{}) idle_since_ = now;
    if (now - idle_since_ < kSpin) return;
    if (ucp_worker_arm(worker_) != UCS_OK) return;  // UCS_ERR_BUSY: events pending
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
    // One-sided puts on native RMA transports raise no event: look again every 10 ms.
    pollfd pfd{efd_, POLLIN, 0};
    (void)::poll(&pfd, 1, static_cast<int>(std::clamp<long long>(left_ms, 0, 10)));
}

namespace {

// Waits for a non-blocking request (no callback) to finish, progressing the worker: spins
// when `spin`, else sleeps between events. Frees the request. UCS_ERR_TIMED_OUT at the
// deadline (the request is released and completes inside UCX later).
ucs_status_t wait_request(UcxEndpoint& ep, void* req, Deadline deadline, bool spin) {
    if (req == nullptr) return UCS_OK;
    if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
    uint32_t k = 0;
    for (;;) {
        const ucs_status_t st = ucp_request_check_status(req);
        if (st != UCS_INPROGRESS) {
            ucp_request_free(req);
            return st;
        }
        if (spin) {
            ep.progress();
            if ((++k & 0xff) != 0) continue;
        } else {
            ep.progress_or_wait(deadline);
        }
        if (deadline.expired()) {
            ucp_request_free(req);
            return UCS_ERR_TIMED_OUT;
        }
    }
}

// The endpoint's own failure outranks what a request saw: its requests only say "canceled".
UcxStatus request_failure(UcxEndpoint& ep, const std::string& what, ucs_status_t st) {
    if (ep.failure() != UCS_OK) return fail_ucs(what + " (endpoint error)", ep.failure());
    if (st == UCS_ERR_TIMED_OUT) return fail(reason::timeout, what + ": deadline passed");
    return fail_ucs(what, st);
}

}  // namespace

UcxStatus UcxEndpoint::connect(const UcxEndpointInfo& remote) {
    try {
        if (ep_) return fail(reason::bad_target, "already connected");
        if (remote.worker_address.empty() || remote.rkey.empty())
            return fail(reason::bad_target, "remote endpoint info has no worker address or rkey");
        if (remote.worker_address.size() > kUcxMaxWorkerAddress || remote.rkey.size() > kUcxMaxRkey)
            return fail(reason::bad_target, "remote worker address or rkey too large");
        if (major_of(remote.ucx_version) != major_of(info_.ucx_version) ||
            (opt_.require_same_version && remote.ucx_version != info_.ucx_version))
            return fail(reason::ucx_version_mismatch,
                        "UCX " + info_.ucx_version + " here, " + remote.ucx_version + " on the peer");
        failure_ = UCS_OK;
        ucp_ep_params_t p{};
        p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                       UCP_EP_PARAM_FIELD_ERR_HANDLER;
        p.address = reinterpret_cast<const ucp_address_t*>(remote.worker_address.data());
        p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        p.err_handler.cb = &UcxEndpoint::on_error;
        p.err_handler.arg = this;
        if (ucs_status_t st = ucp_ep_create(worker_, &p, &ep_); st != UCS_OK) {
            ep_ = nullptr;
            return fail_ucs("ucp_ep_create to the peer's worker", st);
        }
        if (ucs_status_t st = ucp_ep_rkey_unpack(ep_, remote.rkey.data(), &rkey_); st != UCS_OK) {
            rkey_ = nullptr;
            auto s = fail_ucs("ucp_ep_rkey_unpack", st);
            failure_ = st;
            close_ep();
            return s;
        }
        remote_ = remote;
        return {};
    } catch (const std::exception& e) {
        return fail(reason::internal_error, std::string("connect: ") + e.what());
    }
}

UcxStatus UcxEndpoint::wire_up(Deadline deadline) {
    if (!connected()) return fail(reason::bad_target, "UCX endpoint not connected");
    if (failure_ != UCS_OK) return fail_ucs("UCX endpoint failed earlier", failure_);
    // A flush completes once every lane is connected and the peer has answered.
    ucp_request_param_t rp{};
    const ucs_status_t st = wait_request(*this, ucp_ep_flush_nbx(ep_, &rp), deadline, false);
    if (st != UCS_OK || failure_ != UCS_OK) return request_failure(*this, "wire-up with the peer's worker", st);
    return {};
}

std::string UcxEndpoint::lanes_detail() const {
    if (!ep_) return "";
    char* text = nullptr;
    size_t len = 0;
    FILE* f = ::open_memstream(&text, &len);
    if (!f) return "";
    ucp_ep_print_info(ep_, f);
    std::fclose(f);
    std::string s(text ? text : "", len);
    std::free(text);
    return s;
}

std::string UcxEndpoint::lanes() const {
    // Lines like "#   lane[0]:  2:tcp/rwp0.0 md[1]  -> md[1]/tcp/sysdev[255] am am_bw#0 ...":
    // the resource after "N:" is transport/device.path_index.
    const std::string text = lanes_detail();
    std::vector<std::string> seen;
    size_t at = 0;
    while ((at = text.find("lane[", at)) != std::string::npos) {
        const size_t eol = text.find('\n', at);
        const std::string line = text.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
        at = eol == std::string::npos ? text.size() : eol;
        size_t p = line.find("]:");
        if (p == std::string::npos) continue;
        p = line.find_first_not_of(' ', p + 2);
        if (p == std::string::npos) continue;
        const size_t colon = line.find(':', p);
        if (colon == std::string::npos) continue;
        const size_t end = line.find(' ', colon);
        std::string res = line.substr(colon + 1, end == std::string::npos ? std::string::npos : end - colon - 1);
        if (const size_t dot = res.rfind('.');
            dot != std::string::npos && dot + 1 < res.size() &&
            res.find_first_not_of("0123456789", dot + 1) == std::string::npos)
            res.resize(dot);
        if (!res.empty() && std::find(seen.begin(), seen.end(), res) == seen.end()) seen.push_back(res);
    }
    std::string out;
    for (const auto& s : seen) out += (out.empty() ? "" : ",") + s;
    return out;
}

// ------------------------------------------------------------------ probes

namespace {

ProbeResult start_result(ProbeKind kind) {
    ProbeResult r;
    r.kind = kind;
    r.streams = 1;
    r.started = std::chrono::system_clock::now();
    return r;
}

void finish(ProbeResult& r, Mono::time_point t0) {
    r.duration_seconds = seconds_between(t0, Mono::now());
    r.success = r.reason.empty();
}

void set_failure(ProbeResult& r, const UcxStatus& st) {
    r.reason = st.reason;
    r.detail = st.detail;
}

void describe(ProbeResult& r, UcxEndpoint& ep, const UcxEndpointInfo& remote) {
    r.info["local_ucx_version"] = ep.info().ucx_version;
    r.info["remote_ucx_version"] = remote.ucx_version;
    r.info["ucx_lanes"] = ep.lanes();
}

// Completions of the bandwidth probe's puts, counted by their callback.
struct PutCounter {
    uint64_t completed = 0;
    ucs_status_t error = UCS_OK;
};

void put_done(void* request, ucs_status_t status, void* user_data) {
    auto* c = static_cast<PutCounter*>(user_data);
    ++c->completed;
    if (status != UCS_OK && c->error == UCS_OK) c->error = status;
    ucp_request_free(request);
}

UcxStatus check_usable(UcxEndpoint& ep, const UcxEndpointInfo& remote, uint32_t size, uint32_t local_needed,
                       uint32_t remote_needed) {
    if (!ep.connected()) return fail(reason::bad_target, "UCX endpoint not connected");
    if (ep.failure() != UCS_OK) return fail_ucs("UCX endpoint failed earlier", ep.failure());
    if (size == 0 || ep.info().size < local_needed || remote.size < remote_needed)
        return fail(reason::bad_target, "message size " + std::to_string(size) + " does not fit the buffers (" +
                                            std::to_string(ep.info().size) + " local, " + std::to_string(remote.size) +
                                            " remote)");
    return {};
}

}  // namespace

ProbeResult ucx_put_bw(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxBwSettings& s, Deadline deadline) {
    const auto t0 = Mono::now();
    ProbeResult r = start_result(ProbeKind::ucx_put_bw);
    try {
        describe(r, ep, remote);
        r.info["message_size"] = std::to_string(s.message_size);
        if (auto st = check_usable(ep, remote, s.message_size, s.message_size, s.message_size); !st.ok()) {
            set_failure(r, st);
            finish(r, t0);
            return r;
        }
        if (auto st = ep.wire_up(deadline); !st.ok()) {
            set_failure(r, st);
            finish(r, t0);
            return r;
        }
        r.info["ucx_lanes"] = ep.lanes();  // complete now that the lanes are connected
        const uint32_t size = s.message_size;
        const uint32_t window = std::max<uint32_t>(1, s.outstanding);
        const uint64_t slots_local = ep.info().size / size;
        const uint64_t slots_remote = remote.size / size;
        const bool by_time = s.iterations == 0;
        PutCounter counter;
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
        param.cb.send = put_done;
        param.user_data = &counter;
        param.memh = ep.memh();
        uint64_t posted = 0;
        bool last_posted = false;
        const auto first_post = Mono::now();
        const auto end_post = first_post + std::chrono::duration_cast<Mono::duration>(std::chrono::duration<double>(s.seconds));
        UcxStatus st;
        uint32_t k = 0;
        while (st.ok()) {
            while (!last_posted && posted - counter.completed < window) {
                const uint64_t n = posted;
                void* req = ucp_put_nbx(ep.ep(), ep.buffer() + (n % slots_local) * size, size,
                                        remote.addr + (n % slots_remote) * size, ep.remote_rkey(), &param);
                if (UCS_PTR_IS_ERR(req)) {
                    st = request_failure(ep, "ucp_put_nbx", UCS_PTR_STATUS(req));
                    break;
                }
                if (req == nullptr) ++counter.completed;  // done at once; no callback comes
                posted = n + 1;
                last_posted = by_time ? ((posted & 0xf) == 0 && Mono::now() >= end_post) : posted >= s.iterations;
            }
            if (!st.ok()) break;
            if (counter.error != UCS_OK) {
                st = request_failure(ep, "put", counter.error);
                break;
            }
            if (ep.failure() != UCS_OK) {
                st = fail_ucs("UCX endpoint error during the puts", ep.failure());
                break;
            }
            if (last_posted && counter.completed == posted) break;
            ep.progress();
            if ((++k & 0x3f) == 0 && deadline.expired())
                st = fail(reason::timeout, "deadline passed with " + std::to_string(posted - counter.completed) +
                                               " puts outstanding");
        }
        Mono::time_point end{};
        if (st.ok()) {
            // Remote completion of everything put: the end of the measured interval.
            ucp_request_param_t fp{};
            const ucs_status_t fs = wait_request(ep, ucp_ep_flush_nbx(ep.ep(), &fp), deadline, true);
            end = Mono::now();
            if (fs != UCS_OK || ep.failure() != UCS_OK) st = request_failure(ep, "flush after the puts", fs);
        }
        r.iterations = st.ok() ? posted : counter.completed;
        r.bytes = r.iterations * uint64_t{size};
        if (st.ok()) {
            const double secs = seconds_between(first_post, end);
            r.info["transfer_seconds"] = std::to_string(secs);
            if (secs > 0) r.bandwidth_bits_per_second = bandwidth_bps(r.bytes, secs);
            // The completion signal: counts, fence, then the sequence word the passive side
            // waits on. Sent from our own buffer (idle now), which outlives a put that is
            // abandoned at the deadline.
            static thread_local std::mt19937_64 rng{std::random_device{}()};
            auto* out = reinterpret_cast<uint64_t*>(ep.buffer());
            out[0] = r.bytes;
            out[1] = r.iterations;
            out[2] = rng() | 1;
            ucp_request_param_t cp{};
            const uint64_t ctrl = remote.addr + remote.size;
            ucs_status_t cs =
                wait_request(ep, ucp_put_nbx(ep.ep(), out, 16, ctrl + 8, ep.remote_rkey(), &cp), deadline, true);
            if (cs == UCS_OK) cs = ucp_worker_fence(ep.worker());
            if (cs == UCS_OK)
                cs = wait_request(ep, ucp_put_nbx(ep.ep(), out + 2, 8, ctrl, ep.remote_rkey(), &cp), deadline, true);
            if (cs == UCS_OK) cs = wait_request(ep, ucp_ep_flush_nbx(ep.ep(), &cp), deadline, true);
            if (cs != UCS_OK || ep.failure() != UCS_OK) st = request_failure(ep, "completion signal to the peer", cs);
        }
        if (!st.ok()) {
            r.bandwidth_bits_per_second.reset();
            set_failure(r, st);
        } else if (r.bytes == 0) {
            r.reason = reason::no_data;
            r.detail = "no put completed";
        }
    } catch (const std::exception& e) {
        r.reason = reason::internal_error;
        r.detail = e.what();
    }
    finish(r, t0);
    return r;
}

namespace {

// Emulated puts (tcp) are acknowledged by the passive side's progress, and the sender's
// final flush waits for those acknowledgements: keep progressing until the worker has been
// quiet for a moment, so the last ones go out before the caller stops driving the worker.
void linger(UcxEndpoint& ep, Deadline deadline) {
    const auto until = Deadline::after(std::chrono::milliseconds(200)).min(deadline);
    auto quiet_since = Mono::now();
    while (!until.expired() && Mono::now() - quiet_since < std::chrono::milliseconds(20)) {
        if (ep.progress()) quiet_since = Mono::now();
    }
}

}  // namespace

ProbeResult ucx_put_bw_serve(UcxEndpoint& ep, Deadline deadline) {
    const auto t0 = Mono::now();
    ProbeResult r = start_result(ProbeKind::ucx_put_bw);
    try {
        describe(r, ep, ep.remote());
        volatile uint64_t* ctrl = ep.control();
        UcxStatus st;
        if (!ep.connected()) st = fail(reason::bad_target, "UCX endpoint not connected");
        while (st.ok()) {
            if (__atomic_load_n(&ctrl[0], __ATOMIC_ACQUIRE) != 0) {
                r.bytes = ctrl[1];
                r.iterations = ctrl[2];
                ctrl[0] = 0;  // consumed: a later run on this endpoint waits again
                linger(ep, deadline);
                break;
            }
            if (ep.failure() != UCS_OK) {
                st = fail_ucs("UCX endpoint error while waiting for the peer's puts", ep.failure());
                break;
            }
            if (deadline.expired()) {
                st = fail(reason::timeout, "the peer's completion signal did not arrive");
                break;
            }
            ep.progress_or_wait(deadline);
        }
        if (!st.ok()) set_failure(r, st);
    } catch (const std::exception& e) {
        r.reason = reason::internal_error;
        r.detail = e.what();
    }
    finish(r, t0);
    return r;
}

namespace {

// Spins (or, on the passive side before the first message, sleeps between events) until
// the last byte of the receive area reads `want`.
UcxStatus wait_byte(UcxEndpoint& ep, volatile uint8_t* p, uint8_t want, Deadline deadline, bool active) {
    uint32_t k = 0;
    for (;;) {
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == want) return {};
        if (active)
            ep.progress();
        else
            ep.progress_or_wait(deadline);
        if ((++k & 0xff) == 0 || !active) {
            if (ep.failure() != UCS_OK) return fail_ucs("UCX endpoint error waiting for the peer", ep.failure());
            if (deadline.expired()) return fail(reason::timeout, "no answer from the peer before the deadline");
        }
    }
}

ProbeResult lat_core(bool active, UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s,
                     Deadline deadline) {
    const auto t0 = Mono::now();
    ProbeResult r = start_result(ProbeKind::ucx_put_lat);
    try {
        describe(r, ep, remote);
        r.info["message_size"] = std::to_string(s.message_size);
        const uint32_t size = s.message_size;
        // Receive area: the first `size` bytes; source: the second half of our buffer.
        UcxStatus st = check_usable(ep, remote, size, size * 2, size);
        if (st.ok() && size > ep.info().size / 2) st = fail(reason::bad_target, "message size larger than half a buffer");
        if (st.ok() && active) {
            st = ep.wire_up(deadline);
            r.info["ucx_lanes"] = ep.lanes();
        }
        std::vector<double> rtts;
        if (active && st.ok()) rtts.reserve(s.iterations);
        volatile uint8_t* in = ep.buffer() + size - 1;
        uint8_t* src = ep.buffer() + ep.info().size / 2;
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
        param.memh = ep.memh();
        void* pending = nullptr;
        for (uint64_t i = 1; i <= s.iterations && st.ok(); ++i) {
            const auto v = static_cast<uint8_t>(i);
            if (!active) st = wait_byte(ep, in, v, deadline, false);
            if (!st.ok()) break;
            // The source must not change under a put still in flight.
            if (pending) {
                const ucs_status_t ps = wait_request(ep, pending, deadline, true);
                pending = nullptr;
                if (ps != UCS_OK) {
                    st = request_failure(ep, "put", ps);
                    break;
                }
            }
            src[size - 1] = v;
            const auto ts = Mono::now();
            void* req = ucp_put_nbx(ep.ep(), src, size, remote.addr, ep.remote_rkey(), &param);
            if (UCS_PTR_IS_ERR(req)) {
                st = request_failure(ep, "ucp_put_nbx", UCS_PTR_STATUS(req));
                break;
            }
            pending = req;
            if (active) {
                st = wait_byte(ep, in, v, deadline, true);
                if (st.ok()) rtts.push_back(seconds_between(ts, Mono::now()));
            }
            if (st.ok()) r.iterations = i;
        }
        if (pending) {
            const ucs_status_t ps = wait_request(ep, pending, deadline, true);
            if (st.ok() && ps != UCS_OK) st = request_failure(ep, "last put", ps);
        }
        if (st.ok()) {
            // The last answer must reach the peer before this side reports success.
            ucp_request_param_t fp{};
            const ucs_status_t fs = wait_request(ep, ucp_ep_flush_nbx(ep.ep(), &fp), deadline, true);
            if (fs != UCS_OK || ep.failure() != UCS_OK) st = request_failure(ep, "flush after the last put", fs);
            if (st.ok()) linger(ep, deadline);  // the peer's flush waits for our acknowledgements
        }
        if (!st.ok()) set_failure(r, st);
        r.info["ucx_lanes"] = ep.lanes();  // the passive side's lanes wire up with its first answer
        r.bytes = r.iterations * uint64_t{size};
        if (active && !rtts.empty()) r.latency = latency_stats(half_round_trips(std::move(rtts)));
    } catch (const std::exception& e) {
        r.reason = reason::internal_error;
        r.detail = e.what();
    }
    finish(r, t0);
    return r;
}

}  // namespace

ProbeResult ucx_put_lat(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s, Deadline deadline) {
    return lat_core(true, ep, remote, s, deadline);
}

ProbeResult ucx_put_lat_serve(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s,
                              Deadline deadline) {
    return lat_core(false, ep, remote, s, deadline);
}

}  // namespace rocewatch
