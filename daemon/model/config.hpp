// The effective configuration: what the config file (or the built-in defaults) says.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/snapshot.hpp"

namespace rocewatch {

using Duration = std::chrono::milliseconds;
inline double as_seconds(Duration d) { return std::chrono::duration<double>(d).count(); }
// A latency limit: RDMA round trips are microseconds, below a Duration's resolution.
using LatencyLimit = std::chrono::microseconds;

struct DaemonConfig {
    std::string listen = "0.0.0.0:9879";
    Duration interval{5000};  // counter/sysfs collection interval
    std::string state_dir = "/var/lib/rocewatch";
    std::string sysfs_root = "/sys";
    std::string procfs_root = "/proc";
    std::string lldpd_socket = "/run/lldpd.socket";  // lldpd's control socket; "" = not asked
    std::string log_level = "info";
    int http_threads = 4;         // bounded worker pool
    Duration http_timeout{5000};  // read and write timeout per request
    size_t history_limit = 1000;  // alert transitions kept (and persisted)
    std::string web_config_file;  // TLS and basic auth (exporter toolkit format); "" = plain HTTP
};

// What a healthy node looks like. Unset optionals mean "do not judge this".
struct ExpectConfig {
    uint32_t mtu = 9000;                      // netdev MTU of every RDMA netdev
    std::optional<double> port_rate_gbps;     // e.g. 100 for the DGX Spark rails
    std::optional<int> roce_active_mtu;       // RoCE path MTU; default: the port's max_mtu
    std::vector<std::string> rails;           // RDMA device names that are rails; empty = all
    std::vector<std::string> ignore_devices;  // RDMA devices not to judge (e.g. roceP2p1s0f0)
    std::vector<std::string> interfaces;      // extra netdevs to hold to up/MTU rules
};

struct Thresholds {
    double symbol_error_per_hour = 120;       // NVSentinel: BER 1e-12
    double local_ack_timeout_per_second = 1;  // NVSentinel: degraded above 1/s
    double cnp_per_second = 1000;             // congestion notifications handled/sent
    double ecn_marked_per_second = 1000;
    double pause_frames_per_second = 1000;             // PFC/pause frames sent or received, per priority
    double pre_fec_ber = 1e-6;                         // bit error rate FEC corrects: degrading above
    uint32_t flap_transitions = 6;                     // carrier changes (3 down/up cycles)...
    Duration flap_window{std::chrono::minutes(10)};    // ...inside this window
    Duration counter_window{std::chrono::minutes(5)};  // window for "rising" counters
};

struct RuleSettings {
    bool enabled = true;
    Duration for_duration{0};                        // pending this long before firing
    Duration clear_after{std::chrono::seconds(30)};  // absent this long before resolving
    std::optional<Severity> severity;                // override of the rule's own severity
};

// [probes.tcp_lat]: small-message ping-pong, often and light.
struct TcpLatProbeConfig {
    Duration interval{std::chrono::seconds(30)};
    Duration jitter{std::chrono::seconds(3)};       // each run starts up to this much later
    uint32_t count = 100;                           // ping-pongs per run
    uint32_t size = 64;                             // bytes each way
    Duration timeout{std::chrono::seconds(5)};      // whole probe deadline
    std::optional<LatencyLimit> latency_threshold;  // p99 limit; unset: [probes] latency_threshold
};

// [probes.tcp_bw]: bulk streams, rarely and short.
struct TcpBwProbeConfig {
    Duration interval{std::chrono::minutes(15)};
    Duration jitter{std::chrono::seconds(60)};
    Duration duration{std::chrono::seconds(2)};  // sending time
    uint32_t streams = 1;                        // parallel connections (iperf3 -P)
    // Skip (reason "skipped_busy") while the rail already carries more than this fraction
    // of its link rate in real traffic.
    double busy_fraction = 0.5;
};

// [probes.rdma_bw]: RDMA write bandwidth per rail (rdma_write_bw) and on all rails at once
// (rdma_multirail_bw), as perftest's ib_write_bw; rarely and short.
struct RdmaBwProbeConfig {
    Duration interval{std::chrono::minutes(30)};
    Duration jitter{std::chrono::minutes(2)};
    Duration duration{std::chrono::seconds(2)};  // posting time
    uint32_t message_size = 64 * 1024;           // perftest -s
    uint32_t tx_depth = 128;                     // outstanding WRs per QP (perftest -t)
    uint32_t qps_per_rail = 2;                   // QPs per rail (perftest -q); 2+ for 100G line rate
    double busy_fraction = 0.5;                  // as [probes.tcp_bw]
};

// [probes.rdma_lat]: ib_write_lat ping-pong per rail; often and tiny.
struct RdmaLatProbeConfig {
    Duration interval{std::chrono::seconds(60)};
    Duration jitter{std::chrono::seconds(5)};
    uint32_t count = 1000;  // ping-pongs (perftest -n)
    uint32_t size = 2;      // bytes (perftest default)
    Duration timeout{std::chrono::seconds(5)};
    std::optional<LatencyLimit> latency_threshold;  // p99 limit; unset: [probes] latency_threshold
};

// [probes.ucx_bw]: ucp put bandwidth over the lanes UCX selects (the path NIXL uses).
struct UcxBwProbeConfig {
    Duration interval{std::chrono::minutes(30)};
    Duration jitter{std::chrono::minutes(2)};
    Duration duration{std::chrono::seconds(2)};
    uint32_t message_size = 64 * 1024;
    double busy_fraction = 0.5;
};

// [probes.ucx_lat]: ucp put ping-pong.
struct UcxLatProbeConfig {
    Duration interval{std::chrono::seconds(60)};
    Duration jitter{std::chrono::seconds(5)};
    uint32_t count = 1000;
    uint32_t size = 8;
    Duration timeout{std::chrono::seconds(5)};
    std::optional<LatencyLimit> latency_threshold;  // p99 limit; unset: [probes] latency_threshold
};

// [probes]: what this daemon measures towards its peers, and what it grants them.
struct ProbesConfig {
    std::string token_file;     // 64 hex digits; "" = peer probing off
    uint16_t data_port = 9880;  // TCP probe data port this daemon serves
    // The address the data port binds: "" every address; unset, the host of [daemon] listen.
    std::optional<std::string> data_listen;
    std::vector<std::string> enabled = {"tcp_lat", "tcp_bw"};  // probe kinds run on schedule
    double bw_fraction_of_link = 0.9;                          // probe_bandwidth_low below this fraction
    Duration latency_threshold{1};  // probe_latency_high above this p99 (kinds without their own)
    // The node's probe budget (probes/budget.hpp): runs this daemon starts plus sessions its
    // peers ask for, and their payload bytes, in any 60 s; 0 = no limit.
    uint32_t max_runs_per_minute = 600;
    uint64_t max_bytes_per_minute = 1ull << 40;  // 1 TiB: above any default schedule, even on 8 x 400G
    TcpLatProbeConfig tcp_lat;
    TcpBwProbeConfig tcp_bw;
    RdmaBwProbeConfig rdma_bw;
    RdmaLatProbeConfig rdma_lat;
    UcxBwProbeConfig ucx_bw;
    UcxLatProbeConfig ucx_lat;
};

// When and how long a probe kind runs, from its section of [probes].
struct ProbeTiming {
    Duration interval{0};
    Duration jitter{0};
    // The whole probe's deadline: sending time plus set-up and report for bandwidth kinds,
    // the configured timeout for latency kinds.
    Duration budget{0};
    std::optional<double> busy_fraction;  // bandwidth kinds: skip above this rail utilisation
};

// [cluster]: one inventory for the whole cluster, and who probes whom in it.
struct ClusterConfig {
    std::string inventory;  // Prometheus file_sd JSON file; "" = no inventory
    // Netdevs that are this node's rails, in order, where they are not RDMA devices (TCP-only
    // nodes, tests); empty: the netdevs of [expect] rails (or of every RDMA device).
    std::vector<std::string> rails;
    uint32_t ring_successors = 3;  // each node probes the k entries after it in the ring
    // And m more that change every rotate_every (inventory.hpp's rotating_peers): latency
    // kinds only, summarised per rail rather than exported per peer.
    uint32_t rotating_peers = 2;
    Duration rotate_every{std::chrono::minutes(1)};
    // How this daemon reaches peers' daemons: "https" where they serve TLS (a web config
    // with tls_server_config), their certificates verified against peer_ca_file ("" = the
    // system's trust store); peer_cert_file/peer_key_file where they require client certificates.
    std::string peer_scheme = "http";
    std::string peer_ca_file;
    std::string peer_cert_file;
    std::string peer_key_file;
};

// [[peers.rails]]: one path to a peer. remote_address is the peer's address on that rail.
struct PeerRailConfig {
    std::string name;
    std::string local_interface;  // netdev to bind to ("" = any)
    std::string local_address;    // source address ("" = kernel's choice)
    std::string remote_address;
    std::string local_device;  // RDMA device (for the RDMA probes)
    std::string remote_device;
    bool operator==(const PeerRailConfig&) const = default;
};

// [[peers]]: a peer daemon.
struct PeerConfig {
    std::string name;
    std::string address;  // host:port of its HTTP port (control)
    std::vector<PeerRailConfig> rails;
    // Taken from [cluster] inventory, not written in [[peers]]: its rails are matched from
    // its hello (daemon/cluster/rail_match), not configured.
    bool from_inventory = false;
    // One of the inventory's rotating peers (from_inventory too): probed for latency this
    // round only; its results go to the per-rail mesh summary (ProbeBook::mesh).
    bool rotating = false;
};

// [alertmanager]: where the daemon pushes its own firing and resolved alerts, as Prometheus
// does (Alertmanager's v2 API). No urls: nothing is pushed.
struct AlertmanagerConfig {
    std::vector<std::string> urls;                      // "http://am:9093" or https://, a path prefix
    Duration resend_interval{std::chrono::minutes(1)};  // every alert again after this long
    Duration timeout{std::chrono::seconds(10)};         // per POST: to connect, to send, to answer
    std::string node;                                   // the node label; "" = the host name
    std::string external_url;                           // base of generatorURL; "" = from listen
    std::string bearer_token_file;                      // "Authorization: Bearer <its content>"
    std::string basic_auth_username;                    // with basic_auth_password_file
    std::string basic_auth_password_file;
    // For https:// URLs: the CA that signed Alertmanager's certificate ("" = the system's store,
    // or $SSL_CERT_FILE), and our client certificate where Alertmanager asks for one.
    std::string ca_file;
    std::string cert_file, key_file;
    uint32_t queue_capacity = 10000;  // alerts waiting to be sent; beyond it the oldest go
};

// [metrics]: what /metrics exports. Netdev filters as node_exporter's
// --collector.netclass.ignored-devices: ECMAScript regexes searched in the name (anchor them
// with ^ and $ for a whole-name match); "" = no filter. A netdev goes out when it matches the
// include (or there is none) and does not match the exclude.
struct MetricsConfig {
    std::string netdev_include;
    std::string netdev_exclude;
};

struct Config {
    std::string source;  // file it came from, "" for defaults
    // Keys taken once at start that a reload found changed: the running values are kept
    // here (this config says what is in effect), and these wait for a restart.
    std::vector<std::string> restart_pending;
    DaemonConfig daemon;
    MetricsConfig metrics;
    ExpectConfig expect;
    Thresholds thresholds;
    std::map<std::string, RuleSettings> rules;  // by rule id; absent = defaults
    ProbesConfig probes;
    ClusterConfig cluster;
    std::vector<PeerConfig> peers;
    AlertmanagerConfig alertmanager;
};

enum class ProbeKind;
ProbeTiming probe_timing(const ProbesConfig& p, ProbeKind k);

// The p99 above which a latency kind's result is too slow, and the key that set it
// ("probes.rdma_lat.latency_threshold", or "probes.latency_threshold" when the kind has none).
struct LatencyThreshold {
    double seconds = 0;
    std::string key;
};
LatencyThreshold latency_threshold(const ProbesConfig& p, ProbeKind k);

// Settings of one rule with the defaults applied.
RuleSettings rule_settings(const Config& c, const std::string& rule);

}  // namespace rocewatch
