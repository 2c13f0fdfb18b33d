// TCP probe data port server and the TCP bandwidth/latency probes, over non-blocking
// sockets where every wait is bounded by a deadline.
#include "probes/tcp.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/logger.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include <stdexcept>
#include <utility>
#include <vector>

#include "probes/errors.hpp"
#include "probes/stats.hpp"

namespace rocewatch {

namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;
using Seconds = std::chrono::duration<double>;

int64_t mono_ns(SteadyClock::time_point t = SteadyClock::now()) {
    return duration_cast<nanoseconds>(t.time_since_epoch()).count();
}

double seconds_between(SteadyClock::time_point a, SteadyClock::time_point b) {
    return Seconds(b - a).count();
}

SteadyClock::duration from_seconds(double s) {
    return duration_cast<SteadyClock::duration>(Seconds(s));
}

timespec to_timespec(SteadyClock::duration d) {
    const int64_t ns = std::max<int64_t>(0, duration_cast<nanoseconds>(d).count());
    return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

// Owns one file descriptor.
class Fd {
 public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;

    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }
    bool valid() const { return fd_ >= 0; }
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

 private:
    int fd_ = -1;
};

struct Endpoint {
    sockaddr_storage addr{};
    socklen_t len = 0;
    int family() const { return addr.ss_family; }
};

// Numeric addresses only: name resolution can block past any deadline, so it is the
// caller's job (the scheduler resolves peers before it probes them).
std::optional<Endpoint> numeric_endpoint(const std::string& host, uint16_t port) {
    addrinfo hints{};
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || res == nullptr) return std::nullopt;
    Endpoint e;
    std::memcpy(&e.addr, res->ai_addr, res->ai_addrlen);
    e.len = res->ai_addrlen;
    ::freeaddrinfo(res);
    return e;
}

std::string endpoint_string(const sockaddr_storage& a) {
    char host[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (a.ss_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
        ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    if (a.ss_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
    }
    return "[" + std::string(host) + "]:" + std::to_string(port);
}

std::string local_address(int fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
    return endpoint_string(a);
}

void set_int_opt(int fd, int level, int name, int value) {
    (void)::setsockopt(fd, level, name, &value, sizeof value);
}

// ---------------------------------------------------------------- client helpers

struct Failure {
    std::string reason;
    std::string detail;
};

Failure errno_failure(const std::string& what, int err) { return {reason_from_errno(err), errno_detail(what, err)}; }

// Waits for `events` on one fd until the deadline: 1 ready, 0 deadline passed, -1 error.
int wait_fd(int fd, short events, Deadline d, short* revents = nullptr) {
    for (;;) {
        pollfd p{fd, events, 0};
        const timespec ts = d.remaining_timespec();
        const int rc = ::ppoll(&p, 1, &ts, nullptr);
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0 && !d.expired()) continue;  // the end of a slice, not of the deadline
        if (rc > 0 && revents) *revents = p.revents;
        return rc;
    }
}

std::string target_string(const TcpProbeTarget& t) {
    return (t.address.find(':') != std::string::npos ? "[" + t.address + "]" : t.address) + ":" +
           std::to_string(t.port);
}

// Non-blocking socket connected to the target's data port within the deadline.
std::optional<Fd> connect_to(const TcpProbeTarget& t, Deadline d, int sndbuf, Failure& f) {
    const std::string where = target_string(t);
    const auto ep = numeric_endpoint(t.address, t.port);
    if (!ep || t.port == 0) {
        f = {reason::bad_target, "not a numeric IPv4/IPv6 address and port: '" + where +
                                     "' (names are resolved before probing)"};
        return std::nullopt;
    }
    Fd fd(::socket(ep->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
        f = errno_failure("socket for " + where, errno);
        return std::nullopt;
    }
    if (!t.bind_interface.empty()) {
        if (t.bind_interface.size() >= IFNAMSIZ) {
            f = {reason::local_bind_failed, "interface name too long: " + t.bind_interface};
            return std::nullopt;
        }
        if (::setsockopt(fd.get(), SOL_SOCKET, SO_BINDTODEVICE, t.bind_interface.c_str(),
                         static_cast<socklen_t>(t.bind_interface.size())) != 0) {
            const int err = errno;
            f = errno_failure("bind to interface " + t.bind_interface, err);
            if (err == ENODEV) f.reason = reason::local_bind_failed;
            return std::nullopt;
        }
    }
    if (!t.bind_address.empty()) {
        const auto local = numeric_endpoint(t.bind_address, 0);
        if (!local || local->family() != ep->family()) {
            f = {reason::local_bind_failed,
                 "source address '" + t.bind_address + "' is not a numeric address of the target's family"};
            return std::nullopt;
        }
        if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local->addr), local->len) != 0) {
            const int err = errno;
            f = errno_failure("bind to " + t.bind_address, err);
            f.reason = reason::local_bind_failed;
            return std::nullopt;
        }
    }
    if (sndbuf > 0) set_int_opt(fd.get(), SOL_SOCKET, SO_SNDBUF, sndbuf);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&ep->addr), ep->len) != 0) {
        if (errno != EINPROGRESS) {
            f = errno_failure("connect to " + where, errno);
            return std::nullopt;
        }
        const int rc = wait_fd(fd.get(), POLLOUT, d);
        if (rc == 0) {
            f = {reason::timeout, "connect to " + where + ": no answer before the deadline"};
            return std::nullopt;
        }
        if (rc < 0) {
            f = errno_failure("poll while connecting to " + where, errno);
            return std::nullopt;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err != 0) {
            f = errno_failure("connect to " + where, err);
            return std::nullopt;
        }
    }
    return fd;
}

