// Reads RDMA devices, ports, GID tables and counters (and a few host facts) from a sysfs root.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/snapshot.hpp"

namespace rocewatch {

// ---------------------------------------------------------------- pure parsers

// "4: ACTIVE" -> {4, "ACTIVE"}; "5: LinkUp\n" -> {5, "LinkUp"}. Both halves are required.
[[nodiscard]] std::optional<std::pair<int, std::string>> parse_enum_line(std::string_view text);

// "100 Gb/sec (4X EDR)" -> 100.0, "2.5 Gb/sec (1X SDR)" -> 2.5.
[[nodiscard]] std::optional<double> parse_rate_gbps(std::string_view text);

// "0000:0000:0000:0000:0000:ffff:c0a8:640b" -> "192.168.100.11"; "" when the GID is not an
// IPv4-mapped address or not a GID at all.
[[nodiscard]] std::string ipv4_from_gid(std::string_view gid);

// True for any text that parses as an IPv6 address / GID.
[[nodiscard]] bool is_valid_gid(std::string_view gid);

// True for the all-zero GID that fills a table's empty slots.
[[nodiscard]] bool is_zero_gid(std::string_view gid);

// The text of one counter file: a decimal u64, surrounding whitespace allowed.
[[nodiscard]] std::optional<uint64_t> parse_u64_counter(std::string_view text);

// ---------------------------------------------------------------- reading a sysfs tree

struct SysfsReadResult {
    std::vector<RdmaDevice> devices;  // sorted by name; ports by number; GIDs by index
    uint64_t read_errors = 0;         // values skipped because unreadable or garbled
    std::vector<std::string> errors;  // the first kMaxErrorMessages, as "path: reason"

    static constexpr std::size_t kMaxErrorMessages = 20;
};

// Reads <sysfs_root>/class/infiniband/*. A host without that directory has no RDMA, which is
// a normal state: empty result, no errors. An unreadable or garbled file skips that one
// value and is counted; a file the driver simply does not provide is not an error.
// Each port's RoCE v2 GID is preselected with assign_roce_v2_gid(port, {}); the collector
// may redo it once it knows the netdevs' addresses.
struct SysfsReadOptions {
    // GID tables change only with addresses, links and bonds, and rxe has 1024 slots per
    // port: the collector reads them after netlink events and now and then, not every cycle.
    // Without them, ports have no gids and a LAG port has no netdev: the caller carries
    // both over from its last full read.
    bool gids = true;
};

[[nodiscard]] SysfsReadResult read_rdma_devices(const std::filesystem::path& sysfs_root,
                                                const SysfsReadOptions& opts = {});

// mlx5 names a RoCE LAG device mlx5_bond_N: its own netdev is the bond, and GIDs on the bond
// are how it is meant to work, not the failure of an enslaved port.
[[nodiscard]] bool is_lag_device_name(std::string_view name);

// Index of the RoCE v2 GID whose netdev is the port's and whose GID is IPv4-mapped. When
// there are several, the first address in preferred_ipv4 that has one wins, else the lowest
// index. Unset when the port has no netdev or no such GID.
[[nodiscard]] std::optional<int> select_roce_v2_ipv4_gid(const RdmaPort& port,
                                                         const std::vector<std::string>& preferred_ipv4);

// Sets port.roce_v2_ipv4_gid_index / roce_v2_ipv4_address (clears them when there is none).
void assign_roce_v2_gid(RdmaPort& port, const std::vector<std::string>& netdev_ipv4);

// ---------------------------------------------------------------- host facts

// hostname from <procfs_root>/sys/kernel/hostname; NVIDIA GPU from the PCI devices in
// <sysfs_root>/bus/pci/devices; nvidia_peermem from <sysfs_root>/module. ucx_version is left
// empty. Best effort: what cannot be read stays at its default.
[[nodiscard]] HostInfo read_host_info(const std::filesystem::path& sysfs_root,
                                      const std::filesystem::path& procfs_root);

}  // namespace rocewatch
