// What the TCP probes share on the client side: connecting within a deadline, bounded
// sends and reads, the request/reply handshake, and the result's bookkeeping.
#pragma once

#include <optional>
#include <string>

#include "probes/errors.hpp"
#include "probes/result.hpp"
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
// Reads the server's challenge, sends the request with the token proved over it (request_mac)
// and reads the reply; a refusal becomes a failure with its reason.
std::optional<tcpwire::Reply> handshake(int fd, tcpwire::Request req, const ProbeToken& token, Deadline d,
                                        const std::string& where, Failure& f);
void fail(ProbeResult& r, const Failure& f);

// A fresh result for `t`, run through guarded_run: timed, and never throwing.
template <typename Body>
ProbeResult run_probe(ProbeKind kind, const TcpProbeTarget& t, Body body) {
    ProbeResult r = begin_result(kind, t.rail);
    r.peer = t.peer.empty() ? t.address : t.peer;
    return guarded_run(std::move(r), body);
}

}  // namespace rocewatch::tcpclient
