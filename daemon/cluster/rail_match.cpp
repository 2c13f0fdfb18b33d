// Automatic rail matching: which of a peer's interfaces each local rail reaches, from the peer's hello. Pure.
#include "daemon/cluster/rail_match.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <sys/socket.h>

#include "daemon/rules/ipv4.hpp"

namespace rocewatch {
namespace {

struct Subnet {
    uint32_t network = 0;
    int prefixlen = 0;
    auto operator<=>(const Subnet&) const = default;
    std::string text() const { return ipv4::format(network) + "/" + std::to_string(prefixlen); }
};

// The first usable IPv4 prefix of a rail (link-local is on every interface and says nothing).
std::optional<std::pair<Subnet, std::string>> rail_subnet(const std::vector<PeerPrefix>& prefixes) {
    for (const auto& p : prefixes) {
        auto a = ipv4::parse(p.address);
        if (!a || ipv4::is_link_local(*a) || p.prefixlen <= 0 || p.prefixlen > 32) continue;
        return std::pair{Subnet{ipv4::network(*a, p.prefixlen), p.prefixlen}, p.address};
    }
    return std::nullopt;
}

// Addresses a peer's hello may not claim in a subnet: this node's own (probing them would
// measure this node's loopback and report the rail healthy whatever its cable does) and the
// subnet's network and broadcast addresses, which are no host's.
struct NotThePeers {
    const std::set<std::string>& own;
    bool refuses(uint32_t a, const std::string& text, const Subnet& subnet) const {
        if (own.count(text)) return true;
        if (subnet.prefixlen > 30) return false;  // /31 and /32 have no network or broadcast address
        return a == subnet.network || a == (subnet.network | ~ipv4::mask(subnet.prefixlen));
    }
};

// The peer's address on `iface` inside `subnet`, "" when none; one it may not claim is skipped
// and named in `refused`.
std::string address_in(const PeerInterfaceInfo& iface, const Subnet& subnet, const NotThePeers& not_theirs,
                       std::string* refused = nullptr) {
    for (const auto& p : iface.prefixes) {
        auto a = ipv4::parse(p.address);
        if (!a || ipv4::network(*a, subnet.prefixlen) != subnet.network) continue;
        if (not_theirs.refuses(*a, p.address, subnet)) {
            if (refused && refused->empty()) *refused = p.address;
            continue;
        }
        return p.address;
    }
    return "";
}

std::string ordinal(size_t i) {
    static const char* kSuffix[] = {"th", "st", "nd", "rd"};
    const size_t n = i + 1;
    const size_t mod = n % 10;
    return std::to_string(n) + ((n % 100 >= 11 && n % 100 <= 13) || mod > 3 ? "th" : kSuffix[mod]);
}

}  // namespace

std::vector<LocalRail> local_rails(const Snapshot& s, const Config& c) {
    std::vector<LocalRail> out;
    auto prefixes_of = [&](const std::string& netdev) {
        std::vector<PeerPrefix> p;
        if (const Link* l = find_link(s, netdev))
            for (const auto& a : l->addresses)
                if (a.family == AF_INET && a.scope == "global") p.push_back({a.address, a.prefixlen});
        return p;
    };
    if (!c.cluster.rails.empty()) {
        for (const auto& n : c.cluster.rails) out.push_back({n, "", n, prefixes_of(n)});
        return out;
    }
    std::vector<std::string> devices = c.expect.rails;
    if (devices.empty()) {
        for (const auto& d : s.devices)
            if (std::ranges::find(c.expect.ignore_devices, d.name) == c.expect.ignore_devices.end())
                devices.push_back(d.name);
        std::ranges::sort(devices);
    }
    for (const auto& name : devices) {
        LocalRail r{name, name, "", {}};
        if (const RdmaDevice* d = find_device(s, name)) {
            for (const auto& p : d->ports)
                if (!p.netdev.empty()) {
                    r.netdev = p.netdev;
                    break;
                }
            if (r.netdev.empty() && !d->netdevs.empty()) r.netdev = d->netdevs.front();
        }
        if (!r.netdev.empty()) r.prefixes = prefixes_of(r.netdev);
        out.push_back(std::move(r));
    }
    return out;
}

std::set<std::string> local_addresses(const Snapshot& s) {
    std::set<std::string> out;
    for (const auto& l : s.links)
        for (const auto& a : l.addresses) out.insert(a.address);
    return out;
}

RailMatching match_rails(const std::vector<LocalRail>& local, const PeerHello& peer,
                         const std::set<std::string>& own_addresses) {
    RailMatching out;
    std::set<std::string> own = own_addresses;
    for (const auto& r : local)
        for (const auto& p : r.prefixes) own.insert(p.address);
    const NotThePeers not_theirs{own};
    std::string refused;         // the first address of ours (or no host's) the peer claimed
    std::set<std::string> used;  // peer interfaces already paired
    std::set<std::string> peer_rail_netdevs;
    for (const auto& r : peer.rails) peer_rail_netdevs.insert(r.netdev);
    auto peer_device = [&](const std::string& netdev) {
        for (const auto& r : peer.rails)
            if (r.netdev == netdev && !r.device.empty()) return r.device;
        auto it = peer.interfaces.find(netdev);
        return it == peer.interfaces.end() ? std::string() : it->second.rdma_device;
    };

    // Local rails by subnet, each group in rails order.
    std::map<Subnet, std::vector<size_t>> groups;
    std::vector<std::optional<std::pair<Subnet, std::string>>> subnets;
    for (size_t i = 0; i < local.size(); ++i) {
        subnets.push_back(rail_subnet(local[i].prefixes));
        if (subnets.back()) groups[subnets.back()->first].push_back(i);
    }
    std::vector<std::optional<RailMatch>> by_rail(local.size());
    std::vector<std::string> miss(local.size());

    for (const auto& [subnet, members] : groups) {
        const std::string net = subnet.text();
        refused.clear();
        if (members.size() == 1) {
            const size_t i = members.front();
            std::vector<std::string> cands;
            for (const auto& [name, iface] : peer.interfaces)
                if (!used.count(name) && !address_in(iface, subnet, not_theirs, &refused).empty())
                    cands.push_back(name);
            std::string why = "same subnet " + net;
            if (cands.size() > 1) {
                std::vector<std::string> rails, rdma;
                for (const auto& n : cands) {
                    if (peer_rail_netdevs.count(n)) rails.push_back(n);
                    if (!peer.interfaces.at(n).gid_types.empty()) rdma.push_back(n);
                }
                std::string all;
                for (const auto& n : cands) all += (all.empty() ? "" : ", ") + n;
                if (rails.size() == 1) {
                    why += "; of the peer's interfaces there (" + all + ") " + rails.front() + " is its rail";
                    cands = rails;
                } else if (peer.rails.empty() && rdma.size() == 1) {
                    why += "; of the peer's interfaces there (" + all + ") only " + rdma.front() + " has RoCE GIDs";
                    cands = rdma;
                } else {
                    miss[i] = "ambiguous: the peer has " + std::to_string(cands.size()) + " interfaces in " + net +
                              " (" + all + ") and none stands out as its rail";
                    continue;
                }
            }
            if (cands.empty()) {
                miss[i] = "no interface of the peer in " + net;
                if (!refused.empty())
                    miss[i] += " (its hello claims " + refused + ", which is this node's or no host's address)";
                continue;
            }
            const std::string& n = cands.front();
            used.insert(n);
            by_rail[i] = RailMatch{local[i].name,
                                   local[i].netdev,
                                   subnets[i]->second,
                                   local[i].device,
                                   n,
                                   address_in(peer.interfaces.at(n), subnet, not_theirs),
                                   peer_device(n),
                                   why};
            continue;
        }
        // Several rails in one subnet: by position, here and on the peer.
        std::vector<std::string> theirs;
        for (const auto& r : peer.rails) {
            auto it = peer.interfaces.find(r.netdev);
            if (it != peer.interfaces.end() && !used.count(r.netdev) &&
                !address_in(it->second, subnet, not_theirs, &refused).empty())
                theirs.push_back(r.netdev);
        }
        for (size_t pos = 0; pos < members.size(); ++pos) {
            const size_t i = members[pos];
            if (peer.rails.empty()) {
                miss[i] = "rails share subnet " + net +
                          " and the peer does not list its rails, so they cannot be "
                          "paired by order";
                continue;
            }
            if (pos >= theirs.size()) {
                miss[i] = "rails share subnet " + net + ": this is the " + ordinal(pos) + " here, the peer has " +
                          std::to_string(theirs.size()) + " there";
                continue;
            }
            const std::string& n = theirs[pos];
            used.insert(n);
            by_rail[i] = RailMatch{local[i].name,
                                   local[i].netdev,
                                   subnets[i]->second,
                                   local[i].device,
                                   n,
                                   address_in(peer.interfaces.at(n), subnet, not_theirs),
                                   peer_device(n),
                                   "rails share subnet " + net + ": the " + ordinal(pos) +
                                       " in rails order here and on the peer"};
        }
    }
    for (size_t i = 0; i < local.size(); ++i) {
        if (by_rail[i]) {
            out.matched.push_back(std::move(*by_rail[i]));
            continue;
        }
        if (!subnets[i])
            miss[i] = local[i].netdev.empty() ? "no netdev for RDMA device " + local[i].device
                                              : "no IPv4 address on " + local[i].netdev;
        out.unmatched.push_back({local[i].name, miss[i]});
    }
    return out;
}

PeerRailConfig rail_config(const RailMatch& m) {
    return PeerRailConfig{.name = m.rail,
                          .local_interface = m.local_interface,
                          .local_address = m.local_address,
                          .remote_address = m.remote_address,
                          .local_device = m.local_device,
                          .remote_device = m.remote_device};
}

}  // namespace rocewatch
