// What the TCP probes share on the client side: connecting within a deadline, bounded
// sends and reads, the request/reply handshake, and the result's bookkeeping.
#pragma once

#include <optional>
#include <string>

#include "probes/errors.hpp"
#include "probes/tcp_probes.hpp"
#include "util/fd.hpp"

namespace rocewatch::tcpclient {

struct Failure {
    std::string reason;
    std::string detail;
};

Failure errno_failure(const std::string& what, int err);
// Waits for `events` on one fd until the deadline: 1 ready, 0 deadline passed, -1 error.
int wait_fd(int fd, short events, Deadline d, short* revents = nullptr);
// "addr:port", brackets around IPv6.
std::string target_string(const TcpProbeTarget& t);
// Non-blocking socket connected to the target's data port within the deadline.
std::optional<Fd> connect_to(const TcpProbeTarget& t, Deadline d, int sndbuf, Failure& f);
bool send_all(int fd, const uint8_t* p, size_t n, Deadline d, const std::string& what, Failure& f);
bool recv_exact(int fd, uint8_t* p, size_t n, Deadline d, const std::string& what, Failure& f);
// Sends the request and reads the reply; a refusal becomes a failure with its reason.
std::optional<tcpwire::Reply> handshake(int fd, const tcpwire::Request& req, Deadline d, const std::string& where,
                                        Failure& f);
void fail(ProbeResult& r, const Failure& f);

// Runs `body(r)` on a fresh result for `t`, turning an exception into internal_error and
// timing the whole run: every probe goes through here, so none ever throws.
template <typename Body>
ProbeResult run_probe(ProbeKind kind, const TcpProbeTarget& t, Body body) {
    ProbeResult r;
    r.kind = kind;
    r.peer = t.peer.empty() ? t.address : t.peer;
    r.rail = t.rail;
    r.started = Clock::now();
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

}  // namespace rocewatch::tcpclient
