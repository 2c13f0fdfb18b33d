// The immutable picture of a node that collectors publish and everyone else reads.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/boxed.hpp"
#include "daemon/model/dcb.hpp"
#include "daemon/model/phy.hpp"
#include "daemon/model/shared_map.hpp"
#include "daemon/model/transceiver.hpp"

namespace rocewatch {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

// Seconds since the epoch, as JSON and Prometheus carry times.
inline double unix_seconds(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// ---------------------------------------------------------------- RDMA (sysfs)

struct GidEntry {
    int index = 0;
    std::string gid;     // as sysfs prints it: "0000:0000:0000:0000:0000:ffff:c0a8:640b"
    std::string type;    // "RoCE v2", "IB/RoCE v1", or "" where the attr could not be read
    std::string netdev;  // gid_attrs/ndevs/<idx>, "" for IB or unreadable
    std::string ipv4;    // dotted quad when the GID is IPv4-mapped (::ffff:a.b.c.d), else ""
};

struct RdmaPort {
    uint32_t port = 1;
    std::optional<int> state;         // 4
    std::string state_name;           // "ACTIVE"
    std::optional<int> phys_state;    // 5
    std::string phys_state_name;      // "LinkUp"
    std::optional<double> rate_gbps;  // 100
    std::string rate_text;            // "100 Gb/sec (4X EDR)"
    std::string link_layer;           // "Ethernet" (RoCE) or "InfiniBand"
    // InfiniBand addressing (ports/N/lid, sm_lid, sm_sl, cap_mask); Ethernet ports read 0.
    // sm_lid 0 on an InfiniBand port: no subnet manager has configured it.
    std::optional<uint32_t> lid;
    std::optional<uint32_t> sm_lid;
    std::optional<uint32_t> sm_sl;
    std::optional<uint32_t> cap_mask;  // PortInfo:CapabilityMask
    std::string netdev;                // netdev the port is bound to ("" if unknown)
    // rdma_cm's defaults for connections over the port, from configfs
    // (<sysfs_root>/kernel/config/rdma_cm/<dev>/ports/<n>/), where an administrator made
    // that directory; unset otherwise (rdma_cm then uses ToS 0 and RoCE v2).
    std::optional<int> rdma_cm_default_tos;
    std::string rdma_cm_default_mode;  // "RoCE v2", "IB/RoCE v1"; "" when not set
    // ECN per priority at the port's netdev, where its driver exposes it
    // (class/net/<netdev>/ecn/roce_{rp,np}/enable/<0..7>: mlx5 of MLNX_OFED / DOCA-OFED; the
    // upstream driver has no such files): bit p set, on for priority p. rp: the reaction
    // point (this node slows its sends on congestion notifications, DCQCN); np: the
    // notification point (this node answers ECN-marked packets with CNPs). Unset where the
    // files are absent or one of them could not be read. Read with the GID tables.
    std::optional<uint8_t> ecn_rp_enabled;
    std::optional<uint8_t> ecn_np_enabled;
    std::vector<GidEntry> gids;  // non-empty entries only
    // How the GID table was read: "verbs" (libibverbs' ibv_query_gid_table, one ioctl a
    // device, with each entry's netdev from sysfs) or "sysfs" (a file per slot); "" before any.
    std::string gids_source;
    // Index of the RoCE v2 GID holding the port netdev's IPv4 address (the one perftest's
    // -x and UCX need); unset when there is none.
    std::optional<int> roce_v2_ipv4_gid_index;
    std::string roce_v2_ipv4_address;
    // Raw counter values as read. counters/ (IB PMA, data counters in 4-byte words) and
    // hw_counters/ (driver specific) are kept apart. A counter that could not be read is
    // absent, never zero.
    // Shared with the snapshots that carry them over (SharedMap).
    SharedMap<uint64_t> counters;
    SharedMap<uint64_t> hw_counters;
    // Entries past the reader's per-port series cap, left out of counters / gids.
    uint64_t counters_dropped = 0;
    uint64_t gids_dropped = 0;
    // port_xmit_data / port_rcv_data converted to bytes (x4); absent when not readable.
    std::optional<uint64_t> xmit_bytes;
    std::optional<uint64_t> rcv_bytes;
    // From libibverbs where the device is visible to it (sysfs has none of these).
    std::optional<int> active_mtu;  // bytes: 256..4096
    std::optional<int> max_mtu;
    std::optional<int> active_speed;  // ibv enum value
    std::optional<int> active_width;  // ibv enum value
    // Filled by the trend stage: per-second rates over the last interval, keyed by the
    // same names as counters/hw_counters ("port_xmit_data" rate is in bytes/s already).
    SharedMap<double> rates;
    // Filled by the trend stage: increase of each counter over its judging window.
    SharedMap<uint64_t> window_increase;
};

struct RdmaDevice {
    std::string name;    // "rocep1s0f0", "rxe0"
    std::string driver;  // "mlx5_core", "rxe", ... (best effort)
    std::string node_guid;
    std::string sys_image_guid;
    std::string fw_ver;
    std::string board_id;
    std::string hca_type;
    std::string node_type;             // "1: CA"
    std::vector<std::string> netdevs;  // device/net/* or the rxe parent
    std::vector<RdmaPort> ports;
};

// ---------------------------------------------------------------- links (netlink)

struct Address {
    int family = 0;       // AF_INET / AF_INET6
    std::string address;  // "192.168.100.11"
    int prefixlen = 0;
    std::string scope;  // "global", "link", "host"
};

struct BondInfo {
    std::string mode;  // "balance-rr", "active-backup", "balance-xor", "802.3ad", ...
    std::optional<uint32_t> miimon;
    std::string xmit_hash_policy;     // "layer2", "layer3+4", ...
    std::string active_slave;         // name, "" when none
    std::vector<std::string> slaves;  // filled from the slaves' master index
};

struct BondSlaveInfo {
    std::string state;       // "active" / "backup"
    std::string mii_status;  // "up" / "down"
    std::optional<uint32_t> link_failure_count;
    std::string perm_hwaddr;
    std::optional<uint32_t> link_failure_increase;  // trend stage: over the judging window
};

// The device at the other end of a link as lldpd heard it (LLDP, or CDP/EDP/FDP/SONMP where
// lldpd listens for them): on a rail, the switch and its port. Strings as the device sent them.
struct LldpNeighbor {
    std::string protocol;                    // "LLDP", "CDPv2", ...
    std::string system_name;                 // "leaf-12"; "" when the device sends none
    std::string chassis_id;                  // formatted by its subtype: a MAC, an address, a name
    std::string chassis_id_subtype;          // "mac", "ip", "local", "ifname"...
    std::string port_id;                     // "Ethernet12", "swp12", or a MAC
    std::string port_id_subtype;             // "ifname", "mac", "local"...
    std::string port_description;            // "Ethernet12", "to node 7 rail A"...
    std::string management_address;          // the first one it sends
    std::optional<uint32_t> max_frame_size;  // IEEE 802.3 maximum frame size TLV, bytes
    std::optional<uint32_t> vlan_id;         // the port's VLAN ID (PVID), where sent
    uint32_t neighbours = 1;                 // devices heard on the link; above 1 is unusual
};

// What a person calls the other end: the switch by its name (else its chassis ID), the port by
// its name (a port ID that is a MAC says less than the port's description).
[[nodiscard]] std::string lldp_switch_name(const LldpNeighbor& n);
[[nodiscard]] std::string lldp_port_name(const LldpNeighbor& n);

// One answer from lldpd (daemon/lldp): the device heard on each link.
struct LldpAnswer {
    // No lldpd socket at that path: lldpd is not installed or not running. Not an error.
    bool absent = false;
    // Why the neighbours could not be read ("permission denied: ..."), "" when read.
    std::string error;
    std::map<std::string, LldpNeighbor> by_netdev;  // links lldpd hears a device on
};

struct Link {
    int ifindex = 0;
    std::string name;
    std::string kind;       // IFLA_INFO_KIND: "bond", "veth", "macvlan", "" for physical
    std::string operstate;  // "up", "down", "lowerlayerdown", "unknown", ...
    bool admin_up = false;  // IFF_UP
    bool carrier = false;
    std::optional<uint32_t> carrier_changes;  // IFLA_CARRIER_CHANGES
    uint32_t mtu = 0;
    int master_ifindex = 0;
    std::string master;  // name of the master, "" when none
    std::string mac;
    std::vector<Address> addresses;
    std::optional<BondInfo> bond;        // when kind == "bond"
    std::optional<BondSlaveInfo> slave;  // when enslaved to a bond
    // Trend stage: carrier transitions inside the flap window.
    uint32_t transitions_in_window = 0;
    // <procfs>/sys/net/ipv4/conf/<name>/: who answers ARP for which address, and reverse-path
    // filtering; unset where unreadable.
    std::optional<int> arp_ignore;
    std::optional<int> arp_announce;
    std::optional<int> rp_filter;
    // dcbnl's IEEE tables (PFC, ETS, APP), asked for RoCE netdevs only; unset elsewhere.
    std::optional<DcbState> dcb;
    // ethtool netlink's view of the physical link (link mode, FEC, pause), asked for RoCE
    // netdevs each cycle; unset elsewhere.
    Boxed<PhyLink> phy;
    // The transceiver module (ethtool -m), asked for RoCE netdevs every kModuleRefresh and
    // after link events; unset elsewhere, error set where there is none or it cannot be read.
    Boxed<Transceiver> module;
    // The device lldpd hears on this link, where lldpd runs and hears one (every kLldpRefresh).
    Boxed<LldpNeighbor> lldp;
    // The counters beyond rtnetlink's that decide whether RoCE is lossless and the link
    // healthy, read for RoCE netdevs each cycle (model/driver_stats.hpp gives each its
    // meaning): the driver's own by their ethtool -S names (pause frames per priority, pause
    // storm events, discards at the port; netlink/ethtool_stats.hpp), and ethtool netlink's
    // standard ones (fec_corrected_blocks, fec_uncorrectable_blocks, rx/tx_pause_frames)
    // where the driver has no name of its own for them. Empty elsewhere.
    std::map<std::string, uint64_t> driver_stats;
    // Trend stage: per second over the last interval, and the increase over
    // thresholds.counter_window (absent until there is a baseline), by the same names.
    std::map<std::string, double> driver_stat_rates;
    std::map<std::string, uint64_t> driver_stat_increase;
};

// A complete IPv4 neighbour (ARP) entry: who answered for an address, on which link.
struct Neighbour {
    std::string address;  // "192.168.100.12"
    std::string mac;      // "30:c5:99:3e:6a:23", lower case
    std::string link;     // our netdev it was learnt on
};

// A link's admin or carrier transition, or an address it lost or gained, as the netlink
// watcher saw it: what verdicts that see only counters need to tell a planned change
// (an admin-down to enslave a link or change its MTU) from a fault.
struct LinkEvent {
    TimePoint at{};
    std::string link;     // netdev name at the time
    std::string what;     // "admin_down", "admin_up", "carrier_down", "carrier_up",
                          // "address_removed", "address_added"
    std::string address;  // "192.168.100.11/24" for address events, else ""
};

// ---------------------------------------------------------------- host facts

struct HostInfo {
    std::string hostname;
    bool nvidia_gpu_present = false;     // a PCI display/3D controller with vendor 0x10de
    bool nvidia_peermem_loaded = false;  // /sys/module/nvidia_peermem
    std::string ucx_version;             // "" where UCX is not built in
};

// ---------------------------------------------------------------- collection health

struct CollectorStatus {
    std::string name;  // "sysfs", "netlink", "verbs", "host"
    bool success = false;
    double duration_seconds = 0;
    uint64_t read_errors = 0;         // files skipped this round
    std::string last_error;           // most recent error text, "" when none
    std::vector<std::string> errors;  // this round's errors, "path: reason", the first few dozen
    // Entries set aside as not what they were listed as (sysfs: a dangling device or port
    // symlink, a stray file), "path: why"; not errors.
    std::vector<std::string> ignored;
    TimePoint last_success{};  // when the data it contributed was read; older when it failed
};

// ---------------------------------------------------------------- verdicts

enum class Severity { info, warning, critical };
enum class AlertState { inactive, pending, firing, resolved };
// What an alert points at: this node, a peer, or the path between this node and a peer.
// Only node-scoped alerts judge this node's health (--once's exit code, health_status):
// node health checks drain nodes on it, and a dead peer must not drain its prober.
enum class Scope { node, peer, path };

// One finding of one rule about one object, as the pure rule evaluation produces it.
struct Finding {
    std::string rule;    // "port_down"
    std::string object;  // "rocep1s0f0/1", "enp1s0f0np0", "bond0"
    Severity severity = Severity::warning;
    Scope scope = Scope::node;                   // the rule's, set by evaluate_rules
    std::string summary;                         // one line: what is wrong, where
    std::string action;                          // what to do
    std::map<std::string, std::string> details;  // figures behind the verdict
};

struct Alert {
    std::string rule;
    std::string object;
    Severity severity = Severity::warning;
    AlertState state = AlertState::pending;
    Scope scope = Scope::node;
    std::string summary;
    std::string action;
    std::map<std::string, std::string> details;
    TimePoint since{};       // entered the current state
    TimePoint first_seen{};  // first pending
    TimePoint last_seen{};   // the finding was last present
};

struct AlertTransition {
    TimePoint at{};
    std::string rule;
    std::string object;
    Severity severity = Severity::warning;
    AlertState from = AlertState::inactive;
    AlertState to = AlertState::pending;
    std::string summary;
    Scope scope = Scope::node;
};

// ---------------------------------------------------------------- daemon status

struct DaemonStatus {
    TimePoint started_at{};
    std::string config_source;                    // file path, "" for built-in defaults
    bool config_last_reload_ok = true;            // false when the last SIGHUP reload was rejected
    TimePoint config_last_reload{};               // when the running config was loaded
    std::vector<std::string> config_last_errors;  // why the last reload was rejected
    bool ready = false;                           // first full collection done
};

// The node's probe budget ([probes] max_runs_per_minute, max_bytes_per_minute) as it stands:
// probes/budget.hpp keeps it, /metrics and /api/v1/probes show it.
struct ProbeBudgetStats {
    uint32_t max_runs_per_minute = 0;   // 0 = no limit
    uint64_t max_bytes_per_minute = 0;  // 0 = no limit
    uint32_t runs_last_minute = 0;      // own runs and peers' sessions admitted in the last 60 s
    uint64_t bytes_last_minute = 0;     // their payload bytes
    // Since start, by side: [0] runs this daemon started, [1] sessions its peers asked for.
    std::array<uint64_t, 2> admitted{};
    std::array<uint64_t, 2> refused{};
    std::array<uint64_t, 2> bytes{};
};

// The Alertmanager notifier's counters (daemon/alertmanager), as its metrics export them.
struct AlertmanagerStats {
    struct Target {
        std::string url;
        uint64_t sent = 0;    // alerts delivered (2xx)
        uint64_t errors = 0;  // alerts in POSTs that failed
    };
    std::vector<Target> targets;
    uint64_t dropped = 0;       // alerts pushed out of the full queue, never sent
    uint64_t queue_length = 0;  // alerts waiting
};

struct Config;
struct ProbeBook;     // model/probe.hpp
struct ClusterState;  // model/cluster.hpp

// ---------------------------------------------------------------- the snapshot

struct Snapshot {
    uint64_t generation = 0;
    TimePoint collected_at{};
    // When the ports' counters (and so their rates and window increases) were read: the
    // collector reads the counter files within a share of a core, so on a node with many
    // ports this is older than collected_at. Unset while no counters were read.
    TimePoint counters_read_at{};
    // The same for the RoCE netdevs' driver and ethtool counters (Link::driver_stats, phy),
    // read on the same schedule, and after link events.
    TimePoint link_counters_read_at{};
    std::string version;
    HostInfo host;
    std::vector<RdmaDevice> devices;
    std::vector<Link> links;
    std::vector<CollectorStatus> collectors;
    std::vector<Alert> alerts;                                    // pending and firing
    std::shared_ptr<const std::vector<AlertTransition>> history;  // oldest first
    std::shared_ptr<const Config> config;                         // the config in force
    // Latest probe results per (peer, rail, kind) with a short history, and peer hellos;
    // never null once the engine published (an empty book while probing is off).
    std::shared_ptr<const ProbeBook> probes;
    // The cluster inventory and this node's place in it; null when none is configured.
    std::shared_ptr<const ClusterState> cluster;
    DaemonStatus daemon;
    // Complete ARP entries (<procfs>/net/arp), for the cabling checks.
    std::vector<Neighbour> neighbours;
    // Link transitions and address changes seen by the netlink watcher, oldest first, bounded.
    std::vector<LinkEvent> link_events;
    uint64_t netlink_events = 0;                    // events seen since start
    uint64_t netlink_resyncs = 0;                   // re-dumps after buffer overruns
    std::optional<AlertmanagerStats> alertmanager;  // absent while no Alertmanager is configured
    std::optional<ProbeBudgetStats> probe_budget;   // absent while peer probing is off
};

// Overall verdict of this node: critical if any node-scoped critical alert fires, warning if
// any node-scoped alert fires. Peer- and path-scoped alerts are reported, never counted.
enum class Health { healthy, warning, critical };

const char* to_string(Severity s);
const char* to_string(AlertState s);
const char* to_string(Health h);
const char* to_string(Scope s);
std::optional<Severity> severity_from_string(const std::string& s);
std::optional<Scope> scope_from_string(const std::string& s);

Health overall_health(const Snapshot& s);

// Lookup helpers used by rules, API and metrics.
const Link* find_link(const Snapshot& s, const std::string& name);
const RdmaDevice* find_device(const Snapshot& s, const std::string& name);

}  // namespace rocewatch
