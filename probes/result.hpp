// What one probe run between this node and a peer produced: the value every probe returns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/snapshot.hpp"  // TimePoint

namespace rocewatch {

// Every kind of probe rocewatch runs. The names are the wire/config/metric spelling
// (`module=` in GET /probe, `kind` label), so they never change once released.
enum class ProbeKind {
    rdma_write_bw,       // perftest ib_write_bw method over one rail
    rdma_write_lat,      // ib_write_lat ping-pong over one rail
    rdma_multirail_bw,   // all rails at once, with bytes per rail from the port counters
    tcp_bw,              // N TCP streams to the peer's data port, counted at the receiver
    tcp_lat,             // small-message TCP ping-pong
    ucx_put_bw,          // ucp put bandwidth over the transports UCX selects
    ucx_put_lat,         // ucp put ping-pong
};

const char* to_string(ProbeKind k);
std::optional<ProbeKind> probe_kind_from_string(const std::string& s);
const std::vector<ProbeKind>& all_probe_kinds();

// Latency figures as perftest's ib_write_lat reports them (see probes/stats.hpp for the
// exact arithmetic). All values in seconds; for ping-pong probes they are half round trips.
struct LatencyStats {
    uint64_t samples = 0;   // samples given
    uint64_t used = 0;      // samples left after dropping the tail (perftest drops 2)
    double min = 0;
    double max = 0;         // largest sample of all, dropped ones included
    double typical = 0;     // median of the used samples (perftest's "t_typical")
    double mean = 0;        // of the used samples
    double stddev = 0;      // population standard deviation of the used samples
    double p99 = 0;
    double p99_9 = 0;
};

// One probe run. A probe never throws: whatever happened is in here. `success` and
// `duration_seconds` are always set (blackbox_exporter's probe_success/probe_duration).
struct ProbeResult {
    ProbeKind kind = ProbeKind::tcp_lat;
    std::string peer;            // peer name as configured ("spark-b"), or its address
    std::string rail;            // rail name for per-rail probes, "" otherwise
    bool success = false;
    double duration_seconds = 0;  // whole probe: connect, handshake, transfer, report
    // Empty on success. A short machine-friendly word from probes/errors.hpp (reason::...):
    // "peer_unreachable", "connection_refused", "timeout", "auth_refused", "peer_closed",
    // "gid_mismatch", "qp_transition_failed", ...
    std::string reason;
    std::string detail;          // human text: what failed, where, with errno text
    std::optional<double> bandwidth_bits_per_second;
    std::optional<LatencyStats> latency;
    uint64_t bytes = 0;          // payload bytes moved (for bandwidth: counted at the receiver)
    uint64_t iterations = 0;     // messages (latency) or work requests / writes (bandwidth)
    uint32_t streams = 0;        // parallel streams, QPs or endpoints used
    std::vector<uint64_t> bytes_per_stream;              // receiver-side count per stream
    std::map<std::string, uint64_t> bytes_per_rail;      // multi-rail: from port counters
    // Kind-specific facts worth showing next to the figures: "local_ucx_version",
    // "remote_ucx_version", "ucx_lanes", "gid_index", "receiver_seconds", "local_address".
    std::map<std::string, std::string> info;
    TimePoint started{};         // wall clock at the start of the probe
};

}  // namespace rocewatch
