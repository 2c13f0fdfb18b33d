// Cabling and identity between nodes, per configured rail: is the peer's rail address reached
// through the peer's NIC for that rail? Pure: the snapshot's ARP table and links against the
// MACs, addresses and ARP sysctls each peer reports in its hello.
#pragma once

#include <vector>

#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// Findings of three rules (severity: the rule's default, for the caller to replace):
//   rails_crossed              our rail's neighbour for the peer's rail address is the peer's
//                              NIC of another rail, one on another subnet: the rail's cable
//                              (or VLAN) lands on the peer's other NIC
//   arp_answered_by_wrong_nic  it is the peer's NIC of another rail in the same subnet, which
//                              answered ARP for an address it does not hold (arp_ignore=0)
//   rail_subnet_mismatch       the peer's rail address is on none of our rail netdev's subnets,
//                              so its packets follow the routing table, not the rail
// Objects: "<peer>/<rail>".
std::vector<Finding> judge_cabling(const Snapshot& s, const Config& c);

}  // namespace rocewatch
