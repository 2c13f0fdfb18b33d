// ib_write_bw style bandwidth over one or many rails, and the passive side that waits
// for each QP's closing write with immediate.
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <thread>

#include "probes/errors.hpp"
#include "probes/rdma.hpp"
#include "probes/stats.hpp"
#include "util/thread_name.hpp"

namespace rocewatch {

namespace {

// One QP of a bandwidth run.
struct QpRun {
    RdmaEndpoint* ep = nullptr;
    RdmaEndpointInfo remote;
    uint64_t posted = 0;
    uint64_t completed = 0;
    bool last_posted = false;  // no more data WRs
    bool closing = false;      // write-with-imm posted
    bool closed = false;       // and completed
    SteadyClock::time_point first_post{};
    SteadyClock::time_point last_completion{};
};

constexpr uint64_t kCloseWrId = ~0ull;

struct RailOutcome {
    std::string reason;
    std::string detail;
    uint64_t bytes = 0;
    uint64_t wrs = 0;
    SteadyClock::time_point first_post{};
    SteadyClock::time_point last_completion{};
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

// What every QP of a rail posts: the settings, with the time-bound run's end.
struct BwPlan {
    uint32_t size;
    uint32_t depth;
    uint32_t cq_mod;
    bool by_time;
    uint64_t iterations;
    SteadyClock::time_point end_post;
};

// Posts data WRs while the send queue has room (at most tx_depth outstanding), then the
// closing write once all have completed. False with the failure in `o`.
bool post_writes(QpRun& q, const BwPlan& p, RailOutcome& o) {
    while (!q.last_posted && q.posted - q.completed < p.depth) {
        const uint64_t n = q.posted;
        const bool last = p.by_time ? SteadyClock::now() >= p.end_post : n + 1 >= p.iterations;
        const bool signal = last || (n + 1) % p.cq_mod == 0;
        const uint32_t slots_local = std::max<uint32_t>(1, q.ep->info().size / p.size);
        const uint32_t slots_remote = std::max<uint32_t>(1, q.remote.size / p.size);
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uintptr_t>(q.ep->buffer()) + (n % slots_local) * uint64_t{p.size};
        sge.length = p.size;
        sge.lkey = q.ep->lkey();
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.wr_id = n + 1;  // WRs completed once this one has
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
        wr.wr.rdma.remote_addr = q.remote.addr + (n % slots_remote) * uint64_t{p.size};
        wr.wr.rdma.rkey = q.remote.rkey;
        if (n == 0) q.first_post = SteadyClock::now();
        if (int err = ibv_post_send(q.ep->qp(), &wr, &bad)) {
            o.reason = reason_from_verbs_errno(err);
            o.detail = errno_detail(q.ep->info().device + ": ibv_post_send", err);
            return false;
        }
        q.posted = n + 1;
        if (last) q.last_posted = true;
    }
    if (q.last_posted && q.completed == q.posted && !q.closing) {
        if (int err = post_write_imm(q)) {
            o.reason = reason_from_verbs_errno(err);
            o.detail = errno_detail(q.ep->info().device + ": ibv_post_send (closing write)", err);
            return false;
        }
        q.closing = true;
    }
    return true;
}

// Reaps what the QP's CQ holds; `done` counts QPs whose closing write completed. False
// with the failure in `o`.
bool reap_completions(QpRun& q, size_t& done, RailOutcome& o) {
    ibv_wc wc[16];
    const int got = ibv_poll_cq(q.ep->cq(), 16, wc);
    if (got < 0) {
        o.reason = reason::internal_error;
        o.detail = q.ep->info().device + ": ibv_poll_cq failed";
        return false;
    }
    const auto t = got > 0 ? SteadyClock::now() : SteadyClock::time_point{};
    for (int i = 0; i < got; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) {
            o.reason = reason_from_wc_status(wc[i].status);
            o.detail = wc_detail(q.ep->info().device, wc[i], "RDMA write");
            return false;
        }
        if (wc[i].wr_id == kCloseWrId) {
            q.closed = true;
            ++done;
        } else {
            q.completed = wc[i].wr_id;
            q.last_completion = t;
        }
    }
    return true;
}

// Payload that completed, failed runs included (what reached the peer for sure).
void sum_up(const std::vector<QpRun>& qps, uint32_t size, RailOutcome& o) {
    bool any = false;
    for (const auto& q : qps) {
        o.bytes += q.completed * uint64_t{size};
        o.wrs += q.completed;
        if (q.posted == 0) continue;
        if (!any || q.first_post < o.first_post) o.first_post = q.first_post;
        if (!any || q.last_completion > o.last_completion) o.last_completion = q.last_completion;
        any = true;
    }
}

// Drives every QP of one rail until all posted WRs completed (perftest's run_iter_bw),
// then closes each with a write with immediate. Stops early on `stop` (another rail
// failed) or at the deadline.
RailOutcome run_bw_rail(std::vector<QpRun>& qps, const RdmaBwSettings& s, Deadline deadline, std::atomic<bool>& stop) {
    RailOutcome o;
    const uint32_t depth = std::max<uint32_t>(1, s.tx_depth);
    BwPlan p{s.message_size,    depth,        std::clamp<uint32_t>(s.cq_mod, 1, depth),
             s.iterations == 0, s.iterations, SteadyClock::now() + from_seconds(s.seconds)};
    size_t done = 0;
    while (done < qps.size()) {
        if (deadline.expired()) {  // its time, or the daemon stopping (the cancel flag)
            o.reason = reason::timeout;
            o.detail = deadline.cancelled() ? "cancelled with WRs outstanding" : "deadline passed with WRs outstanding";
            break;
        }
        if (stop.load(std::memory_order_relaxed)) {
            o.reason = reason::internal_error;
            o.detail = "stopped: another rail failed";
            break;
        }
        bool ok = true;
        for (auto& q : qps) {
            if (q.closed) continue;
            ok = post_writes(q, p, o) && reap_completions(q, done, o);
            if (!ok) break;
        }
        if (!ok) {
            stop = true;  // the other rails end too: the run has failed
            break;
        }
    }
    sum_up(qps, s.message_size, o);
    return o;
}

// Pairs each rail's endpoints with their remotes and checks they can run these settings;
// a reason and detail in `r` when not.
bool pair_up(std::vector<RdmaRail>& rails, const RdmaBwSettings& s, std::vector<std::vector<QpRun>>& runs,
             ProbeResult& r) {
    runs.assign(rails.size(), {});
    for (size_t i = 0; i < rails.size(); ++i) {
        auto& rail = rails[i];
        if (rail.endpoints.empty() || rail.endpoints.size() != rail.remotes.size()) {
            r.reason = reason::bad_target;
            r.detail = "rail " + rail.name + ": endpoints and remotes do not pair up";
            return false;
        }
        for (size_t k = 0; k < rail.endpoints.size(); ++k) {
            auto* ep = rail.endpoints[k];
            if (!ep || !ep->connected()) {
                r.reason = reason::qp_transition_failed;
                r.detail = "rail " + rail.name + ": endpoint not connected";
                return false;
            }
            if (s.message_size == 0 || ep->info().size < s.message_size || rail.remotes[k].size < s.message_size) {
                r.reason = reason::bad_target;
                r.detail = "message size " + std::to_string(s.message_size) + " larger than a buffer (" +
                           std::to_string(ep->info().size) + " local, " + std::to_string(rail.remotes[k].size) +
                           " remote)";
                return false;
            }
            if (ep->options().max_send_wr < s.tx_depth + 1) {
                r.reason = reason::bad_target;
                r.detail = "tx depth " + std::to_string(s.tx_depth) + " needs max_send_wr > it";
                return false;
            }
            runs[i].push_back(QpRun{ep, rail.remotes[k]});
        }
    }
    return true;
}

// Every rail at once, a thread each. One rail unpinned runs on the caller's thread;
// pinning happens on a thread of our own so the caller's affinity is never changed.
std::vector<RailOutcome> run_rails(const std::vector<RdmaRail>& rails, std::vector<std::vector<QpRun>>& runs,
                                   const RdmaBwSettings& s, Deadline deadline) {
    std::atomic<bool> stop{false};
    std::vector<RailOutcome> outs(rails.size());
    if (rails.size() == 1 && rails[0].cpu < 0) {
        outs[0] = run_bw_rail(runs[0], s, deadline, stop);
        return outs;
    }
    std::vector<std::thread> threads;
    for (size_t i = 0; i < rails.size(); ++i)
        threads.emplace_back([&, i] {
            name_this_thread("rdma-rail" + std::to_string(i));
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
    return outs;
}

// The rails' outcomes as one result: the first failure, the sums, and the bandwidth over
// the span from the first post anywhere to the last completion anywhere.
void fold(const std::vector<RdmaRail>& rails, const std::vector<RailOutcome>& outs, const RdmaBwSettings& s,
          ProbeResult& r) {
    SteadyClock::time_point first{}, last{};
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
                r.info["rail." + rails[i].name + ".bytes_per_second"] = std::to_string(bandwidth_bps(o.bytes, secs) /
                                                                                       8);
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
    }
    if (r.reason.empty() && r.bytes == 0) {
        r.reason = reason::no_data;
        r.detail = "no write completed";
    }
}

ProbeResult bw_core(ProbeKind kind, std::vector<RdmaRail>& rails, const RdmaBwSettings& s, Deadline deadline) {
    return guarded_run(begin_result(kind, rails.size() == 1 ? rails[0].name : ""), [&](ProbeResult& r) {
        std::vector<std::vector<QpRun>> runs;
        if (pair_up(rails, s, runs, r)) fold(rails, run_rails(rails, runs, s, deadline), s, r);
    });
}

// Waits for the closing write with immediate on one endpoint; returns the WR count in it.
RdmaStatus wait_close(RdmaEndpoint& ep, Deadline deadline, uint64_t& wrs) {
    for (;;) {
        ibv_wc wc{};
        const int n = ep.wait_cq(deadline, &wc);
        if (n < 0)
            return RdmaStatus{reason::internal_error, errno_detail(ep.info().device + ": waiting on the CQ", -n)};
        if (n == 0) return RdmaStatus{reason::timeout, ep.info().device + ": the peer's closing write did not arrive"};
        if (wc.status != IBV_WC_SUCCESS)
            return RdmaStatus{reason_from_wc_status(wc.status), wc_detail(ep.info().device, wc, "receive")};
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            wrs = ntohl(wc.imm_data);
            return {};
        }
    }
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
        ProbeResult r = begin_result(ProbeKind::rdma_multirail_bw, "");
        r.reason = reason::bad_target;
        r.detail = "no rails";
        r.success = false;
        return r;
    }
    auto r = bw_core(ProbeKind::rdma_multirail_bw, rails, s, deadline);
    r.rail.clear();
    return r;
}

ProbeResult rdma_multirail_bw_serve(std::vector<RdmaRail>& rails, uint32_t message_size, Deadline deadline) {
    return guarded_run(begin_result(ProbeKind::rdma_multirail_bw, ""), [&](ProbeResult& r) {
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
            // The payload the peer wrote, which the node's probe budget is charged: every WR
            // carries message_size bytes (it was charged nothing while this held WR counts).
            r.iterations += rail_wrs;
            r.bytes += rail_wrs * message_size;
            r.bytes_per_stream.push_back(rail_wrs * message_size);
            if (!r.reason.empty()) break;
        }
        if (rails.size() == 1) r.rail = rails[0].name;
    });
}

ProbeResult rdma_write_bw_serve(RdmaEndpoint& ep, uint32_t message_size, Deadline deadline) {
    std::vector<RdmaRail> rails(1);
    rails[0].endpoints = {&ep};
    rails[0].remotes = {ep.remote()};
    auto r = rdma_multirail_bw_serve(rails, message_size, deadline);
    r.kind = ProbeKind::rdma_write_bw;
    r.bytes_per_stream.clear();
    r.info["device"] = ep.info().device;
    return r;
}

}  // namespace rocewatch
