// The TCP bandwidth probe: N streams into the peer's sink, the figure counted where the
// bytes arrive (the sink's reports), as iperf3's receiver line.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "probes/stats.hpp"
#include "probes/tcp_client.hpp"
#include "probes/tcp_socket.hpp"

namespace rocewatch {

namespace {

using namespace tcpclient;

struct Stream {
    Fd fd;
    uint64_t cap = 0;  // bytes this stream may send: the peer's grant, our share of max_bytes
    uint64_t sent = 0;
    bool sending = true;
    std::array<uint8_t, tcpwire::kReportSize> report_buf{};
    size_t report_got = 0;
    std::optional<tcpwire::Report> report;
};

// What the sending phase did, for the result and for a stalled peer's detail.
struct Sent {
    uint64_t writes = 0;
    double sender_seconds = 0;
    double progress_seconds = 0;  // into the run, when send() last took bytes
};

std::optional<Failure> check_settings(const TcpBwSettings& s) {
    if (s.streams == 0 || s.streams > 128) return Failure{reason::bad_target, "streams must be 1..128"};
    if (!(s.duration_seconds > 0)) return Failure{reason::bad_target, "duration must be positive"};
    if (s.write_size == 0 || s.write_size > (16u << 20))
        return Failure{reason::bad_target, "write size must be 1 B..16 MiB"};
    return std::nullopt;
}

// What a stream may hold written but not yet sent (TCP_NOTSENT_LOWAT), at least two writes.
// Left to autotuning, the send buffer grew to megabytes on a slow path, which drained long
// after sending stopped: past the deadline, a slow path became a timeout instead of its low
// figure (a sink reading 500 KB/s over loopback: 3.9 MB queued by 2 s of sending, and no
// report by the 7 s deadline; 1.8 MB with the limit, 3.83 Mbit/s reported in 3.8 s).
// On the fast veth bench it costs nothing (four streams 26.6 and 24.6 against 22.8 and 23.2
// Gbit/s without, sender CPU per GB 0.30-0.33 against 0.35; one stream 15.4 against 15.2).
constexpr uint64_t kUnsentBytes = 1u << 20;

// Connects and handshakes every stream; the shortest duration granted applies to all.
bool open_streams(const TcpProbeTarget& t, const TcpBwSettings& s, Deadline d, std::vector<Stream>& streams,
                  uint32_t& granted_ms, Failure& f) {
    tcpwire::Request req;
    req.mode = tcpwire::Mode::sink;
    req.duration_ms = tcpsock::to_ms(s.duration_seconds);
    req.max_bytes = s.max_bytes ? (s.max_bytes + s.streams - 1) / s.streams : std::numeric_limits<uint64_t>::max();
    granted_ms = req.duration_ms;
    streams.resize(s.streams);
    for (auto& st : streams) {
        auto fd = connect_to(t, d, s.socket_buffer_bytes, f);
        if (!fd) return false;
        const auto reply = handshake(fd->get(), req, t.token, d, target_string(t), f);
        if (!reply) return false;
        tcpsock::set_int_opt(fd->get(), IPPROTO_TCP, TCP_NOTSENT_LOWAT,
                             static_cast<int>(std::max<uint64_t>(kUnsentBytes, 2ull * s.write_size)));
        st.fd = std::move(*fd);
        st.cap = std::min(reply->max_bytes, req.max_bytes);
        granted_ms = std::min(granted_ms, reply->duration_ms);
    }
    return true;
}

// The block every send copies from, on a page boundary as iperf3's (an mmap). malloc aligns
// to 16 bytes only: a 128 KiB std::vector sat 16 bytes into its page, and the kernel's copy
// from it (40% of the sender's CPU) cost more: median sender CPU per GB 0.237 against 0.219
// page-aligned, 16 pinned four-stream runs each (issue 14).
class PageBuffer {
public:
    explicit PageBuffer(size_t n) : size_(n), p_(static_cast<uint8_t*>(std::aligned_alloc(kPage, round_up(n)))) {
        if (!p_) throw std::bad_alloc();
    }
    [[nodiscard]] std::span<uint8_t> bytes() { return {p_.get(), size_}; }

private:
    static constexpr size_t kPage = 4096;
    static size_t round_up(size_t n) { return (n + kPage - 1) / kPage * kPage; }
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    size_t size_;
    std::unique_ptr<uint8_t, Free> p_;
};

enum class Wrote { all, full, failed };  // the whole block; the socket (or the grant) took less; error in `f`

// One send on a stream.
Wrote write_once(Stream& st, size_t index, std::span<const uint8_t> block, Sent& out,
                 SteadyClock::time_point& last_progress, const std::string& where, Failure& f) {
    const uint64_t want = std::min<uint64_t>(block.size(), st.cap - st.sent);
    if (want == 0) {
        st.sending = false;
        return Wrote::full;
    }
    const ssize_t w = ::send(st.fd.get(), block.data(), want, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
        st.sent += static_cast<uint64_t>(w);
        ++out.writes;
        last_progress = SteadyClock::now();
        return static_cast<uint64_t>(w) == want ? Wrote::all : Wrote::full;
    }
    if (w < 0 && (errno == EAGAIN || errno == EINTR)) return Wrote::full;
    f = errno_failure("send on stream " + std::to_string(index) + " to " + where, errno);
    return Wrote::failed;
}

// Sends on every stream until send_end or every grant is used, then FINs them all.
bool send_until(std::vector<Stream>& streams, const TcpBwSettings& s, SteadyClock::time_point send_end, Deadline d,
                const std::string& where, Sent& out, Failure& f) {
    PageBuffer buf(s.write_size);
    const std::span<uint8_t> block = buf.bytes();
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 131 + 7);
    const auto send_start = SteadyClock::now();
    auto now = send_start;
    auto last_progress = send_start;
    std::vector<pollfd> pfds;
    std::vector<size_t> idx;
    std::vector<size_t> ready;
    for (;;) {
        pfds.clear();
        idx.clear();
        for (size_t i = 0; i < streams.size(); ++i)
            if (streams[i].sending) {
                pfds.push_back({streams[i].fd.get(), POLLOUT, 0});
                idx.push_back(i);
            }
        now = SteadyClock::now();
        if (pfds.empty() || now >= send_end) break;
        // Pulled in (the daemon stopping): no figure from a run cut short.
        if (d.cancelled()) {
            f = {reason::timeout, "cancelled while sending to " + where};
            return false;
        }
        // To the end of sending, in slices when the deadline can be pulled in.
        const timespec ts = tcpsock::to_timespec(std::min(send_end - now, d.wait_slice()));
        const int rc = ::ppoll(pfds.data(), pfds.size(), &ts, nullptr);
        if (rc < 0 && errno != EINTR) {
            f = errno_failure("poll while sending", errno);
            return false;
        }
        // Rounds of one write per writable stream, as iperf3 makes them, rather than a burst
        // on one stream then the next: a stream handed 2 MiB at once queued it unsent, paced
        // out by timers (BBR) or by ACKs in the receiver's context, at 1.3x iperf3's CPU per
        // GB (issue 14). A stream leaves the rounds once its socket is full; 16 rounds at most.
        ready.clear();
        for (size_t k = 0; rc > 0 && k < pfds.size(); ++k)
            if (pfds[k].revents != 0) ready.push_back(idx[k]);
        for (int round = 0; round < 16 && !ready.empty(); ++round) {
            bool failed = false;
            std::erase_if(ready, [&](size_t i) {
                if (failed) return true;
                const Wrote w = write_once(streams[i], i, block, out, last_progress, where, f);
                failed = w == Wrote::failed;
                return w != Wrote::all;
            });
            if (failed) return false;
        }
    }
    out.sender_seconds = seconds_between(send_start, now);
    out.progress_seconds = seconds_between(send_start, last_progress);
    for (auto& st : streams) ::shutdown(st.fd.get(), SHUT_WR);
    return true;
}

// Reads one stream's report as far as it has come; false with `f` when it cannot arrive.
bool read_report(Stream& st, size_t index, const std::string& where, size_t& pending, Failure& f) {
    const ssize_t n = ::recv(st.fd.get(), st.report_buf.data() + st.report_got, st.report_buf.size() - st.report_got,
                             MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n < 0) {
        f = errno_failure("read report from " + where, errno);
        return false;
    }
    if (n == 0) {
        f = {reason::peer_closed, where + " closed stream " + std::to_string(index) + " without a report"};
        return false;
    }
    st.report_got += static_cast<size_t>(n);
    if (st.report_got < st.report_buf.size()) return true;
    st.report = tcpwire::decode_report(st.report_buf.data(), st.report_buf.size());
    if (!st.report) {
        f = {reason::protocol_error, where + " sent a malformed report"};
        return false;
    }
    --pending;
    return true;
}

// Each stream's server session answers once it has read our FIN.
bool collect_reports(std::vector<Stream>& streams, Deadline d, const std::string& where, const std::string& stall_note,
                     Failure& f) {
    size_t pending = streams.size();
    std::vector<pollfd> pfds;
    std::vector<size_t> idx;
    while (pending > 0) {
        pfds.clear();
        idx.clear();
        for (size_t i = 0; i < streams.size(); ++i)
            if (!streams[i].report) {
                pfds.push_back({streams[i].fd.get(), POLLIN, 0});
                idx.push_back(i);
            }
        const timespec ts = d.remaining_timespec();
        const int rc = ::ppoll(pfds.data(), pfds.size(), &ts, nullptr);
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0 && !d.expired()) continue;
        if (rc < 0) {
            f = errno_failure("poll for reports", errno);
            return false;
        }
        if (rc == 0) {
            f = {reason::timeout, where + ": " + std::to_string(pending) + " of " + std::to_string(streams.size()) +
                                      " streams sent no report before the deadline" + stall_note};
            return false;
        }
        for (size_t k = 0; k < pfds.size(); ++k)
            if (pfds[k].revents != 0 && !read_report(streams[idx[k]], idx[k], where, pending, f)) return false;
    }
    return true;
}