bool send_all(int fd, const uint8_t* p, size_t n, Deadline d, const std::string& what, Failure& f) {
    size_t off = 0;
    while (off < n) {
        const ssize_t w = ::send(fd, p + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            off += static_cast<size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno != EAGAIN) {
            f = errno_failure(what, errno);
            return false;
        }
        const int rc = wait_fd(fd, POLLOUT, d);
        if (rc == 0) {
            f = {reason::timeout, what + ": peer not reading before the deadline"};
            return false;
        }
        if (rc < 0) {
            f = errno_failure(what, errno);
            return false;
        }
    }
    return true;
}

bool recv_exact(int fd, uint8_t* p, size_t n, Deadline d, const std::string& what, Failure& f) {
    size_t off = 0;
    while (off < n) {
        const ssize_t r = ::recv(fd, p + off, n - off, MSG_DONTWAIT);
        if (r > 0) {
            off += static_cast<size_t>(r);
            continue;
        }
        if (r == 0) {
            f = {reason::peer_closed, what + ": peer closed the connection after " + std::to_string(off) +
                                          " of " + std::to_string(n) + " bytes"};
            return false;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) {
            f = errno_failure(what, errno);
            return false;
        }
        const int rc = wait_fd(fd, POLLIN, d);
        if (rc == 0) {
            f = {reason::timeout, what + ": no answer before the deadline"};
            return false;
        }
        if (rc < 0) {
            f = errno_failure(what, errno);
            return false;
        }
    }
    return true;
}

// Sends the request and reads the reply; a refusal becomes a failure with its reason.
std::optional<tcpwire::Reply> handshake(int fd, const tcpwire::Request& req, Deadline d, const std::string& where,
                                        Failure& f) {
    const auto out = tcpwire::encode(req);
    if (!send_all(fd, out.data(), out.size(), d, "send request to " + where, f)) return std::nullopt;
    std::array<uint8_t, tcpwire::kReplySize> in{};
    if (!recv_exact(fd, in.data(), in.size(), d, "read reply from " + where, f)) return std::nullopt;
    const auto reply = tcpwire::decode_reply(in.data(), in.size());
    if (!reply) {
        f = {reason::protocol_error, where + " is not a rocewatch probe port (bad reply magic)"};
        return std::nullopt;
    }
    if (reply->code != tcpwire::Code::ok) {
        f = {reason_from_reply_code(reply->code),
             where + " refused the probe: " + tcpwire::to_string(reply->code) +
                 (reply->code == tcpwire::Code::unsupported_version
                      ? " (peer speaks version " + std::to_string(reply->version) + ", we speak " +
                            std::to_string(tcpwire::kVersion) + ")"
                      : "")};
        return std::nullopt;
    }
    return reply;
}

ProbeResult begin_result(ProbeKind kind, const TcpProbeTarget& t) {
    ProbeResult r;
    r.kind = kind;
    r.peer = t.peer.empty() ? t.address : t.peer;
    r.rail = t.rail;
    r.started = Clock::now();
    return r;
}

void fail(ProbeResult& r, const Failure& f) {
    r.success = false;
    r.reason = f.reason.empty() ? reason::socket_error : f.reason;
    r.detail = f.detail;
}

uint32_t to_ms(double seconds) {
    const double ms = std::ceil(seconds * 1000.0);
    return ms >= static_cast<double>(std::numeric_limits<uint32_t>::max())
               ? std::numeric_limits<uint32_t>::max()
               : static_cast<uint32_t>(std::max(ms, 0.0));
}

// ---------------------------------------------------------------- bandwidth

struct Stream {
    Fd fd;
    uint64_t cap = 0;    // bytes this stream may send: the peer's grant, our share of max_bytes
    uint64_t sent = 0;
    bool sending = true;
    std::array<uint8_t, tcpwire::kReportSize> report_buf{};
    size_t report_got = 0;
    std::optional<tcpwire::Report> report;
};

