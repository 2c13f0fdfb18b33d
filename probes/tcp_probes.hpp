// TCP bandwidth and latency probes against a peer's probe data port (tcp_server.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "probes/deadline.hpp"
#include "probes/result.hpp"
#include "probes/tcp_wire.hpp"

namespace rocewatch {

struct TcpProbeTarget {
    std::string peer;     // name for the result ("spark-b"); the address if empty
    std::string address;  // numeric IPv4/IPv6 of the peer's data port (resolve names first)
    uint16_t port = 0;
    std::string rail;            // "" unless the probe runs over a configured rail
    std::string bind_address;    // local source address (bind()); "" lets the kernel choose
    std::string bind_interface;  // SO_BINDTODEVICE; "" for none (no capability needed since Linux 5.7)
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
    uint32_t message_size = 64;  // bytes each way per ping-pong
    uint32_t iterations = 1000;  // ping-pongs, unless max_duration_seconds comes first
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