// The kernel buffers fill within milliseconds of a peer that stops reading; a second (or a
// quarter of the run) without progress is a peer that stalled, not a slow link.
std::string stall_note(const Sent& sent, uint64_t bytes) {
    if (sent.sender_seconds - sent.progress_seconds <= std::max(1.0, sent.sender_seconds / 4)) return "";
    return "; the peer stopped reading " + std::to_string(sent.progress_seconds).substr(0, 4) + " s into " +
           std::to_string(sent.sender_seconds).substr(0, 4) + " s of sending (" + std::to_string(bytes) +
           " bytes sent)";
}

// The figure from the reports: total bytes over the receiver's span, all streams together.
void score(const std::vector<Stream>& streams, const Sent& sent, const std::string& where, ProbeResult& r) {
    uint64_t total = 0;
    std::vector<tcpwire::Report> reports;
    r.bytes_per_stream.clear();
    std::string mismatch;
    for (size_t i = 0; i < streams.size(); ++i) {
        const auto& rep = *streams[i].report;
        r.bytes_per_stream.push_back(rep.bytes);
        total += rep.bytes;
        reports.push_back(rep);
        // TCP delivers every byte before the FIN, so anything else means the peer cut us.
        if (rep.bytes != streams[i].sent && mismatch.empty())
            mismatch = "stream " + std::to_string(i) + ": peer received " + std::to_string(rep.bytes) + " bytes of " +
                       std::to_string(streams[i].sent) + " sent (" + tcpwire::to_string(rep.code) + ")";
    }
    r.bytes = total;
    r.iterations = sent.writes;
    if (!mismatch.empty()) return fail(r, {reason::peer_closed, where + " " + mismatch});
    if (total == 0) return fail(r, {reason::no_data, where + " received no data"});
    const auto span = tcpwire::receiver_span(reports);
    // Everything arrived in one read: no receiver-side span to divide by.
    r.info["time_source"] = span.seconds > 0 ? "receiver" : "sender";
    const double seconds = span.seconds > 0 ? span.seconds : sent.sender_seconds;
    r.info["receiver_seconds"] = std::to_string(seconds);
    r.bandwidth_bits_per_second = bandwidth_bps(span.seconds > 0 ? span.bytes : total, seconds);
    r.success = true;
}

