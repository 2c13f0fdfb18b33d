// TCP probes: the probe data port server, and bandwidth/latency probes against a peer's.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "probes/deadline.hpp"
#include "probes/result.hpp"
#include "probes/tcp_wire.hpp"

namespace spdlog {
class logger;
}

namespace rocewatch {

// ---------------------------------------------------------------- server

// What one peer may make this daemon do on its data port. Each request is clamped to
// these (the grant is sent back), and a peer going past its grant is disconnected.
struct TcpServerLimits {
    uint32_t max_sessions = 8;            // concurrent data sessions (a 4-stream probe uses 4)
    uint32_t max_pending = 16;            // connections still in the handshake
    uint64_t max_bytes_per_session = 16ull << 30;  // payload bytes received or echoed
    double max_session_seconds = 10;      // the longest duration granted
    double grace_seconds = 2;             // after the granted duration, for FIN and report
    uint32_t max_message_size = 64 * 1024;  // echo message size limit
    double handshake_timeout_seconds = 2;   // to send the 64-byte request
    double idle_timeout_seconds = 5;        // a session with no progress this long is closed
    int socket_buffer_bytes = 0;            // SO_RCVBUF/SO_SNDBUF; 0 leaves autotuning on
};

class TcpProbeServer {
 public:
    // Counters since create(), for metrics and tests.
    struct Stats {
        uint64_t connections = 0;        // accepted
        uint64_t sessions = 0;           // handshakes granted
        uint64_t auth_refused = 0;
        uint64_t busy = 0;               // refused at max_sessions
        uint64_t bad_requests = 0;       // bad magic, version, mode or size
        uint64_t cut = 0;                // closed for exceeding a grant or timing out
        uint64_t bytes_received = 0;     // sink payload
        uint64_t bytes_echoed = 0;
        uint32_t active = 0;             // open connections now
    };

    // Binds and listens (numeric IPv4/IPv6 address, "" for all; port 0 picks a free one).
    // Throws std::runtime_error with the reason on failure. `log` may be null.
    static std::unique_ptr<TcpProbeServer> create(const std::string& bind_addr, uint16_t port,
                                                  const ProbeToken& token, TcpServerLimits limits,
                                                  std::shared_ptr<spdlog::logger> log);
    ~TcpProbeServer();  // stops the thread, closes every socket

    TcpProbeServer(const TcpProbeServer&) = delete;
    TcpProbeServer& operator=(const TcpProbeServer&) = delete;

    uint16_t port() const { return port_; }
    // Starts the server thread (one thread, epoll over non-blocking sockets). A second
    // call while running does nothing; start() after stop() serves again.
    void start();
    // Wakes the thread and joins it, closing open sessions; prompt, idempotent.
    void stop();
    Stats stats() const;

 private:
    struct Session;
    TcpProbeServer(int listen_fd, int stop_fd, uint16_t port, const ProbeToken& token, TcpServerLimits limits,
                   std::shared_ptr<spdlog::logger> log);
    void run();

    int listen_fd_ = -1;
    int stop_fd_ = -1;  // eventfd
    uint16_t port_ = 0;
    ProbeToken token_;
    TcpServerLimits limits_;
    std::shared_ptr<spdlog::logger> log_;

    struct Counters {
        std::atomic<uint64_t> connections{0}, sessions{0}, auth_refused{0}, busy{0}, bad_requests{0},
            cut{0}, bytes_received{0}, bytes_echoed{0};
        std::atomic<uint32_t> active{0};
    };
    Counters counters_;

    std::mutex lifecycle_mutex_;
    std::thread thread_;
};

// ---------------------------------------------------------------- client probes

struct TcpProbeTarget {
    std::string peer;            // name for the result ("spark-b"); the address if empty
    std::string address;         // numeric IPv4/IPv6 of the peer's data port (resolve names first)
    uint16_t port = 0;
    std::string rail;            // "" unless the probe runs over a configured rail
    std::string bind_address;    // local source address (bind()); "" lets the kernel choose
    std::string bind_interface;  // SO_BINDTODEVICE; "" for none (needs CAP_NET_RAW)
    ProbeToken token{};
};

struct TcpBwSettings {
    uint32_t streams = 1;              // parallel connections, as iperf3 -P
    double duration_seconds = 1.0;     // sending time; cut short to leave room in the deadline
    uint32_t write_size = 128 * 1024;  // bytes per send(), iperf3's default TCP block
    uint64_t max_bytes = 0;            // cap over all streams; 0 = none (the peer's grant applies)
    int socket_buffer_bytes = 0;       // SO_SNDBUF; 0 leaves autotuning on
};

struct TcpLatSettings {
    uint32_t message_size = 64;        // bytes each way per ping-pong
    uint32_t iterations = 1000;        // ping-pongs, unless max_duration_seconds comes first
    double max_duration_seconds = 1.0;
};

// N streams to the peer's sink for the duration; the figure is counted AT THE RECEIVER:
// total bytes the server reports / the span from the first byte any stream delivered to
// the last (the server's monotonic clock; all streams end on one server, one clock). That
// is iperf3's receiver line, and it leaves out connection setup and what still sat in
// socket buffers when the sender stopped. Fails with a reason, never throws.
ProbeResult tcp_bandwidth(const TcpProbeTarget& t, const TcpBwSettings& s, Deadline d);

// Ping-pong of message_size bytes (TCP_NODELAY both ends); latency = half of each round
// trip, statistics as perftest (probes/stats.hpp). Never throws.
ProbeResult tcp_latency(const TcpProbeTarget& t, const TcpLatSettings& s, Deadline d);

}  // namespace rocewatch
