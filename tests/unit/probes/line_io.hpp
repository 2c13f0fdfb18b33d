// JSON lines over a TCP control socket, for the probe CLIs (rdma_probe_cli, ucx_probe_cli):
// what the daemon carries over HTTP, they carry one line each way.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <cstddef>
#include <optional>
#include <string>

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

// SO_RCVTIMEO and SO_SNDTIMEO.
inline void set_timeout(int fd, double seconds) {
    timeval tv{static_cast<time_t>(seconds), static_cast<suseconds_t>((seconds - static_cast<long>(seconds)) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace rocewatch::cli
