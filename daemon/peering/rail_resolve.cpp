// Which RDMA device, port and GID a probe rail uses, found in the node's snapshot. Pure.
#include "peering/rail_resolve.hpp"

#include "rules/ipv4.hpp"

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
                if (!local || a.prefixlen <= 0 || ipv4::network(*local, a.prefixlen) != ipv4::network(*remote, a.prefixlen))
                    continue;
                std::string ignored;
                if (auto c = find_rdma_port_by_address(s, "", a.address, ignored)) return c;
            }
    why = where + "no RDMA port on the subnet of " + rail.remote_address +
          "; set local_device, local_interface or local_address";
    return std::nullopt;
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
