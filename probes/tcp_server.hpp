// The probe data port: the TCP server peers' bandwidth and latency probes run against.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "probes/tcp_wire.hpp"

namespace spdlog {
class logger;
}

namespace rocewatch {

class ProbeBudget;

// What one peer may make this daemon do on its data port. Each request is clamped to
// these (the grant is sent back), and a peer going past its grant is disconnected.
struct TcpServerLimits {
    uint32_t max_sessions = 8;  // concurrent data sessions (a 4-stream probe uses 4)
    // Connections that have not sent their request yet, in all and from one address. The
    // port accepts every connection at once and, at a cap, closes the oldest waiting one
    // (from the address holding the most), so idle connections never hold a real probe back.
    uint32_t max_pending = 64;
    uint32_t max_pending_per_source = 8;
    uint64_t max_bytes_per_session = 16ull << 30;  // payload bytes received or echoed
    double max_session_seconds = 10;               // the longest sink (bandwidth) duration granted
    double max_echo_seconds = 10;                  // the longest echo (latency) duration granted
    double grace_seconds = 2;                      // after the granted duration, for FIN and report
    uint32_t max_message_size = 64 * 1024;         // echo message size limit
    double handshake_timeout_seconds = 2;          // to send the 64-byte request, counted from accept
    double idle_timeout_seconds = 5;               // a session with no progress this long is closed
    int socket_buffer_bytes = 0;                   // SO_RCVBUF/SO_SNDBUF; 0 leaves autotuning on
    // The node's probe budget (not owned; nullptr: none): each data session is admitted
    // against it (refused as busy when it is spent) and charged its payload bytes.
    ProbeBudget* budget = nullptr;
};

namespace tcpserver {
// What the server's pieces count as they go; TcpProbeServer::stats() reads them.
struct Counters {
    std::atomic<uint64_t> connections{0}, sessions{0}, auth_refused{0}, busy{0}, bad_requests{0}, cut{0}, dropped{0},
        bytes_received{0}, bytes_echoed{0};
    std::atomic<uint32_t> active{0};
};
}  // namespace tcpserver

class TcpProbeServer {
public:
    // Counters since create(), for metrics and tests.
    struct Stats {
        uint64_t connections = 0;  // accepted
        uint64_t sessions = 0;     // handshakes granted
        uint64_t auth_refused = 0;
        uint64_t busy = 0;            // refused at max_sessions
        uint64_t bad_requests = 0;    // bad magic, version, mode or size
        uint64_t cut = 0;             // closed for exceeding a grant or timing out
        uint64_t dropped = 0;         // closed before its request to make room (per-source or total cap)
        uint64_t bytes_received = 0;  // sink payload
        uint64_t bytes_echoed = 0;
        uint32_t active = 0;  // open connections now
    };

    // Binds and listens on exactly `bind_addr`: a numeric IPv4 or IPv6 address ("[v6]" too)
    // binds that address only; "" or "::" listens on every address, IPv4 included (IPv4 only
    // where IPv6 is off). Port 0 picks a free one. Throws std::runtime_error with the reason
    // on failure. `log` may be null.
    static std::unique_ptr<TcpProbeServer> create(const std::string& bind_addr, uint16_t port, const ProbeToken& token,
                                                  TcpServerLimits limits, std::shared_ptr<spdlog::logger> log);
    ~TcpProbeServer();  // stops the thread, closes every socket

    TcpProbeServer(const TcpProbeServer&) = delete;
    TcpProbeServer& operator=(const TcpProbeServer&) = delete;

    uint16_t port() const { return port_; }
    // Starts the server thread (one thread, epoll over non-blocking sockets, for accepts and
    // handshakes; a granted echo or sink session gets a thread of its own). A second call
    // while running does nothing; start() after stop() serves again.
    void start();
    // Wakes the thread and joins it, closing open sessions; prompt, idempotent.
    void stop();
    Stats stats() const;

private:
    TcpProbeServer(int listen_fd, int stop_fd, uint16_t port, const ProbeToken& token, TcpServerLimits limits,
                   std::shared_ptr<spdlog::logger> log);

    int listen_fd_ = -1;
    int stop_fd_ = -1;  // eventfd
    uint16_t port_ = 0;
    ProbeToken token_;
    TcpServerLimits limits_;
    std::shared_ptr<spdlog::logger> log_;
    tcpserver::Counters counters_;

    std::mutex lifecycle_mutex_;
    std::thread thread_;
};

}  // namespace rocewatch
