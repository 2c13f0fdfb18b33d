// Which RDMA device, port, GID and netdev a probe rail uses, found in the node's snapshot: the
// one home of that answer for the probes, the rules and the busy-skip. Pure.
#pragma once

#include <optional>
#include <string>

#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

struct RdmaPortChoice {
    std::string device;
    uint32_t port = 1;
    int gid_index = -1;  // -1: let the verbs layer choose (first RoCE v2 IPv4 GID)
    std::string netdev;
};

// The port and RoCE v2 GID that carry `address` (an IPv4 address of this node), restricted
// to `device` when it is not empty. nullopt with `why` when no RoCE v2 GID holds it.
std::optional<RdmaPortChoice> find_rdma_port_by_address(const Snapshot& s, const std::string& device,
                                                        const std::string& address, std::string& why);

// The local end of a configured rail, in this order: the GID of local_address; the first
// port of local_device (its RoCE v2 IPv4 GID); the port bound to local_interface; else the
// port whose netdev has an address in the same subnet as remote_address.
std::optional<RdmaPortChoice> find_local_rail_port(const Snapshot& s, const PeerRailConfig& rail, std::string& why);

// The snapshot's RDMA port at the local end of a rail, for its link rate, traffic and
// netdev: a named local_device's port (the one whose GID holds local_address, else its
// first), else by find_local_rail_port's order; nullptr when none.
const RdmaPort* find_rail_port(const Snapshot& s, const PeerRailConfig& rail);

// The netdev at the local end of a rail: local_interface when set, else its port's; "" when
// unknown.
std::string rail_netdev(const Snapshot& s, const PeerRailConfig& rail);

// The link rate of the rail's port in bits per second; nullopt when unknown.
std::optional<double> rail_rate_bps(const Snapshot& s, const PeerRailConfig& rail);

// Fraction of the rail's link rate real traffic uses (the busier of its port's transmit and
// receive data rates); nullopt when unknown.
std::optional<double> rail_utilisation(const Snapshot& s, const PeerRailConfig& rail);

// A probe over one rail is as busy as that rail; one over all rails (rail == nullptr:
// multi-rail, UCX's own lanes, a peer without rails) as the busiest rail of its peer.
std::optional<double> probe_utilisation(const Snapshot& s, const PeerConfig& peer, const PeerRailConfig* rail);

// The passive end of a session a peer asked for: by the address it dialled (and the
// device it named, if any); by device alone when no address was given.
std::optional<RdmaPortChoice> find_session_port(const Snapshot& s, const std::string& device, int gid_index,
                                                const std::string& address, std::string& why);

}  // namespace rocewatch
