// Cabling and identity between nodes: see cabling.hpp.
#include "daemon/rules/cabling.hpp"

#include <sys/socket.h>

#include <cctype>
#include <map>
#include <optional>
#include <string>

#include "daemon/model/probe.hpp"
#include "daemon/rules/ipv4.hpp"
#include "daemon/rules/rail_resolve.hpp"

namespace rocewatch {
namespace {

struct Cidr {
    uint32_t address = 0;
    int prefixlen = 32;
};

std::optional<Cidr> parse_cidr(const std::string& text) {
    const auto slash = text.find('/');
    auto a = ipv4::parse(text.substr(0, slash));
    if (!a) return std::nullopt;
    int len = 32;
    if (slash != std::string::npos) {
        try {
            len = std::stoi(text.substr(slash + 1));
        } catch (...) {
            return std::nullopt;
        }
        if (len < 0 || len > 32) return std::nullopt;
    }
    return Cidr{*a, len};
}

bool in_subnet(uint32_t addr, const Cidr& c) {
    return ipv4::network(addr, c.prefixlen) == ipv4::network(c.address, c.prefixlen);
}

std::string join_words(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
    return out;
}

std::string opt_text(const std::optional<int>& v) { return v ? std::to_string(*v) : "unknown"; }

std::string lower(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

Finding finding(const char* rule, Severity sev, std::string object, std::string summary, std::string action,
                std::map<std::string, std::string> details) {
    return Finding{.rule = rule,
                   .object = std::move(object),
                   .severity = sev,
                   .summary = std::move(summary),
                   .action = std::move(action),
                   .details = std::move(details)};
}

}  // namespace

std::vector<Finding> judge_cabling(const Snapshot& s, const Config& c) {
    std::vector<Finding> out;
    for (const auto& peer : c.peers) {
        const PeerHello* hello = nullptr;
        if (s.probes)
            if (auto it = s.probes->peers.find(peer.name); it != s.probes->peers.end() && it->second.hello)
                hello = &*it->second.hello;
        // The rail each of the peer's interfaces serves, by its remote address.
        std::map<std::string, std::string> rail_of_iface;
        if (hello)
            for (const auto& r : peer.rails)
                if (auto ai = hello->address_interface.find(r.remote_address); ai != hello->address_interface.end())
                    rail_of_iface[ai->second] = r.name;

        for (const auto& rail : peer.rails) {
            const std::string object = peer.name + "/" + rail.name;
            const auto remote = ipv4::parse(rail.remote_address);
            const std::string netdev = rail_netdev(s, rail);
            const Link* mine = netdev.empty() ? nullptr : find_link(s, netdev);
            if (!remote || !mine) continue;

            // Our rail netdev's subnets: the peer's rail address must be on one of them.
            std::vector<std::string> ours;
            bool on_subnet = false;
            for (const auto& a : mine->addresses) {
                auto v4 = a.family == AF_INET ? ipv4::parse(a.address) : std::nullopt;
                if (!v4) continue;
                ours.push_back(a.address + "/" + std::to_string(a.prefixlen));
                if (in_subnet(*remote, Cidr{*v4, a.prefixlen})) on_subnet = true;
            }
            if (!ours.empty() && !on_subnet) {
                out.push_back(
                    finding("rail_subnet_mismatch", Severity::warning, object,
                            "Rail " + rail.name + " to " + peer.name + ": the peer's address " + rail.remote_address +
                                " is on none of " + netdev + "'s subnets (" + join_words(ours) +
                                "): its packets follow the routing table, over whichever link it picks, not this rail",
                            "Give both ends of the rail addresses in one subnet (each rail its own subnet), or fix "
                            "remote_address in [[peers.rails]] to the peer's address on this rail.",
                            {{"netdev", netdev},
                             {"local_subnets", join_words(ours)},
                             {"remote_address", rail.remote_address}}));
                continue;
            }

            if (!hello) continue;
            auto ai = hello->address_interface.find(rail.remote_address);
            if (ai == hello->address_interface.end()) continue;
            const std::string& their_iface = ai->second;
            const auto& theirs = hello->interfaces.at(their_iface);
            if (theirs.mac.empty()) continue;  // a peer too old to say
            const Neighbour* seen = nullptr;
            for (const auto& n : s.neighbours)
                if (n.address == rail.remote_address && n.link == netdev) seen = &n;
            if (!seen || lower(seen->mac) == lower(theirs.mac)) continue;

            // Whose NIC answered? One of the peer's others, by its MAC.
            std::string answered;
            for (const auto& [name, info] : hello->interfaces)
                if (name != their_iface && !info.mac.empty() && lower(info.mac) == lower(seen->mac)) answered = name;
            if (answered.empty()) continue;  // not the peer's: a proxy or another host (no words for it yet)
            const auto& other = hello->interfaces.at(answered);
            bool same_subnet = false;
            for (const auto& cidr : other.cidrs)
                if (auto cd = parse_cidr(cidr); cd && in_subnet(*remote, *cd)) same_subnet = true;
            auto other_rail = rail_of_iface.find(answered);
            const std::string other_words = answered + (other_rail != rail_of_iface.end()
                                                            ? " (rail " + other_rail->second + ")"
                                                            : "");
            std::map<std::string, std::string> details{
                {"netdev", netdev},
                {"neighbour_mac", seen->mac},
                {"expected_mac", theirs.mac},
                {"peer_interface", their_iface},
                {"answering_interface", answered},
                {"peer_arp_ignore", opt_text(other.arp_ignore)},
                {"peer_arp_announce", opt_text(other.arp_announce)},
                {"peer_rp_filter", opt_text(other.rp_filter)},
            };
            if (same_subnet) {
                out.push_back(finding(
                    "arp_answered_by_wrong_nic", Severity::warning, object,
                    "Rail " + rail.name + " to " + peer.name + ": ARP for " + rail.remote_address + " on " + netdev +
                        " was answered by " + peer.name + "'s " + other_words + " (" + seen->mac + "), not by " +
                        their_iface + " (" + theirs.mac + "), which holds it; both are in one subnet and " + answered +
                        " answers for any local address (arp_ignore=" + opt_text(other.arp_ignore) +
                        ", arp_announce=" + opt_text(other.arp_announce) + ", rp_filter=" + opt_text(other.rp_filter) +
                        "): TCP may work over the wrong NIC while RDMA to the rail's GID fails",
                    "On " + peer.name +
                        ", answer ARP only from the NIC that holds the address: `sysctl -w "
                        "net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2` (and persist it in "
                        "/etc/sysctl.d/); then flush the neighbour here: `ip neigh flush dev " +
                        netdev + "`.",
                    std::move(details)));
            } else {
                out.push_back(finding("rails_crossed", Severity::critical, object,
                                      "Rail " + rail.name + " to " + peer.name + ": the neighbour for " +
                                          rail.remote_address + " on " + netdev + " is " + peer.name + "'s " +
                                          other_words + " (" + seen->mac + "), not " + their_iface + " (" + theirs.mac +
                                          "): this rail's cable or VLAN lands on the peer's other "
                                          "NIC, the rails are crossed",
                                      "Swap the rail cables (or switch ports / VLANs) so that " + netdev + " reaches " +
                                          peer.name + "'s " + their_iface +
                                          "; compare `ip -br link` MACs with the switch's MAC table or LLDP "
                                          "(`lldpctl`). With arp_ignore=1 on " +
                                          peer.name +
                                          " a crossed rail fails to resolve instead of answering from the wrong NIC.",
                                      std::move(details)));
            }
        }
    }
    return out;
}

}  // namespace rocewatch
