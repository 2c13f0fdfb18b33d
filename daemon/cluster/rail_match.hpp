// Automatic rail matching: which of a peer's interfaces each local rail reaches, from the peer's hello. Pure.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "daemon/model/config.hpp"
#include "daemon/model/probe.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// One rail of this node, as the matcher sees it.
struct LocalRail {
    std::string name;                  // the rail's name in results and metrics: its RDMA device, or its netdev
    std::string device;                // RDMA device, "" for a netdev-only rail
    std::string netdev;                // "" when the device has no netdev
    std::vector<PeerPrefix> prefixes;  // IPv4, global scope
};

struct RailMatch {
    std::string rail;  // the local rail's name
    std::string local_interface;
    std::string local_address;
    std::string local_device;
    std::string remote_interface;
    std::string remote_address;
    std::string remote_device;
    std::string reason;  // why these two: "same subnet 10.0.1.0/24", ...
};

struct RailMiss {
    std::string rail;
    std::string reason;  // "no interface of the peer in 10.0.3.0/24", ...
};

struct RailMatching {
    std::vector<RailMatch> matched;  // in local rail order
    std::vector<RailMiss> unmatched;
};

// This node's rails, in order: [cluster] rails (netdevs) when set; else [expect] rails (RDMA
// devices, each with its first port's netdev); else every RDMA device not in ignore_devices,
// by name. The hello's `rails` list is the same thing seen from the peer.
std::vector<LocalRail> local_rails(const Snapshot& s, const Config& c);

// Pairs each local rail with one peer interface:
// - a rail alone in its subnet pairs with the peer's interface in that subnet; when the peer
//   has several there, the one it names as a rail wins, else the only one with RoCE GIDs, else
//   none (ambiguous, never a guess);
// - rails that share one subnet pair by position: the i-th of them here (in rails order) with
//   the i-th of the peer's rails in that subnet (in its order).
// A peer interface is used by one rail at most. An address of this node (`own_addresses`, and
// the local rails' own) or a subnet's network or broadcast address is never taken as the
// peer's: a hello that claims one would have this node probe itself.
RailMatching match_rails(const std::vector<LocalRail>& local, const PeerHello& peer,
                         const std::set<std::string>& own_addresses);

// Every address of this node's links, any family: what match_rails never takes as a peer's.
std::set<std::string> local_addresses(const Snapshot& s);

// The [[peers.rails]] entry a match stands for.
PeerRailConfig rail_config(const RailMatch& m);

}  // namespace rocewatch
