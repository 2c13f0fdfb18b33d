// Socket helpers shared by the TCP probes and the data-port server: numeric endpoints,
// their text, socket options, and per-call timeouts on blocking sockets.
#pragma once

#include <sys/socket.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>

#include "probes/deadline.hpp"

namespace rocewatch::tcpsock {

struct Endpoint {
    sockaddr_storage addr{};
    socklen_t len = 0;
    int family() const { return addr.ss_family; }
};

// Numeric addresses only: name resolution can block past any deadline, so it is the
// caller's job (the scheduler resolves peers before it probes them). "[v6]" is accepted.
std::optional<Endpoint> numeric_endpoint(const std::string& host, uint16_t port);
// "1.2.3.4:5" or "[::1]:5".
std::string endpoint_string(const sockaddr_storage& a);
// The address alone, without the port: what per-source limits count by.
std::string host_string(const sockaddr_storage& a);
// getsockname() as endpoint_string(); "" on failure.
std::string local_address(int fd);
void set_int_opt(int fd, int level, int name, int value);
// Clears O_NONBLOCK; false with errno set on failure.
bool make_blocking(int fd);

int64_t mono_ns(SteadyClock::time_point t = SteadyClock::now());
timespec to_timespec(SteadyClock::duration d);
// Whole milliseconds, rounded up, clamped to 0..UINT32_MAX (the wire's duration fields).
uint32_t to_ms(double seconds);

// Keeps SO_RCVTIMEO/SO_SNDTIMEO on a blocking socket short enough that any one call ends
// by the deadline: one syscall per send/recv instead of poll + recv, re-armed only when
// half of the time left has passed.
class CallTimeout {
public:
    // `cap` bounds each wait too (an idle limit), on top of the deadline.
    CallTimeout(int fd, Deadline d, SteadyClock::duration cap = SteadyClock::duration::max())
        : fd_(fd), d_(d), cap_(cap) {}
    // False once the deadline has passed or was pulled in. Each call is bounded to
    // Deadline::kCancelSlice when the deadline can be pulled in.
    bool arm(SteadyClock::time_point now);
    [[nodiscard]] bool cancelled() const { return d_.cancelled(); }

private:
    int fd_;
    Deadline d_;
    SteadyClock::duration cap_;
    bool armed_ = false;
    SteadyClock::duration armed_for_{};
};

}  // namespace rocewatch::tcpsock