void run_bandwidth(const TcpProbeTarget& t, const TcpBwSettings& s, Deadline d, ProbeResult& r) {
    const std::string where = target_string(t);
    if (s.streams == 0 || s.streams > 128) return fail(r, {reason::bad_target, "streams must be 1..128"});
    if (!(s.duration_seconds > 0)) return fail(r, {reason::bad_target, "duration must be positive"});
    if (s.write_size == 0 || s.write_size > (16u << 20))
        return fail(r, {reason::bad_target, "write size must be 1 B..16 MiB"});
    r.streams = s.streams;

    tcpwire::Request req;
    req.mode = tcpwire::Mode::sink;
    req.duration_ms = to_ms(s.duration_seconds);
    req.max_bytes = s.max_bytes ? (s.max_bytes + s.streams - 1) / s.streams : std::numeric_limits<uint64_t>::max();
    req.token = t.token;

    std::vector<Stream> streams(s.streams);
    uint32_t granted_ms = req.duration_ms;
    Failure f;
    for (uint32_t i = 0; i < s.streams; ++i) {
        auto fd = connect_to(t, d, s.socket_buffer_bytes, f);
        if (!fd) return fail(r, f);
        const auto reply = handshake(fd->get(), req, d, where, f);
        if (!reply) return fail(r, f);
        streams[i].fd = std::move(*fd);
        streams[i].cap = std::min(reply->max_bytes, req.max_bytes);
        granted_ms = std::min(granted_ms, reply->duration_ms);
    }
    r.info["local_address"] = local_address(streams[0].fd.get());
    r.info["granted_duration_ms"] = std::to_string(granted_ms);

    // Leave part of the deadline for the FIN to drain and the reports to come back.
    const auto send_start = SteadyClock::now();
    const double left = seconds_between(send_start, d.at);
    const double reserve = std::clamp(left * 0.2, 0.05, 0.5);
    const double send_for = std::min({s.duration_seconds, granted_ms / 1000.0, left - reserve});
    if (send_for <= 0)
        return fail(r, {reason::timeout, "the deadline leaves no time to send (" + std::to_string(left) + " s left)"});
    const auto send_end = send_start + from_seconds(send_for);

    std::vector<uint8_t> block(s.write_size);
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 131 + 7);
    std::vector<pollfd> pfds;
    uint64_t writes = 0;
    auto now = SteadyClock::now();
    auto last_progress = send_start;  // last time any stream's send() took bytes
    for (;;) {
        pfds.clear();
        std::vector<size_t> idx;
        for (size_t i = 0; i < streams.size(); ++i)
            if (streams[i].sending) {
                pfds.push_back({streams[i].fd.get(), POLLOUT, 0});
                idx.push_back(i);
            }
        now = SteadyClock::now();
        if (pfds.empty() || now >= send_end) break;
        const timespec ts = to_timespec(send_end - now);
        const int rc = ::ppoll(pfds.data(), pfds.size(), &ts, nullptr);
        if (rc < 0 && errno != EINTR) return fail(r, errno_failure("poll while sending", errno));
        if (rc <= 0) continue;
        for (size_t k = 0; k < pfds.size(); ++k) {
            if (pfds[k].revents == 0) continue;
            Stream& st = streams[idx[k]];
            // A few writes per wake-up keep the streams fair without a syscall per poll.
            for (int burst = 0; burst < 16 && st.sending; ++burst) {
                const uint64_t want = std::min<uint64_t>(block.size(), st.cap - st.sent);
                if (want == 0) {
                    st.sending = false;
                    break;
                }
                const ssize_t w = ::send(st.fd.get(), block.data(), want, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w > 0) {
                    st.sent += static_cast<uint64_t>(w);
                    ++writes;
                    last_progress = SteadyClock::now();
                    continue;
                }
                if (w < 0 && (errno == EAGAIN || errno == EINTR)) break;
                return fail(r, errno_failure("send on stream " + std::to_string(idx[k]) + " to " + where, errno));
            }
        }
    }
    const double sender_seconds = seconds_between(send_start, now);
    for (auto& st : streams) ::shutdown(st.fd.get(), SHUT_WR);
    uint64_t sent = 0;
    for (const auto& st : streams) sent += st.sent;
    r.info["sent_bytes"] = std::to_string(sent);
    r.info["sender_seconds"] = std::to_string(sender_seconds);
    // The kernel buffers fill within milliseconds of a peer that stops reading; a second
    // (or a quarter of the run) without progress is a peer that stalled, not a slow link.
    const double progress_seconds = seconds_between(send_start, last_progress);
    const bool stalled = sender_seconds - progress_seconds > std::max(1.0, sender_seconds / 4);
    const std::string stall_note =
        stalled ? "; the peer stopped reading " + std::to_string(progress_seconds).substr(0, 4) + " s into " +
                      std::to_string(sender_seconds).substr(0, 4) + " s of sending (" + std::to_string(sent) +
                      " bytes sent)"
                : "";

    // Reports: each stream's server session answers once it has read our FIN.
    size_t pending = streams.size();
    while (pending > 0) {
        pfds.clear();
        std::vector<size_t> idx;
        for (size_t i = 0; i < streams.size(); ++i)
            if (!streams[i].report) {
                pfds.push_back({streams[i].fd.get(), POLLIN, 0});
                idx.push_back(i);
            }
        const timespec ts = d.remaining_timespec();
        const int rc = ::ppoll(pfds.data(), pfds.size(), &ts, nullptr);
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0 && !d.expired()) continue;
        if (rc < 0) return fail(r, errno_failure("poll for reports", errno));
        if (rc == 0)
            return fail(r, {reason::timeout, where + ": " + std::to_string(pending) + " of " +
                                                 std::to_string(streams.size()) +
                                                 " streams sent no report before the deadline" + stall_note});
        for (size_t k = 0; k < pfds.size(); ++k) {
            if (pfds[k].revents == 0) continue;
            Stream& st = streams[idx[k]];
            const ssize_t n = ::recv(st.fd.get(), st.report_buf.data() + st.report_got,
                                     st.report_buf.size() - st.report_got, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n < 0) return fail(r, errno_failure("read report from " + where, errno));
            if (n == 0)
                return fail(r, {reason::peer_closed, where + " closed stream " + std::to_string(idx[k]) +
                                                         " without a report"});
            st.report_got += static_cast<size_t>(n);
            if (st.report_got < st.report_buf.size()) continue;
            st.report = tcpwire::decode_report(st.report_buf.data(), st.report_buf.size());
            if (!st.report) return fail(r, {reason::protocol_error, where + " sent a malformed report"});
            --pending;
        }
    }

    uint64_t total = 0;
    int64_t first = std::numeric_limits<int64_t>::max();
    int64_t last = std::numeric_limits<int64_t>::min();
    r.bytes_per_stream.clear();
    std::string mismatch;
    for (size_t i = 0; i < streams.size(); ++i) {
        const auto& rep = *streams[i].report;
        r.bytes_per_stream.push_back(rep.bytes);
        total += rep.bytes;
        if (rep.bytes > 0) {
            first = std::min(first, rep.first_ns);
            last = std::max(last, rep.last_ns);
        }
        // TCP delivers every byte before the FIN, so anything else means the peer cut us.
        if (rep.bytes != streams[i].sent && mismatch.empty())
            mismatch = "stream " + std::to_string(i) + ": peer received " + std::to_string(rep.bytes) +
                       " bytes of " + std::to_string(streams[i].sent) + " sent (" + tcpwire::to_string(rep.code) + ")";
    }
    r.bytes = total;
    r.iterations = writes;
    if (!mismatch.empty()) return fail(r, {reason::peer_closed, where + " " + mismatch});
    if (total == 0) return fail(r, {reason::no_data, where + " received no data"});
    double receiver_seconds = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
    if (receiver_seconds <= 0) {
        // Everything arrived in one read: no receiver-side span to divide by.
        receiver_seconds = sender_seconds;
        r.info["time_source"] = "sender";
    } else {
        r.info["time_source"] = "receiver";
    }
    r.info["receiver_seconds"] = std::to_string(receiver_seconds);
    r.bandwidth_bits_per_second = bandwidth_bps(total, receiver_seconds);
    r.success = true;
}

