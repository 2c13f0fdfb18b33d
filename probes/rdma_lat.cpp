// ib_write_lat style latency: ping-pong of RDMA writes, each side spinning on the last
// byte of its own buffer.
#include <algorithm>
#include <exception>
#include <vector>

#include "probes/errors.hpp"
#include "probes/rdma.hpp"
#include "probes/stats.hpp"

namespace rocewatch {

namespace {

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
                    return RdmaStatus{reason_from_wc_status(wc.status), wc_detail(ep.info().device, wc, "RDMA write")};
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
                return RdmaStatus{reason_from_wc_status(wc.status), wc_detail(ep.info().device, wc, "RDMA write")};
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
    return guarded_run(begin_result(ProbeKind::rdma_write_lat, ""), [&](ProbeResult& r) {
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
                    const auto ts = SteadyClock::now();
                    st = post_lat_write(ep, remote, s.message_size, v, outstanding, deadline);
                    if (st.ok()) st = spin_for(ep, in, v, deadline, outstanding);
                    if (st.ok()) rtts.push_back(seconds_between(ts, SteadyClock::now()));
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
                    if (wc.status != IBV_WC_SUCCESS)
                        st = RdmaStatus{reason_from_wc_status(wc.status),
                                        wc_detail(ep.info().device, wc, "RDMA write")};
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
    });
}

}  // namespace

ProbeResult rdma_write_lat(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaLatSettings& s,
                           Deadline deadline) {
    return lat_core(true, ep, remote, s, deadline);
}

ProbeResult rdma_write_lat_serve(RdmaEndpoint& ep, const RdmaEndpointInfo& remote, const RdmaLatSettings& s,
                                 Deadline deadline) {
    return lat_core(false, ep, remote, s, deadline);
}

}  // namespace rocewatch
