// What the probe tools share: JSON lines over a plain TCP control socket (what the daemon
// carries over HTTP, they carry one line each way), its listen and connect, and one result
// line on stdout in the REST API's spelling (api::probe_result_json).
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

#include "api/probe_view.hpp"

namespace rocewatch::cli {

inline bool send_line(int fd, const std::string& s) {
    const std::string l = s + "\n";
    size_t off = 0;
    while (off < l.size()) {
        const ssize_t n = ::send(fd, l.data() + off, l.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return false;
        off += static_cast<size_t>(n);
    }
    return true;
}

// One line (without its newline), at most 1 MiB; nullopt on EOF, error or timeout.
inline std::optional<std::string> recv_line(int fd) {
    std::string s;
    char c;
    while (s.size() < (1u << 20)) {
        if (::recv(fd, &c, 1, 0) != 1) return std::nullopt;
        if (c == '\n') return s;
        s += c;
    }
    return std::nullopt;
}

// SO_RCVTIMEO and SO_SNDTIMEO (connect() honours the latter).
inline void set_timeout(int fd, double seconds) {
    timeval tv{static_cast<time_t>(seconds), static_cast<suseconds_t>((seconds - static_cast<long>(seconds)) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// The first address of host:port that getaddrinfo() gives (`passive` for a listener).
inline addrinfo* resolve(const std::string& host, uint16_t port, bool passive, int& err) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) {
        err = EINVAL;
        return nullptr;
    }
    return res;
}

// A listening socket on host:port; -errno on failure.
inline int listen_tcp(const std::string& host, uint16_t port) {
    int err = 0;
    addrinfo* ai = resolve(host, port, true, err);
    if (!ai) return -err;
    const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || ::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
        err = errno;
        if (fd >= 0) ::close(fd);
        ::freeaddrinfo(ai);
        return -err;
    }
    ::freeaddrinfo(ai);
    return fd;
}

// A connected control socket (TCP_NODELAY, `timeout` on every call and the connect);
// -errno on failure.
inline int connect_tcp(const std::string& host, uint16_t port, double timeout) {
    int err = 0;
    addrinfo* ai = resolve(host, port, false, err);
    if (!ai) return -err;
    const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) set_timeout(fd, timeout);
    if (fd < 0 || ::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (fd >= 0) ::close(fd);
        ::freeaddrinfo(ai);
        return -err;
    }
    ::freeaddrinfo(ai);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// One JSON line per result, written whole (sessions on several threads print whole lines).
// Exit status: 0 on success, 1 when the probe failed.
inline int print_result(const ProbeResult& r) {
    std::printf("%s\n", api::probe_result_json(r).dump().c_str());
    std::fflush(stdout);
    return r.success ? 0 : 1;
}

}  // namespace rocewatch::cli
