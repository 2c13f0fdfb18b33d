// Which RDMA device, port and GID a probe rail uses, found in the node's snapshot. Pure.
#pragma once

#include <optional>
#include <string>

#include "model/config.hpp"
#include "model/snapshot.hpp"

namespace rocewatch {

struct RdmaPortChoice {
    std::string device;
    uint32_t port = 1;
    int gid_index = -1;   // -1: let the verbs layer choose (first RoCE v2 IPv4 GID)
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

// The passive end of a session a peer asked for: by the address it dialled (and the
// device it named, if any); by device alone when no address was given.
std::optional<RdmaPortChoice> find_session_port(const Snapshot& s, const std::string& device, int gid_index,
                                                const std::string& address, std::string& why);

}  // namespace rocewatch
