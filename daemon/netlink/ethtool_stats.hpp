// A netdev's driver statistics by name (what `ethtool -S` prints): ETHTOOL_GSSET_INFO,
// ETHTOOL_GSTRINGS and ETHTOOL_GSTATS over the SIOCETHTOOL ioctl, the only interface the
// kernel gives them through (ethtool netlink carries the standard groups, not the driver's
// own counters such as mlx5's rx_prio3_pause or tx_pause_storm_warning_events).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/model/driver_stats.hpp"

namespace rocewatch {

// Pure. The driver statistics rocewatch keeps: what decides whether RoCE is lossless in
// practice, those model/driver_stats.hpp gives a meaning (pause frames, pause storms,
// discards at the port).
[[nodiscard]] bool is_lossless_stat(std::string_view name);

// Reads driver statistics of netdevs in this network namespace, keeping the names each
// driver reported (they change only with the driver, so GSTRINGS is asked again only when
// the count changes) and one socket to ask them on (made at the first read; not one made
// and closed for each netdev of each read). Thread-safe.
// Never throws.
class DriverStatsReader {
public:
    // keep: which names to return (all when unset).
    explicit DriverStatsReader(std::function<bool(std::string_view)> keep = {}) : keep_(std::move(keep)) {}
    ~DriverStatsReader();
    DriverStatsReader(const DriverStatsReader&) = delete;
    DriverStatsReader& operator=(const DriverStatsReader&) = delete;
    DriverStats read(const std::string& ifname);

private:
    std::function<bool(std::string_view)> keep_;
    std::mutex mu_;
    int fd_ = -1;                                            // guarded by mu_ until made
    std::map<std::string, std::vector<std::string>> names_;  // by netdev: every name, in order
};

}  // namespace rocewatch
