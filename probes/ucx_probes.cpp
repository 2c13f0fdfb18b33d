// ucx_perftest style probes over a connected ucp endpoint: ucp_put_bw and ucp_put_lat,
// each with its passive side.
#include <algorithm>
#include <chrono>
#include <exception>
#include <random>
#include <vector>

#include "probes/errors.hpp"
#include "probes/stats.hpp"
#include "probes/ucx.hpp"

namespace rocewatch {

namespace {

UcxStatus fail(const char* reason, std::string detail) { return UcxStatus{reason, std::move(detail)}; }

// A UCX probe's result: one stream, started now.
ProbeResult begin_ucx_result(ProbeKind kind) {
    ProbeResult r = begin_result(kind);
    r.streams = 1;
    return r;
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

UcxStatus check_usable(UcxEndpoint& ep, const UcxEndpointInfo& remote, uint32_t size, uint32_t local_needed,
                       uint32_t remote_needed) {
    if (!ep.connected()) return fail(reason::bad_target, "UCX endpoint not connected");
    if (ep.failure() != UCS_OK) return ucx_failure("UCX endpoint failed earlier", ep.failure());
    if (size == 0 || ep.info().size < local_needed || remote.size < remote_needed)
        return fail(reason::bad_target, "message size " + std::to_string(size) + " does not fit the buffers (" +
                                            std::to_string(ep.info().size) + " local, " + std::to_string(remote.size) +
                                            " remote)");
    return {};
}

// What the puts of a bandwidth run did.
struct PutRun {
    uint64_t posted = 0;
    SteadyClock::time_point first_post{};
    SteadyClock::time_point end{};  // the flush after the last put completed: the measured span's end
};

// Non-blocking puts with at most `outstanding` in flight until the count (or the time)
// is reached, then a flush: remote completion of everything put ends the measured span.
UcxStatus put_all(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxBwSettings& s, Deadline deadline,
                  PutRun& run) {
    const uint32_t size = s.message_size;
    const uint32_t window = std::max<uint32_t>(1, s.outstanding);
    const uint64_t slots_local = ep.info().size / size;
    const uint64_t slots_remote = remote.size / size;
    const bool by_time = s.iterations == 0;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
    auto& done = ep.put_completions();
    done = {};
    param.cb.send = &UcxEndpoint::put_completed;
    param.user_data = &done;
    param.memh = ep.memh();
    bool last_posted = false;
    run.first_post = SteadyClock::now();
    const auto end_post = run.first_post + from_seconds(s.seconds);
    for (uint32_t k = 0;;) {
        while (!last_posted && run.posted - done.completed < window) {
            const uint64_t n = run.posted;
            void* req = ucp_put_nbx(ep.ep(), ep.buffer() + (n % slots_local) * size, size,
                                    remote.addr + (n % slots_remote) * size, ep.remote_rkey(), &param);
            if (UCS_PTR_IS_ERR(req)) return request_failure(ep, "ucp_put_nbx", UCS_PTR_STATUS(req));
            if (req == nullptr) ++done.completed;  // done at once; no callback comes
            run.posted = n + 1;
            last_posted = by_time ? ((run.posted & 0xf) == 0 && SteadyClock::now() >= end_post)
                                  : run.posted >= s.iterations;
        }
        if (done.error != UCS_OK) return request_failure(ep, "put", done.error);
        if (ep.failure() != UCS_OK) return ucx_failure("UCX endpoint error during the puts", ep.failure());
        if (last_posted && done.completed == run.posted) break;
        ep.progress();
        if ((++k & 0x3f) == 0 && deadline.expired())
            return fail(reason::timeout,
                        "deadline passed with " + std::to_string(run.posted - done.completed) + " puts outstanding");
    }
    ucp_request_param_t fp{};
    const ucs_status_t fs = wait_request(ep, ucp_ep_flush_nbx(ep.ep(), &fp), deadline, true);
    run.end = SteadyClock::now();
    if (fs != UCS_OK || ep.failure() != UCS_OK) return request_failure(ep, "flush after the puts", fs);
    return {};
}

// The completion signal the passive side waits on: counts, fence, then the sequence word.
// Sent from our own buffer (idle now), which outlives a put that is abandoned at the
// deadline.
UcxStatus signal_completion(UcxEndpoint& ep, const UcxEndpointInfo& remote, uint64_t bytes, uint64_t iterations,
                            Deadline deadline) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    auto* out = reinterpret_cast<uint64_t*>(ep.buffer());
    out[0] = bytes;
    out[1] = iterations;
    out[2] = rng() | 1;
    ucp_request_param_t cp{};
    const uint64_t ctrl = remote.addr + remote.size;
    ucs_status_t cs = wait_request(ep, ucp_put_nbx(ep.ep(), out, 16, ctrl + 8, ep.remote_rkey(), &cp), deadline, true);
    if (cs == UCS_OK) cs = ucp_worker_fence(ep.worker());
    if (cs == UCS_OK)
        cs = wait_request(ep, ucp_put_nbx(ep.ep(), out + 2, 8, ctrl, ep.remote_rkey(), &cp), deadline, true);
    if (cs == UCS_OK) cs = wait_request(ep, ucp_ep_flush_nbx(ep.ep(), &cp), deadline, true);
    if (cs != UCS_OK || ep.failure() != UCS_OK) return request_failure(ep, "completion signal to the peer", cs);
    return {};
}

}  // namespace

ProbeResult ucx_put_bw(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxBwSettings& s, Deadline deadline) {
    return guarded_run(begin_ucx_result(ProbeKind::ucx_put_bw), [&](ProbeResult& r) {
        describe(r, ep, remote);
        r.info["message_size"] = std::to_string(s.message_size);
        UcxStatus st = check_usable(ep, remote, s.message_size, s.message_size, s.message_size);
        if (st.ok()) st = ep.wire_up(deadline);
        if (!st.ok()) {
            return set_failure(r, st);
        }
        r.info["ucx_lanes"] = ep.lanes();  // complete now that the lanes are connected
        PutRun run;
        st = put_all(ep, remote, s, deadline, run);
        r.iterations = st.ok() ? run.posted : ep.put_completions().completed;
        r.bytes = r.iterations * uint64_t{s.message_size};
        if (st.ok()) {
            const double secs = seconds_between(run.first_post, run.end);
            r.info["transfer_seconds"] = std::to_string(secs);
            if (secs > 0) r.bandwidth_bits_per_second = bandwidth_bps(r.bytes, secs);
            st = signal_completion(ep, remote, r.bytes, r.iterations, deadline);
        }
        if (!st.ok()) {
            r.bandwidth_bits_per_second.reset();
            set_failure(r, st);
        } else if (r.bytes == 0) {
            r.reason = reason::no_data;
            r.detail = "no put completed";
        }
    });
}

namespace {

// Emulated puts (tcp) are acknowledged by the passive side's progress, and the sender's
// final flush waits for those acknowledgements: keep progressing until the worker has been
// quiet for a moment, so the last ones go out before the caller stops driving the worker.
void linger(UcxEndpoint& ep, Deadline deadline) {
    const auto until = Deadline::after(std::chrono::milliseconds(200)).min(deadline);
    auto quiet_since = SteadyClock::now();
    while (!until.expired() && SteadyClock::now() - quiet_since < std::chrono::milliseconds(20)) {
        if (ep.progress()) quiet_since = SteadyClock::now();
    }
}

}  // namespace

ProbeResult ucx_put_bw_serve(UcxEndpoint& ep, Deadline deadline) {
    return guarded_run(begin_ucx_result(ProbeKind::ucx_put_bw), [&](ProbeResult& r) {
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
                st = ucx_failure("UCX endpoint error while waiting for the peer's puts", ep.failure());
                break;
            }
            if (deadline.expired()) {
                st = fail(reason::timeout, "the peer's completion signal did not arrive");
                break;
            }
            ep.progress_or_wait(deadline);
        }
        if (!st.ok()) set_failure(r, st);
    });
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
            if (ep.failure() != UCS_OK) return ucx_failure("UCX endpoint error waiting for the peer", ep.failure());
            if (deadline.expired()) return fail(reason::timeout, "no answer from the peer before the deadline");
        }
    }
}

ProbeResult lat_core(bool active, UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s,
                     Deadline deadline) {
    return guarded_run(begin_ucx_result(ProbeKind::ucx_put_lat), [&](ProbeResult& r) {
        describe(r, ep, remote);
        r.info["message_size"] = std::to_string(s.message_size);
        const uint32_t size = s.message_size;
        // Receive area: the first `size` bytes; source: the second half of our buffer.
        UcxStatus st = check_usable(ep, remote, size, size * 2, size);
        if (st.ok() && size > ep.info().size / 2)
            st = fail(reason::bad_target, "message size larger than half a buffer");
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
            const auto ts = SteadyClock::now();
            void* req = ucp_put_nbx(ep.ep(), src, size, remote.addr, ep.remote_rkey(), &param);
            if (UCS_PTR_IS_ERR(req)) {
                st = request_failure(ep, "ucp_put_nbx", UCS_PTR_STATUS(req));
                break;
            }
            pending = req;
            if (active) {
                st = wait_byte(ep, in, v, deadline, true);
                if (st.ok()) rtts.push_back(seconds_between(ts, SteadyClock::now()));
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
    });
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
