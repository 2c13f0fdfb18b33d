// Probe results between this node and its peers, and the bounded book of them a snapshot carries.
#pragma once

#include <array>
#include <chrono>
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
// The peer has peer probing off (no token): its hello and sessions answer 503 with this reason.
// A failure, not a skip: the peer will not take part until its operator gives it the token.
inline constexpr const char* kReasonPeerProbingOff = "peer_probing_off";
// Not run: the node's probe budget for the last minute was spent (probes/budget.hpp).
inline constexpr const char* kReasonSkippedBudget = "skipped_budget";

// Whether a result says anything about the path: false for a probe that did not run (our
// rail busy, the peer busy, the budget spent). Verdicts and metrics go by the newest result that ran.
inline bool probe_ran(const ProbeResult& r) {
    return r.reason != kReasonSkippedBusy && r.reason != kReasonPeerBusy && r.reason != kReasonSkippedBudget;
}

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
    // Lossless RoCE, where the peer knows it (its driver reports DCB; has ECN files):
    // priority bitmaps (bit p: on for priority p) and the priority its RoCE v2 goes out at.
    std::optional<uint8_t> pfc_enabled;
    std::optional<int> roce_priority;
    std::optional<uint8_t> ecn_rp_enabled;
    std::optional<uint8_t> ecn_np_enabled;
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
    std::string hello_error;   // reason the last hello failed, "" when fine
    std::string hello_detail;  // that failure in words, where more is known than the reason
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

// The inventory's rotating peers, summarised per (local rail, kind) instead of per peer, so
// that the series a node exports do not grow with the cluster (docs/cluster.md).
struct MeshKey {
    std::string rail;  // the local rail ("" for the control host path)
    ProbeKind kind = ProbeKind::tcp_lat;
    auto operator<=>(const MeshKey&) const = default;
};

// A rotating peer's newest result on one rail and kind, kept for the "worst peers now" sets.
struct MeshPeerSeen {
    bool success = false;
    double latency = 0;  // the run's median half round trip, seconds (success only)
    std::string reason;  // failures only
    TimePoint at{};
};

struct MeshSummary {
    // Upper bounds of the latency histogram's buckets, seconds: Soft-RoCE and RDMA NICs at the
    // low end (2-10 us), TCP at 20-100 us, a congested or remote path beyond.
    static constexpr std::array<double, 14> kBuckets = {5e-6, 1e-5,   2.5e-5, 5e-5, 1e-4,   2.5e-4, 5e-4,
                                                        1e-3, 2.5e-3, 5e-3,   1e-2, 2.5e-2, 0.1,    1.0};
    // How many peers each "worst now" set names at most, and how many seen peers are kept.
    static constexpr size_t kWorst = 3;
    static constexpr size_t kMaxSeen = 64;

    uint64_t successes = 0;  // runs since start (probes that ran: busy peers are not counted)
    uint64_t failures = 0;
    // One observation per successful run, its median half round trip: per-bucket counts
    // (kBuckets.size() + 1 with +Inf), cumulated when exported; sum in seconds.
    std::array<uint64_t, kBuckets.size() + 1> buckets{};
    double sum = 0;
    std::map<std::string, MeshPeerSeen> seen;  // by peer, newest result, younger than keep_for

    // Up to kWorst peers whose newest run failed, newest first; and up to kWorst with the
    // highest latency among those whose newest run succeeded, worst first.
    [[nodiscard]] std::vector<std::pair<std::string, const MeshPeerSeen*>> failing() const;
    [[nodiscard]] std::vector<std::pair<std::string, const MeshPeerSeen*>> slowest() const;
};

struct ProbeBook {
    static constexpr size_t kHistoryLimit = 20;

    bool enabled = false;                                 // peer probing is on (a token file was read)
    std::string disabled_reason;                          // why it is off ("" when enabled)
    std::map<ProbeKey, std::deque<ProbeResult>> results;  // oldest first, at most kHistoryLimit
    std::map<std::string, PeerState> peers;               // by peer name
    std::map<ProbeKey, LatencyTotals> latency_totals;     // cumulative since start, never reset
    std::map<MeshKey, MeshSummary> mesh;                  // rotating peers' results, per rail and kind
    std::map<std::string, std::string> rotating;          // this round's rotating peers: name -> address
    std::optional<uint64_t> round;                        // the rotation round they are of

    // The newest result for a key, nullptr when none.
    const ProbeResult* latest(const ProbeKey& k) const;
    // Appends r under its key, dropping the oldest beyond kHistoryLimit. A probe that did not
    // run for the same reason as the one before it replaces that one (info "repeated" counts
    // them), so a long busy spell cannot push the last real run out of the history.
    void add(ProbeResult r);
    // A rotating peer's result: counted in its rail's summary, and remembered as that peer's
    // newest for `keep_for` (two rounds) in the worst-peers sets. A probe that did not run
    // (busy) or was stopped is not counted.
    void add_mesh(const ProbeResult& r, std::chrono::milliseconds keep_for);
};

// The newest result in `history` that ran (probe_ran); nullptr when none did.
const ProbeResult* last_run(const std::deque<ProbeResult>& history);

}  // namespace rocewatch
