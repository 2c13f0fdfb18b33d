// A ucp endpoint to one peer, opened step by step and released in reverse order.
#include "probes/ucx_endpoint.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "probes/errors.hpp"
#include "probes/ucx_runtime.hpp"

namespace rocewatch {

namespace {

UcxStatus fail(const char* reason, std::string detail) { return UcxStatus{reason, std::move(detail)}; }

std::string major_of(const std::string& version) { return version.substr(0, version.find('.')); }

}  // namespace

void UcxEndpoint::on_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* self = static_cast<UcxEndpoint*>(arg);
    if (self->failure_ == UCS_OK) self->failure_ = status;
}

void UcxEndpoint::put_completed(void* request, ucs_status_t status, void* user_data) {
    auto* c = static_cast<PutCompletions*>(user_data);
    ++c->completed;
    if (status != UCS_OK && c->error == UCS_OK) c->error = status;
    ucp_request_free(request);
}

UcxOpen UcxEndpoint::open(const UcxEndpointOptions& opt) {
    UcxOpen out;
    try {
        (void)ucx_disable_memory_hooks();
        std::unique_ptr<UcxEndpoint> ep(new UcxEndpoint());
        ep->opt_ = opt;
        for (auto step : {&UcxEndpoint::init_context, &UcxEndpoint::create_worker, &UcxEndpoint::map_buffer}) {
            out.status = (ep.get()->*step)();
            if (!out.status.ok()) return out;
        }
        out.endpoint = std::move(ep);
    } catch (const std::exception& e) {
        out.endpoint.reset();
        out.status = fail(reason::internal_error, std::string("opening a UCX endpoint: ") + e.what());
    }
    return out;
}

// A context for RMA and wake-ups, with this endpoint's transports and devices.
UcxStatus UcxEndpoint::init_context() {
    const auto& opt = opt_;
    ucp_config_t* cfg = nullptr;
    if (ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg); st != UCS_OK)
        return ucx_failure("ucp_config_read", st);
    struct ConfigRelease {
        ucp_config_t* c;
        ~ConfigRelease() { ucp_config_release(c); }
    } release{cfg};
    if (!opt.transports.empty())
        if (ucs_status_t st = ucp_config_modify(cfg, "TLS", opt.transports.c_str()); st != UCS_OK)
            return fail(reason::bad_target, "UCX_TLS=" + opt.transports + ": " + ucs_status_string(st));
    if (!opt.net_devices.empty())
        if (ucs_status_t st = ucp_config_modify(cfg, "NET_DEVICES", opt.net_devices.c_str()); st != UCS_OK)
            return fail(reason::bad_target, "UCX_NET_DEVICES=" + opt.net_devices + ": " + ucs_status_string(st));
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
    params.name = "rocewatch";
    if (ucs_status_t st = ucp_init(&params, cfg, &ctx_); st != UCS_OK) {
        ctx_ = nullptr;
        return ucx_failure("ucp_init (UCX_TLS=" + (opt.transports.empty() ? "default" : opt.transports) +
                               ", UCX_NET_DEVICES=" + (opt.net_devices.empty() ? "all" : opt.net_devices) + ")",
                           st);
    }
    return {};
}

// One worker, its event fd, and the address the peer connects to.
UcxStatus UcxEndpoint::create_worker() {
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // Serialized, not single: the daemon opens an endpoint on one thread and serves on another.
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    if (ucs_status_t st = ucp_worker_create(ctx_, &wp, &worker_); st != UCS_OK) {
        worker_ = nullptr;
        return ucx_failure("ucp_worker_create", st);
    }
    if (ucs_status_t st = ucp_worker_get_efd(worker_, &efd_); st != UCS_OK)
        return ucx_failure("ucp_worker_get_efd", st);
    ucp_address_t* addr = nullptr;
    size_t addr_len = 0;
    if (ucs_status_t st = ucp_worker_get_address(worker_, &addr, &addr_len); st != UCS_OK)
        return ucx_failure("ucp_worker_get_address", st);
    const auto* a = reinterpret_cast<const uint8_t*>(addr);
    info_.worker_address.assign(a, a + addr_len);
    ucp_worker_release_address(worker_, addr);
    return {};
}

// Data area plus the control words behind it, page aligned, registered as one.
UcxStatus UcxEndpoint::map_buffer() {
    const size_t data = std::max<size_t>(opt_.buffer_size, 64);
    buf_len_ = (data + kUcxControlBytes + 4095) / 4096 * 4096;
    buf_ = static_cast<uint8_t*>(std::aligned_alloc(4096, buf_len_));
    if (!buf_) return fail(reason::local_resources, "cannot allocate " + std::to_string(buf_len_) + " bytes");
    std::memset(buf_, 0, buf_len_);
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = buf_;
    mp.length = buf_len_;
    if (ucs_status_t st = ucp_mem_map(ctx_, &mp, &memh_); st != UCS_OK) {
        memh_ = nullptr;
        return ucx_failure("ucp_mem_map " + std::to_string(buf_len_) + " bytes", st);
    }
    void* rkey_buf = nullptr;
    size_t rkey_len = 0;
    if (ucs_status_t st = ucp_rkey_pack(ctx_, memh_, &rkey_buf, &rkey_len); st != UCS_OK)
        return ucx_failure("ucp_rkey_pack", st);
    const auto* k = static_cast<const uint8_t*>(rkey_buf);
    info_.rkey.assign(k, k + rkey_len);
    ucp_rkey_buffer_release(rkey_buf);
    info_.ucx_version = ucx_runtime_version();
    info_.addr = reinterpret_cast<uintptr_t>(buf_);
    info_.size = static_cast<uint32_t>(data);
    return {};
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
    const auto now = SteadyClock::now();
    if (idle_since_ == SteadyClock::time_point{}) idle_since_ = now;
    if (now - idle_since_ < kSpin) return;
    if (ucp_worker_arm(worker_) != UCS_OK) return;  // UCS_ERR_BUSY: events pending
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
    // One-sided puts on native RMA transports raise no event: look again every 10 ms.
    pollfd pfd{efd_, POLLIN, 0};
    (void)::poll(&pfd, 1, static_cast<int>(std::clamp<long long>(left_ms, 0, 10)));
}

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

UcxStatus request_failure(UcxEndpoint& ep, const std::string& what, ucs_status_t st) {
    if (ep.failure() != UCS_OK) return ucx_failure(what + " (endpoint error)", ep.failure());
    if (st == UCS_ERR_TIMED_OUT) return fail(reason::timeout, what + ": deadline passed");
    return ucx_failure(what, st);
}

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
            return ucx_failure("ucp_ep_create to the peer's worker", st);
        }
        if (ucs_status_t st = ucp_ep_rkey_unpack(ep_, remote.rkey.data(), &rkey_); st != UCS_OK) {
            rkey_ = nullptr;
            auto s = ucx_failure("ucp_ep_rkey_unpack", st);
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
    if (failure_ != UCS_OK) return ucx_failure("UCX endpoint failed earlier", failure_);
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
        if (const size_t dot = res.rfind('.'); dot != std::string::npos && dot + 1 < res.size() &&
                                               res.find_first_not_of("0123456789", dot + 1) == std::string::npos)
            res.resize(dot);
        if (!res.empty() && std::find(seen.begin(), seen.end(), res) == seen.end()) seen.push_back(res);
    }
    std::string out;
    for (const auto& s : seen) out += (out.empty() ? "" : ",") + s;
    return out;
}

}  // namespace rocewatch
