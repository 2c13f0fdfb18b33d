// Which RDMA device, port and GID a probe rail uses, found in the node's snapshot. Pure.
#include "daemon/rules/rail_resolve.hpp"

#include <algorithm>

#include "daemon/rules/ipv4.hpp"

namespace rocewatch {
namespace {

RdmaPortChoice choice(const RdmaDevice& d, const RdmaPort& p, int gid_index) {
    return RdmaPortChoice{d.name, p.port, gid_index, p.netdev};
}

std::optional<RdmaPortChoice> first_port_of(const Snapshot& s, const std::string& device, int gid_index,
                                            std::string& why) {
    for (const auto& d : s.devices) {
        if (d.name != device) continue;
        if (d.ports.empty()) break;
        const auto& p = d.ports.front();
        return choice(d, p, gid_index >= 0 ? gid_index : p.roce_v2_ipv4_gid_index.value_or(-1));
    }
    why = "no RDMA device " + device + " on this node";
    return std::nullopt;
}

}  // namespace

std::optional<RdmaPortChoice> find_rdma_port_by_address(const Snapshot& s, const std::string& device,
                                                        const std::string& address, std::string& why) {
    for (const auto& d : s.devices) {
        if (!device.empty() && d.name != device) continue;
        for (const auto& p : d.ports)
            for (const auto& g : p.gids)
                if (g.type == "RoCE v2" && g.ipv4 == address) return choice(d, p, g.index);
    }
    why = "no RoCE v2 GID holds " + address + (device.empty() ? "" : " on " + device) +
          " (is the address on an RDMA netdev, and the netdev not enslaved to a bond?)";
    return std::nullopt;
}

std::optional<RdmaPortChoice> find_local_rail_port(const Snapshot& s, const PeerRailConfig& rail, std::string& why) {
    const std::string where = "rail " + rail.name + ": ";
    if (!rail.local_address.empty()) {
        auto c = find_rdma_port_by_address(s, rail.local_device, rail.local_address, why);
        if (!c) why = where + why;
        return c;
    }
    if (!rail.local_device.empty()) {
        auto c = first_port_of(s, rail.local_device, -1, why);
        if (!c) why = where + why;
        return c;
    }
    if (!rail.local_interface.empty()) {
        for (const auto& d : s.devices)
            for (const auto& p : d.ports)
                if (p.netdev == rail.local_interface) return choice(d, p, p.roce_v2_ipv4_gid_index.value_or(-1));
        why = where + "no RDMA port is bound to " + rail.local_interface;
        return std::nullopt;
    }
    // Nothing named: the netdev on the remote address's subnet, as the kernel would route.
    auto remote = ipv4::parse(rail.remote_address);
    if (remote)
        for (const auto& l : s.links)
            for (const auto& a : l.addresses) {
                auto local = ipv4::parse(a.address);
                if (!local || a.prefixlen <= 0 ||
                    ipv4::network(*local, a.prefixlen) != ipv4::network(*remote, a.prefixlen))
                    continue;
                std::string ignored;
                if (auto c = find_rdma_port_by_address(s, "", a.address, ignored)) return c;
            }
    why = where + "no RDMA port on the subnet of " + rail.remote_address +
          "; set local_device, local_interface or local_address";
    return std::nullopt;
}

const RdmaPort* find_rail_port(const Snapshot& s, const PeerRailConfig& rail) {
    // A named device is the rail's hardware even while the rail's address is not (yet) on
    // one of its GIDs (a veth rail beside it in tests, an address being moved): its link
    // rate and traffic still count.
    if (!rail.local_device.empty()) {
        const RdmaDevice* d = find_device(s, rail.local_device);
        if (!d || d->ports.empty()) return nullptr;
        for (const auto& p : d->ports)
            for (const auto& g : p.gids)
                if (!rail.local_address.empty() && g.ipv4 == rail.local_address) return &p;
        return &d->ports.front();
    }
    std::string why;
    auto c = find_local_rail_port(s, rail, why);
    if (!c) return nullptr;
    const RdmaDevice* d = find_device(s, c->device);
    if (!d) return nullptr;
    for (const auto& p : d->ports)
        if (p.port == c->port) return &p;
    return nullptr;
}

std::string rail_netdev(const Snapshot& s, const PeerRailConfig& rail) {
    if (!rail.local_interface.empty()) return rail.local_interface;
    const RdmaPort* p = find_rail_port(s, rail);
    return p ? p->netdev : "";
}

std::optional<double> rail_rate_bps(const Snapshot& s, const PeerRailConfig& rail) {
    const RdmaPort* p = find_rail_port(s, rail);
    if (!p || !p->rate_gbps || *p->rate_gbps <= 0) return std::nullopt;
    return *p->rate_gbps * 1e9;
}

std::optional<double> rail_utilisation(const Snapshot& s, const PeerRailConfig& rail) {
    const RdmaPort* p = find_rail_port(s, rail);
    if (!p || !p->rate_gbps || *p->rate_gbps <= 0) return std::nullopt;
    double busiest = 0;  // bytes per second
    for (const char* c : {"port_xmit_data", "port_rcv_data"})
        if (auto it = p->rates.find(c); it != p->rates.end()) busiest = std::max(busiest, it->second);
    return busiest * 8 / (*p->rate_gbps * 1e9);
}

std::optional<double> probe_utilisation(const Snapshot& s, const PeerConfig& peer, const PeerRailConfig* rail) {
    if (rail) return rail_utilisation(s, *rail);
    std::optional<double> busiest;
    for (const auto& r : peer.rails)
        if (auto u = rail_utilisation(s, r)) busiest = std::max(busiest.value_or(0.0), *u);
    return busiest;
}

std::optional<RdmaPortChoice> find_session_port(const Snapshot& s, const std::string& device, int gid_index,
                                                const std::string& address, std::string& why) {
    if (!address.empty()) {
        auto c = find_rdma_port_by_address(s, device, address, why);
        if (c && gid_index >= 0) c->gid_index = gid_index;
        return c;
    }
    if (!device.empty()) return first_port_of(s, device, gid_index, why);
    why = "the request names neither a device nor an address";
    return std::nullopt;
}

}  // namespace rocewatch
