// Probe results between this node and its peers, and the bounded book of them a snapshot carries.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/model/snapshot.hpp"  // TimePoint

namespace rocewatch {

// Every kind of probe rocewatch runs. The names are the wire/config/metric spelling
// (`module=` in GET /probe, `kind` label), so they never change once released.
enum class ProbeKind {
    rdma_write_bw,      // perftest ib_write_bw method over one rail
    rdma_write_lat,     // ib_write_lat ping-pong over one rail
    rdma_multirail_bw,  // all rails at once, with bytes per rail from the port counters
    tcp_bw,             // N TCP streams to the peer's data port, counted at the receiver
    tcp_lat,            // small-message TCP ping-pong
    ucx_put_bw,         // ucp put bandwidth over the transports UCX selects
    ucx_put_lat,        // ucp put ping-pong
};

const char* to_string(ProbeKind k);
std::optional<ProbeKind> probe_kind_from_string(const std::string& s);
const std::vector<ProbeKind>& all_probe_kinds();
// Bandwidth kinds move bulk data: one at a time per node, skipped while a rail is busy.
bool is_bandwidth_kind(ProbeKind k);
bool is_rdma_kind(ProbeKind k);
bool is_tcp_kind(ProbeKind k);
bool is_ucx_kind(ProbeKind k);
// Kinds run once per peer over whatever paths they choose (all rails, UCX's lanes), not
// once per rail: their results carry rail "".
bool is_peer_level_kind(ProbeKind k);

// Latency figures as perftest's ib_write_lat reports them (see probes/stats.hpp for the
// exact arithmetic). All values in seconds; for ping-pong probes they are half round trips.
struct LatencyStats {
    uint64_t samples = 0;  // samples given
    uint64_t used = 0;     // samples left after dropping the tail (perftest drops 2)
    double min = 0;
    double max = 0;      // largest sample of all, dropped ones included
    double typical = 0;  // median of the used samples (perftest's "t_typical")
    double mean = 0;     // of the used samples
    double stddev = 0;   // population standard deviation of the used samples
    double p99 = 0;
    double p99_9 = 0;
};

// One probe run. A probe never throws: whatever happened is in here. `success` and
// `duration_seconds` are always set (blackbox_exporter's probe_success/probe_duration).
struct ProbeResult {
    ProbeKind kind = ProbeKind::tcp_lat;
    std::string peer;  // peer name as configured ("spark-b"), or its address
    std::string rail;  // rail name for per-rail probes, "" otherwise
    bool success = false;
    double duration_seconds = 0;  // whole probe: connect, handshake, transfer, report
    // Empty on success. A short machine-friendly word from probes/errors.hpp (reason::...):
    // "peer_unreachable", "connection_refused", "timeout", "auth_refused", "peer_closed",
    // "gid_mismatch", "qp_transition_failed", "rdma_no_ack", "rdma_receiver_not_ready",
    // "rdma_flushed", "rdma_remote_refused", "local_port_down", ...; "skipped_busy" when the scheduler did not
    // run a bandwidth probe because the rail carried real traffic.
    std::string reason;
    std::string detail;  // human text: what failed, where, with errno text
    std::optional<double> bandwidth_bits_per_second;
    std::optional<LatencyStats> latency;
    uint64_t bytes = 0;                              // payload bytes moved (for bandwidth: counted at the receiver)
    uint64_t iterations = 0;                         // messages (latency) or work requests / writes (bandwidth)
    uint32_t streams = 0;                            // parallel streams, QPs or endpoints used
    std::vector<uint64_t> bytes_per_stream;          // receiver-side count per stream
    std::map<std::string, uint64_t> bytes_per_rail;  // multi-rail: from port counters
    // Kind-specific facts worth showing next to the figures: "local_ucx_version",
    // "remote_ucx_version", "ucx_lanes", "gid_index", "receiver_seconds", "local_address".
    std::map<std::string, std::string> info;
    TimePoint started{};  // wall clock at the start of the probe
};

// The reason a scheduled bandwidth probe carries when it was not run because the rail was busy.
inline constexpr const char* kReasonSkippedBusy = "skipped_busy";
// The reason a probe carries when the peer refused it while serving another peer's session
// (or its data port was full): the peer is there and well, just taken.
inline constexpr const char* kReasonPeerBusy = "peer_busy";
// The reason a probe carries when the daemon stopped or reloaded before or while it ran: it
// says nothing about the peer and is not kept (the caller who asked for it gets it).
inline constexpr const char* kReasonStopped = "stopped";

// Whether a result says anything about the path: false for a probe that did not run (our
// rail busy, the peer busy). Verdicts and metrics go by the newest result that ran.
inline bool probe_ran(const ProbeResult& r) { return r.reason != kReasonSkippedBusy && r.reason != kReasonPeerBusy; }

struct ProbeKey {
    std::string peer;
    std::string rail;
    ProbeKind kind = ProbeKind::tcp_lat;
    auto operator<=>(const ProbeKey&) const = default;
};

// What a peer's daemon said about itself in GET /api/v1/peer/hello.
struct PeerPrefix {
    std::string address;  // "10.0.1.7"
    int prefixlen = 0;    // 24
    auto operator<=>(const PeerPrefix&) const = default;
};

struct PeerInterfaceInfo {
    std::optional<uint32_t> mtu;         // netdev MTU
    std::vector<std::string> gid_types;  // distinct GID types on the interface's RDMA port
    std::vector<PeerPrefix> prefixes;    // its addresses with their prefix lengths (hello v1 sends none)
    std::string mac;                     // "" when not sent (older peers)
    std::vector<std::string> cidrs;      // its IPv4 addresses with prefix: "10.0.0.2/24"
    std::optional<int> arp_ignore;       // effective sysctls (max of "all" and its own)
    std::optional<int> arp_announce;
    std::optional<int> rp_filter;
    std::string rdma_device;  // RDMA device bound to it, "" when none
};

// One of the peer's rails, in its [expect] rails order (its [cluster] rails when set).
struct PeerRail {
    std::string name;    // the peer's name for the rail (its RDMA device, or its netdev)
    std::string device;  // RDMA device, "" for a netdev-only rail
    std::string netdev;
};

struct PeerHello {
    std::string version;
    uint32_t protocol_version = 0;
    uint16_t data_port = 0;
    std::string ucx_version;                               // "" without UCX
    std::map<std::string, PeerInterfaceInfo> interfaces;   // keyed by the peer's netdev name
    std::map<std::string, std::string> address_interface;  // peer's address -> its netdev
    std::vector<PeerRail> rails;                           // empty when the peer does not say
};

struct PeerState {
    std::string name;
    std::string address;  // host:port of its daemon
    bool hello_ok = false;
    std::string hello_error;  // reason the last hello failed, "" when fine
    std::optional<PeerHello> hello;
    TimePoint hello_at{};
};

// Probe results of a node: the latest per (peer, rail, kind) and a short history. Immutable
// once published; the scheduler builds a new book for every result.
// Every latency sample a (peer, rail, kind) has counted since the daemon started: what a
// Prometheus summary's _count and _sum must be (monotonic) for rate() to mean anything.
struct LatencyTotals {
    uint64_t count = 0;  // used samples of every successful latency run
    double sum = 0;      // their sum, in seconds
};

struct ProbeBook {
    static constexpr size_t kHistoryLimit = 20;

    bool enabled = false;                                 // peer probing is on (a token file was read)
    std::string disabled_reason;                          // why it is off ("" when enabled)
    std::map<ProbeKey, std::deque<ProbeResult>> results;  // oldest first, at most kHistoryLimit
    std::map<std::string, PeerState> peers;               // by peer name
    std::map<ProbeKey, LatencyTotals> latency_totals;     // cumulative since start, never reset

    // The newest result for a key, nullptr when none.
    const ProbeResult* latest(const ProbeKey& k) const;
    // Appends r under its key, dropping the oldest beyond kHistoryLimit. A probe that did not
    // run for the same reason as the one before it replaces that one (info "repeated" counts
    // them), so a long busy spell cannot push the last real run out of the history.
    void add(ProbeResult r);
};

// The newest result in `history` that ran (probe_ran); nullptr when none did.
const ProbeResult* last_run(const std::deque<ProbeResult>& history);

}  // namespace rocewatch