// ---------------------------------------------------------------- latency

// Keeps SO_RCVTIMEO/SO_SNDTIMEO on a blocking socket short enough that any one call ends
// by the deadline: one syscall per send/recv instead of poll + recv, re-armed only when
// half of the time left has passed.
class CallTimeout {
 public:
    // `cap` bounds each wait too (an idle limit), on top of the deadline.
    CallTimeout(int fd, Deadline d, SteadyClock::duration cap = SteadyClock::duration::max())
        : fd_(fd), d_(d), cap_(cap) {}
    // False once the deadline has passed.
    bool arm(SteadyClock::time_point now) {
        if (now >= d_.at) return false;
        if (armed_ && now + armed_for_ <= d_.at) return true;
        const auto left = d_.at - now;
        const auto t = std::min(left >= std::chrono::milliseconds(2) ? left / 2 : left, cap_);
        const int64_t us = std::max<int64_t>(1, duration_cast<std::chrono::microseconds>(t).count());
        const timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
        if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
            ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
            return false;
        armed_for_ = std::chrono::microseconds(us);
        armed_ = true;
        return true;
    }

 private:
    int fd_;
    Deadline d_;
    SteadyClock::duration cap_;
    bool armed_ = false;
    SteadyClock::duration armed_for_{};
};

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
    req.duration_ms = to_ms(s.max_duration_seconds);
    req.max_bytes = static_cast<uint64_t>(s.iterations) * s.message_size;
    req.token = t.token;
    const auto reply = handshake(fd->get(), req, d, where, f);
    if (!reply) return fail(r, f);
    r.info["local_address"] = local_address(fd->get());
    set_int_opt(fd->get(), IPPROTO_TCP, TCP_NODELAY, 1);
    const int flags = ::fcntl(fd->get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd->get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
        return fail(r, errno_failure("make socket blocking", errno));

    const auto start = SteadyClock::now();
    // A little of the deadline is kept back so a run that ends on its duration ends cleanly.
    const auto reserve = std::min<SteadyClock::duration>(d.remaining() / 20, std::chrono::milliseconds(50));
    const auto run_end = std::min({start + from_seconds(s.max_duration_seconds),
                                   start + std::chrono::milliseconds(reply->duration_ms), d.at - reserve});
    const uint64_t max_iters =
        std::min<uint64_t>(s.iterations, std::min(reply->max_bytes, req.max_bytes) / s.message_size);

    std::vector<uint8_t> out(s.message_size, 0x5a), in(s.message_size);
    std::vector<double> rtts;
    rtts.reserve(max_iters);
    CallTimeout timeout(fd->get(), d);
    const auto timed_out = [&](const char* phase) {
        return Failure{reason::timeout, where + ": " + phase + " not done before the deadline, after " +
                                            std::to_string(rtts.size()) + " ping-pongs"};
    };
    while (rtts.size() < max_iters) {
        const auto t0 = SteadyClock::now();
        if (t0 >= run_end) break;
        size_t off = 0;
        while (off < out.size()) {
            if (!timeout.arm(SteadyClock::now())) return fail(r, timed_out("send"));
            const ssize_t w = ::send(fd->get(), out.data() + off, out.size() - off, MSG_NOSIGNAL);
            if (w > 0) {
                off += static_cast<size_t>(w);
            } else if (w < 0 && errno != EINTR && errno != EAGAIN) {
                return fail(r, errno_failure("send ping to " + where, errno));
            }
        }
        off = 0;
        while (off < in.size()) {
            if (!timeout.arm(SteadyClock::now())) return fail(r, timed_out("echo"));
            const ssize_t n = ::recv(fd->get(), in.data() + off, in.size() - off, 0);
            if (n > 0) {
                off += static_cast<size_t>(n);
            } else if (n == 0) {
                return fail(r, {reason::peer_closed, where + " closed the connection after " +
                                                         std::to_string(rtts.size()) + " ping-pongs"});
            } else if (errno != EINTR && errno != EAGAIN) {
                return fail(r, errno_failure("read echo from " + where, errno));
            }
        }
        rtts.push_back(seconds_between(t0, SteadyClock::now()));
    }
    if (rtts.empty()) return fail(r, {reason::timeout, where + ": no ping-pong completed before the deadline"});
    r.iterations = rtts.size();
    r.bytes = rtts.size() * static_cast<uint64_t>(s.message_size);
    r.info["message_size"] = std::to_string(s.message_size);
    r.latency = latency_stats(half_round_trips(std::move(rtts)));
    r.success = true;
}

