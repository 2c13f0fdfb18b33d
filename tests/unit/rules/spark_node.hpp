// Test snapshots: a healthy two-rail DGX Spark node, to break at will.
#pragma once

#include <sys/socket.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch::testing {

inline GidEntry v4_gid(int index, const std::string& type, const std::string& netdev, const std::string& ip,
                       const std::string& hex) {
    return {.index = index, .gid = "0000:0000:0000:0000:0000:ffff:" + hex, .type = type, .netdev = netdev, .ipv4 = ip};
}

// One RoCE rail: rocep1s0f<i> port 1 on enp1s0f<i>np<i>, ACTIVE, 100 Gb/s, RDMA MTU 4096,
// GIDs 0/1 link-local, 2 = IPv4 RoCE v1, 3 = IPv4 RoCE v2 (the index perftest's -x wants).
inline RdmaDevice rail(int i, const std::string& ip, const std::string& hex) {
    const std::string netdev = "enp1s0f" + std::to_string(i) + "np" + std::to_string(i);
    RdmaPort p;
    p.port = 1;
    p.state = 4;
    p.state_name = "ACTIVE";
    p.phys_state = 5;
    p.phys_state_name = "LinkUp";
    p.rate_gbps = 100;
    p.rate_text = "100 Gb/sec (2X HDR)";
    p.link_layer = "Ethernet";
    p.netdev = netdev;
    p.gids = {
        {.index = 0, .gid = "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13", .type = "IB/RoCE v1", .netdev = netdev},
        {.index = 1, .gid = "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13", .type = "RoCE v2", .netdev = netdev},
        v4_gid(2, "IB/RoCE v1", netdev, ip, hex),
        v4_gid(3, "RoCE v2", netdev, ip, hex),
    };
    p.roce_v2_ipv4_gid_index = 3;
    p.roce_v2_ipv4_address = ip;
    p.counters = {{"port_xmit_data", 1000}, {"port_rcv_data", 2000}, {"symbol_error", 0}, {"link_downed", 0}};
    p.hw_counters = {{"np_cnp_sent", 0}, {"rp_cnp_handled", 0}, {"local_ack_timeout_err", 0}};
    p.active_mtu = 4096;
    p.max_mtu = 4096;
    return RdmaDevice{.name = "rocep1s0f" + std::to_string(i),
                      .driver = "mlx5_core",
                      .netdevs = {netdev},
                      .ports = {p}};
}

inline Link netdev(int ifindex, const std::string& name, uint32_t mtu, std::vector<Address> addrs = {}) {
    return Link{.ifindex = ifindex,
                .name = name,
                .operstate = "up",
                .admin_up = true,
                .carrier = true,
                .carrier_changes = 2,
                .mtu = mtu,
                .addresses = std::move(addrs)};
}

inline Address v4(const std::string& a, int prefixlen, const std::string& scope = "global") {
    return {.family = AF_INET, .address = a, .prefixlen = prefixlen, .scope = scope};
}

// spark-02 once fixed: MTU 9000, one subnet per rail, no bond, peermem loaded.
// roceP2p1s0f0 / enP2p1s0f0np0 is the P2P interface that must stay out of the rails.
inline Snapshot healthy_spark() {
    Snapshot s;
    s.host = {.hostname = "spark-02", .nvidia_gpu_present = true, .nvidia_peermem_loaded = true};
    s.devices.push_back(rail(0, "192.168.100.11", "c0a8:640b"));
    s.devices.push_back(rail(1, "192.168.200.11", "c0a8:c80b"));
    RdmaDevice p2p = rail(0, "", "");
    p2p.name = "roceP2p1s0f0";
    p2p.netdevs = {"enP2p1s0f0np0"};
    p2p.ports[0].netdev = "enP2p1s0f0np0";
    p2p.ports[0].gids.resize(2);
    p2p.ports[0].roce_v2_ipv4_gid_index.reset();
    s.devices.push_back(p2p);

    s.links.push_back(netdev(1, "lo", 65536, {v4("127.0.0.1", 8, "host")}));
    s.links.back().operstate = "unknown";
    s.links.push_back(netdev(2, "enP7s7", 1500, {v4("10.0.0.5", 24)}));
    s.links.push_back(netdev(3, "enp1s0f0np0", 9000, {v4("192.168.100.11", 24)}));
    s.links.push_back(netdev(4, "enp1s0f1np1", 9000, {v4("192.168.200.11", 24)}));
    s.links.push_back(netdev(5, "enP2p1s0f0np0", 1500));
    return s;
}

// What an operator of that node writes: 100G rails, P2P device ignored.
inline Config spark_config() {
    Config c;
    c.expect.port_rate_gbps = 100;
    c.expect.ignore_devices = {"roceP2p1s0f0"};
    return c;
}

inline RdmaPort& port_of(Snapshot& s, const std::string& dev) {
    for (auto& d : s.devices)
        if (d.name == dev) return d.ports.front();
    throw std::out_of_range(dev);
}

inline Link& link_of(Snapshot& s, const std::string& name) {
    for (auto& l : s.links)
        if (l.name == name) return l;
    throw std::out_of_range(name);
}

// The notes' bond experiment: both rails enslaved to bond0 (balance-xor, layer3+4) with
// 192.168.100.11/24 on bond0, and the kernel moved the RoCE GIDs to bond0.
inline Snapshot bonded_spark() {
    Snapshot s = healthy_spark();
    Link bond = netdev(10, "bond0", 9000, {v4("192.168.100.11", 24)});
    bond.kind = "bond";
    bond.bond = BondInfo{.mode = "balance-xor",
                         .miimon = 100,
                         .xmit_hash_policy = "layer3+4",
                         .active_slave = "",
                         .slaves = {"enp1s0f0np0", "enp1s0f1np1"}};
    s.links.push_back(bond);
    for (const char* name : {"enp1s0f0np0", "enp1s0f1np1"}) {
        Link& l = link_of(s, name);
        l.addresses.clear();
        l.master = "bond0";
        l.master_ifindex = 10;
        l.slave = BondSlaveInfo{.state = "active", .mii_status = "up", .link_failure_count = 0};
    }
    for (const char* dev : {"rocep1s0f0", "rocep1s0f1"}) {
        RdmaPort& p = port_of(s, dev);
        p.gids = {
            {.index = 0, .gid = "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13", .type = "IB/RoCE v1", .netdev = "bond0"},
            {.index = 1, .gid = "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13", .type = "RoCE v2", .netdev = "bond0"},
            v4_gid(2, "IB/RoCE v1", "bond0", "192.168.100.11", "c0a8:640b"),
            v4_gid(3, "RoCE v2", "bond0", "192.168.100.11", "c0a8:640b"),
        };
        p.roce_v2_ipv4_gid_index.reset();
        p.roce_v2_ipv4_address.clear();
    }
    return s;
}

}  // namespace rocewatch::testing
