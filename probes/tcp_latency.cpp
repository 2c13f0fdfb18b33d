// The TCP latency probe: ping-pong against the peer's echo, half of each round trip.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "probes/stats.hpp"
#include "probes/tcp_client.hpp"
#include "probes/tcp_socket.hpp"

namespace rocewatch {

namespace {

using namespace tcpclient;

// One ping out and its echo back on a blocking socket whose calls `timeout` bounds.
// nullopt when the round trip completed, else why not.
std::optional<Failure> ping_pong(int fd, std::vector<uint8_t>& out, std::vector<uint8_t>& in,
                                 tcpsock::CallTimeout& timeout, const std::string& where, size_t done) {
    const auto timed_out = [&](const char* phase) {
        return Failure{reason::timeout, where + ": " + phase + " not done before the deadline" +
                                            (timeout.cancelled() ? " (cancelled)" : "") + ", after " +
                                            std::to_string(done) + " ping-pongs"};
    };
    for (size_t off = 0; off < out.size();) {
        if (!timeout.arm(SteadyClock::now())) return timed_out("send");
        const ssize_t w = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
        if (w > 0)
            off += static_cast<size_t>(w);
        else if (w < 0 && errno != EINTR && errno != EAGAIN)
            return errno_failure("send ping to " + where, errno);
    }
    for (size_t off = 0; off < in.size();) {
        if (!timeout.arm(SteadyClock::now())) return timed_out("echo");
        const ssize_t n = ::recv(fd, in.data() + off, in.size() - off, 0);
        if (n > 0)
            off += static_cast<size_t>(n);
        else if (n == 0)
            return Failure{reason::peer_closed,
                           where + " closed the connection after " + std::to_string(done) + " ping-pongs"};
        else if (errno != EINTR && errno != EAGAIN)
            return errno_failure("read echo from " + where, errno);
    }
    return std::nullopt;
}

void run_latency(const TcpProbeTarget& t, const TcpLatSettings& s, Deadline d, ProbeResult& r) {
    const std::string where = target_string(t);
    if (s.message_size == 0 || s.message_size > (1u << 20))
        return fail(r, {reason::bad_target, "message size must be 1 B..1 MiB"});
    if (s.iterations == 0) return fail(r, {reason::bad_target, "iterations must be positive"});
    if (!(s.max_duration_seconds > 0)) return fail(r, {reason::bad_target, "duration must be positive"});
    r.streams = 1;

    Failure f;
    auto fd = connect_to(t, d, 0, f);
    if (!fd) return fail(r, f);
    tcpwire::Request req;
    req.mode = tcpwire::Mode::echo;
    req.message_size = s.message_size;
    req.duration_ms = tcpsock::to_ms(s.max_duration_seconds);
    req.max_bytes = static_cast<uint64_t>(s.iterations) * s.message_size;
    const auto reply = handshake(fd->get(), req, t.token, d, where, f);
    if (!reply) return fail(r, f);
    r.info["local_address"] = tcpsock::local_address(fd->get());
    r.info["granted_duration_ms"] = std::to_string(reply->duration_ms);
    tcpsock::set_int_opt(fd->get(), IPPROTO_TCP, TCP_NODELAY, 1);
    // Blocking calls with SO_RCVTIMEO: one syscall per send and per recv, as perftest does.
    if (!tcpsock::make_blocking(fd->get())) return fail(r, errno_failure("make socket blocking", errno));

    const auto start = SteadyClock::now();
    // A little of the deadline is kept back so a run that ends on its duration ends cleanly.
    const auto reserve = std::min<SteadyClock::duration>(d.remaining() / 20, std::chrono::milliseconds(50));
    const auto run_end = std::min({start + from_seconds(s.max_duration_seconds),
                                   start + std::chrono::milliseconds(reply->duration_ms), d.at - reserve});
    const uint64_t max_iters = std::min<uint64_t>(s.iterations,
                                                  std::min(reply->max_bytes, req.max_bytes) / s.message_size);

    std::vector<uint8_t> out(s.message_size, 0x5a), in(s.message_size);
    std::vector<double> rtts;
    rtts.reserve(max_iters);
    tcpsock::CallTimeout timeout(fd->get(), d);
    while (rtts.size() < max_iters) {
        const auto t0 = SteadyClock::now();
        if (t0 >= run_end) break;
        // Pulled in (the daemon stopping): what was measured so far is not the run asked for.
        if (d.cancelled())
            return fail(r,
                        {reason::timeout, where + ": cancelled after " + std::to_string(rtts.size()) + " ping-pongs"});
        if (auto bad = ping_pong(fd->get(), out, in, timeout, where, rtts.size())) return fail(r, *bad);
        rtts.push_back(seconds_between(t0, SteadyClock::now()));
    }
    if (rtts.empty()) return fail(r, {reason::timeout, where + ": no ping-pong completed before the deadline"});
    r.iterations = rtts.size();
    r.bytes = rtts.size() * static_cast<uint64_t>(s.message_size);
    r.info["message_size"] = std::to_string(s.message_size);
    r.latency = latency_stats(half_round_trips(std::move(rtts)));
    r.success = true;
}

}  // namespace

ProbeResult tcp_latency(const TcpProbeTarget& t, const TcpLatSettings& s, Deadline d) {
    return run_probe(ProbeKind::tcp_lat, t, [&](ProbeResult& r) { run_latency(t, s, d, r); });
}

}  // namespace rocewatch
