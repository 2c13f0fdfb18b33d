// The TCP probes' client side: connect, bounded send and read, and the handshake.
#include "probes/tcp_client.hpp"

#include <net/if.h>
#include <poll.h>

#include <array>
#include <cerrno>

#include "probes/hmac.hpp"
#include "probes/tcp_socket.hpp"
#include "util/host_port.hpp"

namespace rocewatch::tcpclient {

using tcpsock::numeric_endpoint;

Failure errno_failure(const std::string& what, int err) { return {reason_from_errno(err), errno_detail(what, err)}; }

int wait_fd(int fd, short events, Deadline d, short* revents) {
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

std::string target_string(const TcpProbeTarget& t) { return host_port(t.address, t.port); }

namespace {

// SO_BINDTODEVICE and bind() to the source address, as the target asks.
bool bind_source(int fd, const TcpProbeTarget& t, int family, Failure& f) {
    if (!t.bind_interface.empty()) {
        if (t.bind_interface.size() >= IFNAMSIZ) {
            f = {reason::local_bind_failed, "interface name too long: " + t.bind_interface};
            return false;
        }
        if (::setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, t.bind_interface.c_str(),
                         static_cast<socklen_t>(t.bind_interface.size())) != 0) {
            const int err = errno;
            f = errno_failure("bind to interface " + t.bind_interface, err);
            if (err == ENODEV) f.reason = reason::local_bind_failed;
            return false;
        }
    }
    if (t.bind_address.empty()) return true;
    const auto local = numeric_endpoint(t.bind_address, 0);
    if (!local || local->family() != family) {
        f = {reason::local_bind_failed,
             "source address '" + t.bind_address + "' is not a numeric address of the target's family"};
        return false;
    }
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&local->addr), local->len) != 0) {
        f = errno_failure("bind to " + t.bind_address, errno);
        f.reason = reason::local_bind_failed;
        return false;
    }
    return true;
}

// Waits out a non-blocking connect() that said EINPROGRESS.
bool finish_connect(int fd, Deadline d, const std::string& where, Failure& f) {
    const int rc = wait_fd(fd, POLLOUT, d);
    if (rc == 0) {
        f = {reason::timeout, "connect to " + where + ": no answer before the deadline"};
        return false;
    }
    if (rc < 0) {
        f = errno_failure("poll while connecting to " + where, errno);
        return false;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
        f = errno_failure("connect to " + where, err);
        return false;
    }
    return true;
}

}  // namespace

std::optional<Fd> connect_to(const TcpProbeTarget& t, Deadline d, int sndbuf, Failure& f) {
    const std::string where = target_string(t);
    const auto ep = numeric_endpoint(t.address, t.port);
    if (!ep || t.port == 0) {
        f = {reason::bad_target,
             "not a numeric IPv4/IPv6 address and port: '" + where + "' (names are resolved before probing)"};
        return std::nullopt;
    }
    Fd fd(::socket(ep->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
        f = errno_failure("socket for " + where, errno);
        return std::nullopt;
    }
    if (!bind_source(fd.get(), t, ep->family(), f)) return std::nullopt;
    if (sndbuf > 0) tcpsock::set_int_opt(fd.get(), SOL_SOCKET, SO_SNDBUF, sndbuf);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&ep->addr), ep->len) != 0) {
        if (errno != EINPROGRESS) {
            f = errno_failure("connect to " + where, errno);
            return std::nullopt;
        }
        if (!finish_connect(fd.get(), d, where, f)) return std::nullopt;
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
            f = {reason::peer_closed, what + ": peer closed the connection after " + std::to_string(off) + " of " +
                                          std::to_string(n) + " bytes"};
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

namespace {

// One fixed-size header read and decoded; a wrong magic says the port is not a data port.
template <size_t N, class Decode>
auto read_header(int fd, Decode decode, const std::string& what, Deadline d, const std::string& where, Failure& f)
    -> decltype(decode(nullptr, 0)) {
    std::array<uint8_t, N> in{};
    if (!recv_exact(fd, in.data(), in.size(), d, "read " + what + " from " + where, f)) return std::nullopt;
    auto header = decode(in.data(), in.size());
    if (!header) f = {reason::protocol_error, where + " is not a rocewatch probe port (bad " + what + " magic)"};
    return header;
}

// The server's challenge, read before anything is sent.
std::optional<tcpwire::Challenge> read_challenge(int fd, Deadline d, const std::string& where, Failure& f) {
    auto c = read_header<tcpwire::kChallengeSize>(fd, tcpwire::decode_challenge, "challenge", d, where, f);
    if (c && c->version != tcpwire::kVersion) {
        f = {reason::version_mismatch, where + " speaks data port version " + std::to_string(c->version) +
                                           ", we speak " + std::to_string(tcpwire::kVersion)};
        return std::nullopt;
    }
    return c;
}

}  // namespace

std::optional<tcpwire::Reply> handshake(int fd, tcpwire::Request req, const ProbeToken& token, Deadline d,
                                        const std::string& where, Failure& f) {
    const auto challenge = read_challenge(fd, d, where, f);
    if (!challenge) return std::nullopt;
    const auto mac = tcpwire::request_mac(token, *challenge, req);
    if (!mac) {
        f = {reason::internal_error, load_hmac().value_or("no HMAC-SHA256")};
        return std::nullopt;
    }
    req.mac = *mac;
    const auto out = tcpwire::encode(req);
    if (!send_all(fd, out.data(), out.size(), d, "send request to " + where, f)) return std::nullopt;
    const auto reply = read_header<tcpwire::kReplySize>(fd, tcpwire::decode_reply, "reply", d, where, f);
    if (!reply) return std::nullopt;
    if (reply->code != tcpwire::Code::ok) {
        f = {reason_from_reply_code(reply->code), where + " refused the probe: " + tcpwire::to_string(reply->code) +
                                                      (reply->code == tcpwire::Code::unsupported_version
                                                           ? " (peer speaks version " + std::to_string(reply->version) +
                                                                 ", we speak " + std::to_string(tcpwire::kVersion) + ")"
                                                           : "")};
        return std::nullopt;
    }
    return reply;
}

void fail(ProbeResult& r, const Failure& f) {
    r.success = false;
    r.reason = f.reason.empty() ? reason::socket_error : f.reason;
    r.detail = f.detail;
}

}  // namespace rocewatch::tcpclient
