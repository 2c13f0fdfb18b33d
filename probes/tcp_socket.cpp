// Socket helpers shared by the TCP probes and the data-port server.
#include "probes/tcp_socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace rocewatch::tcpsock {

using std::chrono::duration_cast;

std::optional<Endpoint> numeric_endpoint(const std::string& host, uint16_t port) {
    std::string h = host;
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    addrinfo hints{};
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (::getaddrinfo(h.c_str(), service.c_str(), &hints, &res) != 0 || res == nullptr) return std::nullopt;
    Endpoint e;
    std::memcpy(&e.addr, res->ai_addr, res->ai_addrlen);
    e.len = res->ai_addrlen;
    ::freeaddrinfo(res);
    return e;
}

std::string host_string(const sockaddr_storage& a) {
    char host[INET6_ADDRSTRLEN] = "?";
    if (a.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, host, sizeof host);
    else if (a.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr, host, sizeof host);
    return host;
}

std::string endpoint_string(const sockaddr_storage& a) {
    if (a.ss_family == AF_INET)
        return host_string(a) + ":" + std::to_string(ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port));
    const uint16_t port = a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port) : 0;
    return "[" + host_string(a) + "]:" + std::to_string(port);
}

std::string local_address(int fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
    return endpoint_string(a);
}

void set_int_opt(int fd, int level, int name, int value) { (void)::setsockopt(fd, level, name, &value, sizeof value); }

bool make_blocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

int64_t mono_ns(SteadyClock::time_point t) {
    return duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

timespec to_timespec(SteadyClock::duration d) {
    const int64_t ns = std::max<int64_t>(0, duration_cast<std::chrono::nanoseconds>(d).count());
    return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

uint32_t to_ms(double seconds) {
    const double ms = std::ceil(seconds * 1000.0);
    return ms >= static_cast<double>(std::numeric_limits<uint32_t>::max()) ? std::numeric_limits<uint32_t>::max()
                                                                           : static_cast<uint32_t>(std::max(ms, 0.0));
}

bool CallTimeout::arm(SteadyClock::time_point now) {
    if (d_.expired(now)) return false;
    if (armed_ && now + armed_for_ <= d_.at) return true;
    const auto left = d_.at - now;
    // A deadline that may be pulled in (the daemon stopping) bounds each call to a slice, so
    // a call blocked on a peer that went quiet comes back to see it.
    const auto cap = d_.cancel ? std::min<SteadyClock::duration>(cap_, Deadline::kCancelSlice) : cap_;
    const auto t = std::min(left >= std::chrono::milliseconds(2) ? left / 2 : left, cap);
    const int64_t us = std::max<int64_t>(1, duration_cast<std::chrono::microseconds>(t).count());
    const timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
        return false;
    armed_for_ = std::chrono::microseconds(us);
    armed_ = true;
    return true;
}

}  // namespace rocewatch::tcpsock