template <typename Body>
ProbeResult run_probe(ProbeKind kind, const TcpProbeTarget& t, Body body) {
    ProbeResult r = begin_result(kind, t);
    const auto t0 = SteadyClock::now();
    try {
        body(r);
    } catch (const std::exception& e) {
        fail(r, {reason::internal_error, std::string("exception: ") + e.what()});
    } catch (...) {
        fail(r, {reason::internal_error, "unknown exception"});
    }
    r.duration_seconds = seconds_between(t0, SteadyClock::now());
    return r;
}

}  // namespace

ProbeResult tcp_bandwidth(const TcpProbeTarget& t, const TcpBwSettings& s, Deadline d) {
    return run_probe(ProbeKind::tcp_bw, t, [&](ProbeResult& r) { run_bandwidth(t, s, d, r); });
}

ProbeResult tcp_latency(const TcpProbeTarget& t, const TcpLatSettings& s, Deadline d) {
    return run_probe(ProbeKind::tcp_lat, t, [&](ProbeResult& r) { run_latency(t, s, d, r); });
}

// ---------------------------------------------------------------- server

struct TcpProbeServer::Session {
    enum class Phase { handshake, sink, echo, closing };

    Fd fd;
    std::string peer;  // "addr:port" for logs
    Phase phase = Phase::handshake;
    std::array<uint8_t, tcpwire::kRequestSize> hdr{};
    size_t hdr_got = 0;
    std::vector<uint8_t> out;  // pending write; nothing is read while it is non-empty
    size_t out_off = 0;
    Phase after_out = Phase::closing;
    tcpwire::Reply grant;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    SteadyClock::time_point deadline{};       // end of handshake, then end of the grant + grace
    SteadyClock::time_point last_progress{};
    bool dead = false;
    bool data_session = false;  // counted against max_sessions
    uint32_t events = 0;        // what epoll watches for now
};

std::unique_ptr<TcpProbeServer> TcpProbeServer::create(const std::string& bind_addr, uint16_t port,
                                                       const ProbeToken& token, TcpServerLimits limits,
                                                       std::shared_ptr<spdlog::logger> log) {
    // "" listens on every address: IPv6 any with dual stack, IPv4 any where IPv6 is off.
    std::optional<Endpoint> ep = numeric_endpoint(bind_addr.empty() ? "::" : bind_addr, port);
    if (!ep) throw std::runtime_error("probe data port: not a numeric address: '" + bind_addr + "'");
    Fd fd(::socket(ep->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid() && bind_addr.empty() && errno == EAFNOSUPPORT) {
        ep = numeric_endpoint("0.0.0.0", port);
        fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    }
    if (!fd.valid()) throw std::runtime_error(errno_detail("probe data port: socket", errno));
    set_int_opt(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1);
    if (ep->family() == AF_INET6 && bind_addr.empty()) set_int_opt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, 0);
    if (limits.socket_buffer_bytes > 0) {
        set_int_opt(fd.get(), SOL_SOCKET, SO_RCVBUF, limits.socket_buffer_bytes);
        set_int_opt(fd.get(), SOL_SOCKET, SO_SNDBUF, limits.socket_buffer_bytes);
    }
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ep->addr), ep->len) != 0)
        throw std::runtime_error(errno_detail("probe data port: bind " + endpoint_string(ep->addr), errno));
    if (::listen(fd.get(), 128) != 0) throw std::runtime_error(errno_detail("probe data port: listen", errno));
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0)
        throw std::runtime_error(errno_detail("probe data port: getsockname", errno));
    const uint16_t actual = bound.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                                                       : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    Fd efd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!efd.valid()) throw std::runtime_error(errno_detail("probe data port: eventfd", errno));
    std::unique_ptr<TcpProbeServer> s(
        new TcpProbeServer(fd.release(), efd.release(), actual, token, limits, std::move(log)));
    if (s->log_) s->log_->info("probe data port listening on {}", endpoint_string(bound));
    return s;
}

TcpProbeServer::TcpProbeServer(int listen_fd, int stop_fd, uint16_t port, const ProbeToken& token,
                               TcpServerLimits limits, std::shared_ptr<spdlog::logger> log)
    : listen_fd_(listen_fd), stop_fd_(stop_fd), port_(port), token_(token), limits_(limits), log_(std::move(log)) {}

TcpProbeServer::~TcpProbeServer() {
    stop();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
}

void TcpProbeServer::start() {
    std::lock_guard lk(lifecycle_mutex_);
    if (thread_.joinable()) return;
    uint64_t drain = 0;
    while (::read(stop_fd_, &drain, sizeof drain) > 0) {
    }
    thread_ = std::thread([this] { run(); });
}