void run_bandwidth(const TcpProbeTarget& t, const TcpBwSettings& s, Deadline d, ProbeResult& r) {
    const std::string where = target_string(t);
    if (auto bad = check_settings(s)) return fail(r, *bad);
    r.streams = s.streams;
    std::vector<Stream> streams;
    uint32_t granted_ms = 0;
    Failure f;
    if (!open_streams(t, s, d, streams, granted_ms, f)) return fail(r, f);
    r.info["local_address"] = tcpsock::local_address(streams[0].fd.get());
    r.info["granted_duration_ms"] = std::to_string(granted_ms);

    // Leave part of the deadline for the FIN to drain and the reports to come back.
    const auto send_start = SteadyClock::now();
    const double left = seconds_between(send_start, d.at);
    const double reserve = std::clamp(left * 0.2, 0.05, 0.5);
    const double send_for = std::min({s.duration_seconds, granted_ms / 1000.0, left - reserve});
    if (send_for <= 0)
        return fail(r, {reason::timeout, "the deadline leaves no time to send (" + std::to_string(left) + " s left)"});
    Sent sent;
    if (!send_until(streams, s, send_start + from_seconds(send_for), d, where, sent, f)) return fail(r, f);
    uint64_t bytes = 0;
    for (const auto& st : streams) bytes += st.sent;
    r.info["sent_bytes"] = std::to_string(bytes);
    r.info["sender_seconds"] = std::to_string(sent.sender_seconds);
    if (!collect_reports(streams, d, where, stall_note(sent, bytes), f)) return fail(r, f);
    score(streams, sent, where, r);
}

}  // namespace

ProbeResult tcp_bandwidth(const TcpProbeTarget& t, const TcpBwSettings& s, Deadline d) {
    return run_probe(ProbeKind::tcp_bw, t, [&](ProbeResult& r) { run_bandwidth(t, s, d, r); });
}

}  // namespace rocewatch
