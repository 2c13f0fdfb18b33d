// A DGX-Spark-like snapshot for the api tests: two 100G RoCE rails, the P2P device whose
// GIDs moved to a bond, a degraded bond, an overlapping subnet, alerts and history.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <memory>

#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch::api_sample {

// 2025-03-01T12:00:00Z
inline TimePoint sample_time() { return TimePoint{std::chrono::seconds(1740830400)}; }

inline RdmaPort rail_port(const std::string& netdev, const std::string& ipv4, const std::string& gid_hex) {
    RdmaPort p;
    p.port = 1;
    p.state = 4;
    p.state_name = "ACTIVE";
    p.phys_state = 5;
    p.phys_state_name = "LinkUp";
    p.rate_gbps = 100;
    p.rate_text = "100 Gb/sec (4X EDR)";
    p.link_layer = "Ethernet";
    p.netdev = netdev;
    p.gids = {
        {0, "fe80:0000:0000:0000:4ebb:47ff:fe00:0001", "IB/RoCE v1", netdev, ""},
        {1, "fe80:0000:0000:0000:4ebb:47ff:fe00:0001", "RoCE v2", netdev, ""},
        {2, "0000:0000:0000:0000:0000:ffff:" + gid_hex, "IB/RoCE v1", netdev, ipv4},
        {3, "0000:0000:0000:0000:0000:ffff:" + gid_hex, "RoCE v2", netdev, ipv4},
    };
    p.roce_v2_ipv4_gid_index = 3;
    p.roce_v2_ipv4_address = ipv4;
    p.counters = {{"port_xmit_data", 1'522'500'000},
                  {"port_rcv_data", 1'522'400'000},
                  {"symbol_error", 0},
                  {"link_downed", 1},
                  {"port_rcv_errors", 0},
                  {"port_xmit_discards", 0}};
    p.hw_counters = {{"np_cnp_sent", 12},
                     {"rp_cnp_handled", 40},
                     {"out_of_sequence", 0},
                     {"local_ack_timeout_err", 2},
                     {"lifespan", 12}};
    p.xmit_bytes = 6'090'000'000;
    p.rcv_bytes = 6'089'600'000;
    p.active_mtu = 1024;
    p.max_mtu = 4096;
    p.active_speed = 32;
    p.active_width = 2;
    p.rates = {{"port_xmit_data", 1.1679e10}, {"port_rcv_data", 2.5e3}};
    p.window_increase = {{"link_downed", 0}};
    return p;
}

inline Link link(int ifindex, const std::string& name, const std::string& kind, bool up, uint32_t mtu) {
    Link l;
    l.ifindex = ifindex;
    l.name = name;
    l.kind = kind;
    l.operstate = up ? "up" : "down";
    l.admin_up = true;
    l.carrier = up;
    l.carrier_changes = up ? 2u : 5u;
    l.mtu = mtu;
    l.mac = "4c:bb:47:00:00:" + std::to_string(10 + ifindex);
    return l;
}

inline Snapshot sample_snapshot() {
    const TimePoint t = sample_time();
    Snapshot s;
    s.generation = 42;
    s.collected_at = t;
    s.version = "0.1.0";
    s.host = {"spark-a", true, false, "1.16.0"};

    RdmaDevice r0;
    r0.name = "rocep1s0f0";
    r0.driver = "mlx5_core";
    r0.node_guid = "4cbb:4703:0000:0001";
    r0.sys_image_guid = "4cbb:4703:0000:0001";
    r0.fw_ver = "28.45.1020";
    r0.board_id = "NVD0000000087";
    r0.hca_type = "MT4129";
    r0.node_type = "1: CA";
    r0.netdevs = {"enp1s0f0np0"};
    r0.ports = {rail_port("enp1s0f0np0", "192.168.100.11", "c0a8:640b")};

    RdmaDevice r1 = r0;
    r1.name = "rocep1s0f1";
    r1.node_guid = "4cbb:4703:0000:0002";
    r1.netdevs = {"enp1s0f1np1"};
    r1.ports = {rail_port("enp1s0f1np1", "192.168.101.11", "c0a8:650b")};

    // The P2P device: its netdev is enslaved to bond0, so its GIDs name bond0.
    RdmaDevice p2p = r0;
    p2p.name = "roceP2p1s0f0";
    p2p.node_guid = "4cbb:4703:0000:0003";
    p2p.netdevs = {"enP2p1s0f0np0"};
    p2p.ports = {rail_port("enP2p1s0f0np0", "10.0.0.11", "0a00:000b")};
    auto& pp = p2p.ports[0];
    pp.roce_v2_ipv4_gid_index.reset();
    pp.roce_v2_ipv4_address.clear();
    for (auto& g : pp.gids) g.netdev = "bond0";
    pp.counters.edit().erase("port_rcv_data");  // unreadable this round: absent, not zero
    pp.rcv_bytes.reset();
    pp.active_mtu.reset();
    pp.max_mtu.reset();
    pp.rates.clear();
    s.devices = {r0, r1, p2p};

    Link lo = link(1, "lo", "", true, 65536);
    lo.addresses = {{AF_INET, "127.0.0.1", 8, "host"}};
    Link e0 = link(2, "enp1s0f0np0", "", true, 9000);
    e0.addresses = {{AF_INET, "192.168.100.11", 24, "global"}, {AF_INET6, "fe80::4ebb:47ff:fe00:1", 64, "link"}};
    Link e1 = link(3, "enp1s0f1np1", "", true, 1500);
    e1.addresses = {{AF_INET, "192.168.101.11", 24, "global"}};
    Link bond = link(4, "bond0", "bond", true, 9000);
    bond.addresses = {{AF_INET, "10.0.0.11", 24, "global"}};
    bond.bond = BondInfo{"balance-xor", 100u, "layer3+4", "", {"enP2p1s0f0np0", "enP2p1s0f1np1"}};
    Link s0 = link(5, "enP2p1s0f0np0", "", true, 9000);
    s0.master_ifindex = 4;
    s0.master = "bond0";
    s0.slave = BondSlaveInfo{"active", "up", 0u, "4c:bb:47:00:00:20", 0u};
    Link s1 = link(6, "enP2p1s0f1np1", "", false, 9000);
    s1.master_ifindex = 4;
    s1.master = "bond0";
    s1.slave = BondSlaveInfo{"backup", "down", 3u, "4c:bb:47:00:00:21", 1u};
    s1.transitions_in_window = 4;
    Link wifi = link(7, "wlP9s9", "", true, 1500);
    wifi.addresses = {{AF_INET, "192.168.100.15", 24, "global"}};
    wifi.carrier_changes.reset();
    s.links = {lo, e0, e1, bond, s0, s1, wifi};

    s.collectors = {{"sysfs", true, 0.012, 1, "hw_counters/np_ecn_marked_roce_packets: Invalid argument"},
                    {"netlink", true, 0.002, 0, ""},
                    {"verbs", true, 0.004, 0, ""},
                    {"host", false, 0.001, 2, "/sys/module: Permission denied"}};

    auto alert = [&](std::string rule, std::string object, Severity sev, AlertState st, std::string summary) {
        Alert a;
        a.rule = std::move(rule);
        a.object = std::move(object);
        a.severity = sev;
        a.state = st;
        a.summary = std::move(summary);
        a.action = "see the runbook";
        a.details = {{"observed", "1"}};
        a.since = t - std::chrono::seconds(30);
        a.first_seen = t - std::chrono::seconds(60);
        a.last_seen = t;
        return a;
    };
    s.alerts = {
        alert("bond_slave_down", "enP2p1s0f1np1", Severity::critical, AlertState::firing,
              "bond0 slave enP2p1s0f1np1 is down"),
        alert("roce_mtu_low", "rocep1s0f0/1", Severity::warning, AlertState::firing, "RoCE active MTU 1024 < max 4096"),
        alert("subnet_overlap", "wlP9s9", Severity::warning, AlertState::pending, "wlP9s9 shares 192.168.100.0/24"),
        alert("peermem_missing", "host", Severity::info, AlertState::firing, "nvidia_peermem is not loaded"),
    };

    auto hist = std::make_shared<std::vector<AlertTransition>>();
    hist->push_back({t - std::chrono::seconds(90), "bond_slave_down", "enP2p1s0f1np1", Severity::critical,
                     AlertState::inactive, AlertState::pending, "slave down"});
    hist->push_back({t - std::chrono::seconds(30), "bond_slave_down", "enP2p1s0f1np1", Severity::critical,
                     AlertState::pending, AlertState::firing, "slave down"});
    hist->push_back({t - std::chrono::seconds(10), "port_down", "rocep1s0f1/1", Severity::critical, AlertState::firing,
                     AlertState::resolved, "port back up"});
    s.history = hist;

    auto cfg = std::make_shared<Config>();
    cfg->source = "/etc/rocewatch/rocewatch.toml";
    s.config = cfg;

    s.daemon.started_at = t - std::chrono::minutes(10);
    s.daemon.config_source = "/etc/rocewatch/rocewatch.toml";
    s.daemon.config_last_reload_ok = false;
    s.daemon.config_last_reload = t - std::chrono::minutes(10);
    s.daemon.config_last_errors = {"rules.mtu_lo: unknown rule"};
    s.daemon.ready = true;
    s.netlink_events = 17;
    s.netlink_resyncs = 1;
    return s;
}

}  // namespace rocewatch::api_sample