void TcpProbeServer::stop() {
    std::lock_guard lk(lifecycle_mutex_);
    if (!thread_.joinable()) return;
    const uint64_t one = 1;
    while (::write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
    thread_.join();
}

TcpProbeServer::Stats TcpProbeServer::stats() const {
    Stats s;
    s.connections = counters_.connections.load();
    s.sessions = counters_.sessions.load();
    s.auth_refused = counters_.auth_refused.load();
    s.busy = counters_.busy.load();
    s.bad_requests = counters_.bad_requests.load();
    s.cut = counters_.cut.load();
    s.bytes_received = counters_.bytes_received.load();
    s.bytes_echoed = counters_.bytes_echoed.load();
    s.active = counters_.active.load();
    return s;
}

void TcpProbeServer::run() {
    using Phase = Session::Phase;
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<uint8_t> scratch(256 * 1024);
    SteadyClock::time_point accept_paused_until{};
    const auto handshake_timeout = from_seconds(limits_.handshake_timeout_seconds);
    const auto idle_timeout = from_seconds(limits_.idle_timeout_seconds);

    // Echo sessions run on a thread each (at most max_sessions of them): a blocking
    // recv/send loop answers a ping-pong as fast as a dedicated tool does, where an event
    // loop adds a readiness wake-up and a second syscall to every round trip (~5% of a
    // veth round trip, see bench/). The worker only uses the fd; it is closed here after
    // the join, so stop() can shutdown() it to wake a blocked worker.
    struct EchoWorker {
        Fd fd;
        std::thread thread;
        std::atomic<bool> done{false};
    };
    std::vector<std::unique_ptr<EchoWorker>> workers;
    std::atomic<uint32_t> live_workers{0};

    const auto count_data_sessions = [&] {
        return live_workers.load() + static_cast<uint32_t>(std::count_if(
                                         sessions.begin(), sessions.end(), [](const auto& s) { return s->data_session; }));
    };

    const auto echo_loop = [this, idle_timeout](
                               EchoWorker& w, std::string peer, tcpwire::Reply grant, SteadyClock::time_point end) {
        const int fd = w.fd.get();
        const int flags = ::fcntl(fd, F_GETFL);
        std::vector<uint8_t> msg(grant.message_size);
        uint64_t echoed = 0;
        const char* why = "peer closed";
        if (flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0) {
            CallTimeout timeout(fd, Deadline{end}, idle_timeout);
            auto last_progress = SteadyClock::now();
            // Each blocking call ends by the grant's end and within the idle limit.
            const auto io = [&](bool in, size_t off) -> ssize_t {
                for (;;) {
                    const auto now = SteadyClock::now();
                    if (!timeout.arm(now)) {
                        why = "grant expired";
                        return -1;
                    }
                    if (now - last_progress >= idle_timeout) {
                        why = "idle";
                        return -1;
                    }
                    const ssize_t n = in ? ::recv(fd, msg.data() + off, msg.size() - off, 0)
                                         : ::send(fd, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
                    if (n > 0) last_progress = SteadyClock::now();
                    if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
                }
            };
            for (bool alive = true; alive;) {
                for (size_t off = 0; alive && off < msg.size();) {
                    const ssize_t n = io(true, off);
                    alive = n > 0;
                    if (alive) off += static_cast<size_t>(n);
                }
                if (!alive) break;
                if (echoed + msg.size() > grant.max_bytes) {
                    why = "over its byte grant";
                    break;
                }
                for (size_t off = 0; alive && off < msg.size();) {
                    const ssize_t n = io(false, off);
                    alive = n > 0;
                    if (alive) off += static_cast<size_t>(n);
                }
                if (alive) {
                    echoed += msg.size();
                    counters_.bytes_echoed += msg.size();
                }
            }
        }
        if (std::string_view(why) != "peer closed") ++counters_.cut;
        if (log_) log_->debug("probe port: {} echo session ended ({}), {} bytes echoed", peer, why, echoed);
    };

    // Writes what is queued; false when the session is finished or broken.
    const auto flush = [&](Session& s) {
        while (s.out_off < s.out.size()) {
            const ssize_t w = ::send(s.fd.get(), s.out.data() + s.out_off, s.out.size() - s.out_off,
                                     MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) {
                s.out_off += static_cast<size_t>(w);
                s.last_progress = SteadyClock::now();
                continue;
            }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && errno == EAGAIN) return true;
            return false;
        }
        s.out.clear();
        s.out_off = 0;
        s.phase = s.after_out;
        return s.phase != Phase::closing;
    };
    const auto queue = [&](Session& s, const uint8_t* p, size_t n, Phase next) {
        s.out.assign(p, p + n);
        s.out_off = 0;
        s.after_out = next;
        return flush(s);
    };
    const auto refuse = [&](Session& s, tcpwire::Code code) {
        tcpwire::Reply rep;
        rep.code = code;
        const auto b = tcpwire::encode(rep);
        (void)queue(s, b.data(), b.size(), Phase::closing);
        // Closed whether or not the 24 bytes went out: a refused peer gets no second chance.
        return false;
    };
    const auto send_report = [&](Session& s, tcpwire::Code code) {
        tcpwire::Report rep;
        rep.code = code;
        rep.bytes = s.bytes_in;
        rep.first_ns = s.first_ns;
        rep.last_ns = s.last_ns;
        const auto b = tcpwire::encode(rep);
        return queue(s, b.data(), b.size(), Phase::closing);
    };

    const auto on_handshake = [&](Session& s) {
        const ssize_t n = ::recv(s.fd.get(), s.hdr.data() + s.hdr_got, s.hdr.size() - s.hdr_got, MSG_DONTWAIT);
        if (n < 0) return errno == EAGAIN || errno == EINTR;
        if (n == 0) return false;
        s.hdr_got += static_cast<size_t>(n);
        if (s.hdr_got < s.hdr.size()) return true;
        const auto req = tcpwire::decode_request(s.hdr.data(), s.hdr.size());
        if (!req) {
            ++counters_.bad_requests;
            if (log_) log_->debug("probe port: {} is not speaking the probe protocol", s.peer);
            return false;
        }
        if (req->version != tcpwire::kVersion) {
            ++counters_.bad_requests;
            return refuse(s, tcpwire::Code::unsupported_version);
        }
        if (!token_equal(req->token, token_)) {
            ++counters_.auth_refused;
            if (log_) log_->warn("probe port: {} presented a wrong token", s.peer);
            return refuse(s, tcpwire::Code::auth_refused);
        }
        const bool echo = req->mode == tcpwire::Mode::echo;
        if ((!echo && req->mode != tcpwire::Mode::sink) ||
            (echo && (req->message_size == 0 || req->message_size > limits_.max_message_size))) {
            ++counters_.bad_requests;
            return refuse(s, tcpwire::Code::bad_request);
        }
        if (count_data_sessions() >= limits_.max_sessions) {
            ++counters_.busy;
            return refuse(s, tcpwire::Code::busy);
        }
        s.grant.code = tcpwire::Code::ok;
        s.grant.duration_ms = std::min<uint32_t>(req->duration_ms, to_ms(limits_.max_session_seconds));
        s.grant.max_bytes = std::min(req->max_bytes, limits_.max_bytes_per_session);
        s.grant.message_size = echo ? req->message_size : 0;
        s.data_session = true;
        s.deadline = SteadyClock::now() + std::chrono::milliseconds(s.grant.duration_ms) +
                     from_seconds(limits_.grace_seconds);
        if (echo) set_int_opt(s.fd.get(), IPPROTO_TCP, TCP_NODELAY, 1);
        ++counters_.sessions;
        if (log_)
            log_->debug("probe port: {} {} session, {} ms, {} bytes", s.peer, tcpwire::to_string(req->mode),
                        s.grant.duration_ms, s.grant.max_bytes);
        const auto b = tcpwire::encode(s.grant);
        return queue(s, b.data(), b.size(), echo ? Phase::echo : Phase::sink);
    };

    const auto on_sink = [&](Session& s) {
        for (int i = 0; i < 16; ++i) {
            // One byte past the grant is enough to know the peer went over it.
            const uint64_t allowed = s.grant.max_bytes - s.bytes_in;
            const size_t want = allowed >= scratch.size() ? scratch.size() : static_cast<size_t>(allowed + 1);
            const ssize_t n = ::recv(s.fd.get(), scratch.data(), want, MSG_DONTWAIT);
            if (n < 0) return errno == EAGAIN || errno == EINTR;
            if (n == 0) return send_report(s, tcpwire::Code::ok);
            const int64_t now = mono_ns();
            if (s.bytes_in == 0) s.first_ns = now;
            s.last_ns = now;
            s.bytes_in += static_cast<uint64_t>(n);
            counters_.bytes_received += static_cast<uint64_t>(n);
            s.last_progress = SteadyClock::now();
            if (s.bytes_in > s.grant.max_bytes) {
                ++counters_.cut;
                if (log_) log_->warn("probe port: {} sent more than its grant of {} bytes", s.peer, s.grant.max_bytes);
                (void)send_report(s, tcpwire::Code::limit_reached);
                return false;
            }
        }
        return true;
    };

    // The reply is out: the session leaves the event loop for its own thread.
    const auto hand_over = [&](Session& s) {
        auto w = std::make_unique<EchoWorker>();
        w->fd = std::move(s.fd);  // closing the Fd later also drops it from epoll
        s.dead = true;
        s.data_session = false;
        ++live_workers;
        EchoWorker* wp = w.get();
        try {
            wp->thread = std::thread([&, wp, peer = s.peer, grant = s.grant, end = s.deadline] {
                try {
                    echo_loop(*wp, peer, grant, end);
                } catch (const std::exception& e) {
                    if (log_) log_->error("probe port: echo session: {}", e.what());
                }
                --live_workers;
                --counters_.active;
                wp->done = true;
            });
        } catch (const std::system_error& e) {
            --live_workers;
            --counters_.active;
            ++counters_.cut;
            if (log_) log_->warn("probe port: no thread for an echo session: {}", e.what());
            return;  // w closes the connection
        }
        workers.push_back(std::move(w));
    };
    const auto reap_workers = [&] {
        for (auto& w : workers)
            if (w->done && w->thread.joinable()) w->thread.join();
        workers.erase(std::remove_if(workers.begin(), workers.end(), [](const auto& w) { return w->done.load(); }),
                      workers.end());
    };

    // epoll rather than poll: registrations persist, nothing is rebuilt per wake-up.
    Fd ep(::epoll_create1(EPOLL_CLOEXEC));
    if (!ep.valid()) {
        if (log_) log_->error("probe port: epoll_create1: {}", std::strerror(errno));
        return;
    }
    const auto ctl = [&](int op, int fd, uint32_t events, void* ptr) {
        epoll_event e{};
        e.events = events;
        e.data.ptr = ptr;
        return ::epoll_ctl(ep.get(), op, fd, &e) == 0;
    };
    // The stop eventfd and the listening socket are told apart from sessions by address.
    int stop_tag = 0;
    int listen_tag = 0;
    if (!ctl(EPOLL_CTL_ADD, stop_fd_, EPOLLIN, &stop_tag) || !ctl(EPOLL_CTL_ADD, listen_fd_, EPOLLIN, &listen_tag)) {
        if (log_) log_->error("probe port: epoll_ctl: {}", std::strerror(errno));
        return;
    }
    bool listening = true;
    const auto sync_interest = [&](Session& s) {
        const uint32_t want = s.out.empty() ? EPOLLIN : EPOLLOUT;
        if (want != s.events && ctl(EPOLL_CTL_MOD, s.fd.get(), want, &s)) s.events = want;
    };
    std::vector<epoll_event> events(64);

    for (;;) {
        // ---- until when to wait: the earliest session deadline, or a paused accept
        auto now = SteadyClock::now();
        SteadyClock::time_point wake = now + std::chrono::seconds(1);
        uint32_t handshaking = 0;
        for (const auto& s : sessions) {
            if (!s->data_session) ++handshaking;
            wake = std::min({wake, s->deadline, s->last_progress + idle_timeout});
        }
        const bool want_listen = now >= accept_paused_until && handshaking < limits_.max_pending;
        if (want_listen != listening && ctl(EPOLL_CTL_MOD, listen_fd_, want_listen ? uint32_t{EPOLLIN} : 0u, &listen_tag))
            listening = want_listen;
        if (now < accept_paused_until) wake = std::min(wake, accept_paused_until);
        const auto wait_ns = duration_cast<nanoseconds>(wake - now).count();
        const int timeout_ms = wait_ns <= 0 ? 0 : static_cast<int>((wait_ns + 999'999) / 1'000'000);
        const int n = ::epoll_wait(ep.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
        if (n < 0 && errno != EINTR) {
            if (log_) log_->error("probe port: epoll_wait failed: {}", std::strerror(errno));
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        bool stop = false;
        bool accept_ready = false;
        try {
            // ---- ready sockets
            for (int i = 0; i < n; ++i) {
                void* tag = events[static_cast<size_t>(i)].data.ptr;
                if (tag == &stop_tag) {
                    stop = true;
                    continue;
                }
                if (tag == &listen_tag) {
                    accept_ready = true;
                    continue;
                }
                Session& s = *static_cast<Session*>(tag);
                if (s.dead) continue;
                const uint32_t re = events[static_cast<size_t>(i)].events;
                bool alive = true;
                if (!s.out.empty()) {
                    alive = (re & EPOLLERR) == 0 && flush(s);
                } else if (s.phase == Phase::handshake) {
                    alive = on_handshake(s);
                } else if (s.phase == Phase::sink) {
                    alive = on_sink(s);
                } else {
                    alive = false;
                }
                if (!alive) {
                    s.dead = true;
                } else if (s.phase == Phase::echo && s.out.empty()) {
                    // The EPOLL_CTL_DEL keeps a late event from reaching the moved-out session.
                    (void)ctl(EPOLL_CTL_DEL, s.fd.get(), 0, &s);
                    hand_over(s);
                } else {
                    sync_interest(s);
                }
            }
            if (stop) break;
            reap_workers();
            // ---- deadlines: handshake timeout, end of grant, idleness
            now = SteadyClock::now();
            for (auto& sp : sessions) {
                Session& s = *sp;
                if (s.dead) continue;
                const bool over_time = now >= s.deadline;
                const bool idle = now >= s.last_progress + idle_timeout;
                if (!over_time && !idle) continue;
                ++counters_.cut;
                if (log_)
                    log_->debug("probe port: closing {} ({})", s.peer,
                                s.phase == Phase::handshake ? "no request in time"
                                                            : (over_time ? "grant expired" : "idle"));
                // A sink peer still gets what we counted, if the socket takes 32 bytes now.
                if (s.phase == Phase::sink && s.out.empty()) (void)send_report(s, tcpwire::Code::limit_reached);
                s.dead = true;
            }
            // Closing the fd drops it from the epoll set. A session handed to an echo worker
            // has no fd left here and stays active until its worker ends.
            for (const auto& sp : sessions)
                if (sp->dead && sp->fd.valid()) --counters_.active;
            sessions.erase(std::remove_if(sessions.begin(), sessions.end(), [](const auto& s) { return s->dead; }),
                           sessions.end());

            // ---- new connections
            if (accept_ready) {
                handshaking = static_cast<uint32_t>(std::count_if(
                    sessions.begin(), sessions.end(), [](const auto& s) { return !s->data_session; }));
                while (handshaking < limits_.max_pending) {
                    sockaddr_storage peer{};
                    socklen_t plen = sizeof peer;
                    const int c = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &plen,
                                            SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (c < 0) {
                        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) break;
                        // Out of fds or memory: back off instead of spinning on a readable socket.
                        if (log_) log_->warn("probe port: accept: {}", std::strerror(errno));
                        accept_paused_until = SteadyClock::now() + std::chrono::milliseconds(100);
                        break;
                    }
                    auto s = std::make_unique<Session>();
                    s->fd.reset(c);
                    s->peer = endpoint_string(peer);
                    s->last_progress = SteadyClock::now();
                    s->deadline = s->last_progress + handshake_timeout;
                    s->events = EPOLLIN;
                    if (!ctl(EPOLL_CTL_ADD, c, EPOLLIN, s.get())) {
                        if (log_) log_->warn("probe port: epoll_ctl add: {}", std::strerror(errno));
                        continue;  // s closes the connection
                    }
                    sessions.push_back(std::move(s));
                    ++handshaking;
                    ++counters_.connections;
                    ++counters_.active;
                }
            }
        } catch (const std::exception& e) {
            // bad_alloc and the like: drop every session rather than the server.
            if (log_) log_->error("probe port: {}; closing {} sessions", e.what(), sessions.size());
            for (const auto& sp : sessions)
                if (sp->fd.valid()) --counters_.active;
            sessions.clear();
        }
    }
    for (const auto& sp : sessions)
        if (sp->fd.valid()) --counters_.active;
    sessions.clear();
    // Wake every echo worker (a blocked recv/send returns at once) and wait for it.
    for (auto& w : workers) ::shutdown(w->fd.get(), SHUT_RDWR);
    for (auto& w : workers)
        if (w->thread.joinable()) w->thread.join();
    workers.clear();
}

}  // namespace rocewatch
