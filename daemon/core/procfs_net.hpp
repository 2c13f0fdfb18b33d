// The IPv4 facts rtnetlink's link and address dumps leave out, read from procfs: each link's
// ARP and reverse-path sysctls, and the ARP table.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/snapshot.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"

namespace rocewatch {

// Fills arp_ignore, arp_announce and rp_filter of each link from
// <procfs_root>/sys/net/ipv4/conf/<name>/. The kernel acts on the larger of "all" and the
// link's own value for arp_ignore, arp_announce and rp_filter, so that is what is stored.
// files: kept open from read to read (three a link, with the counters), as the sysfs files
// are; null: each opened and closed.
void read_ipv4_conf(std::vector<Link>& links, const std::filesystem::path& procfs_root,
                    std::shared_ptr<SysfsFileCache> files = nullptr);

// The integer a sysctl file holds ("1\n"); unset when it holds anything else.
[[nodiscard]] std::optional<int> parse_sysctl_int(std::string_view text);

// Parses /proc/net/arp text: complete entries only (flags with ATF_COM), MACs lower case.
std::vector<Neighbour> parse_proc_net_arp(const std::string& text);
// <procfs_root>/net/arp; empty when unreadable.
std::vector<Neighbour> read_arp_table(const std::filesystem::path& procfs_root);

}  // namespace rocewatch
