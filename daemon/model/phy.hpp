// The physical link of a netdev as the kernel's ethtool netlink interface reports it:
// negotiated link mode, FEC mode and FEC statistics, pause settings and pause statistics.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rocewatch {

struct PhyLink {
    // ETHTOOL_MSG_LINKMODES_GET; linkmodes_error: the kernel's errno (EOPNOTSUPP: the driver
    // does not report link modes), 0 when answered.
    int linkmodes_error = 0;
    std::optional<uint32_t> speed_mbps;  // unset when the driver says SPEED_UNKNOWN (no link)
    std::optional<uint32_t> lanes;       // kernel 5.10+, drivers that report it
    std::optional<bool> autoneg;
    std::string duplex;  // "full", "half"; "" when unknown
    // ETHTOOL_MSG_FEC_GET with statistics (EOPNOTSUPP: the driver has no FEC).
    int fec_error = 0;
    std::string fec_active;  // "None", "RS", "BaseR", "LLRS"; "" when not reported
    std::optional<bool> fec_auto;
    std::optional<uint64_t> fec_corrected_blocks;  // totals; per lane where the driver counts lanes
    std::optional<uint64_t> fec_uncorrectable_blocks;
    std::optional<uint64_t> fec_corrected_bits;
    std::vector<uint64_t> fec_corrected_blocks_lanes;
    std::vector<uint64_t> fec_uncorrectable_blocks_lanes;
    // ETHTOOL_MSG_PAUSE_GET with statistics (the IEEE 802.3 MAC control counters).
    int pause_error = 0;
    std::optional<bool> pause_autoneg;
    std::optional<bool> pause_rx;  // honours received pause frames
    std::optional<bool> pause_tx;  // sends pause frames
    std::optional<uint64_t> pause_tx_frames;
    std::optional<uint64_t> pause_rx_frames;
    // ETHTOOL_MSG_STATS_GET (kernel 5.13+): the IEEE 802.3 and RMON counters the driver keeps,
    // by group and the name `ethtool -S --groups` prints ("eth-mac/FrameCheckSequenceErrors",
    // "eth-phy/SymbolErrorDuringCarrier", "rmon/etherStatsJabbers"...).
    int stats_error = 0;
    std::map<std::string, uint64_t> standard_stats;
    bool operator==(const PhyLink&) const = default;
};

}  // namespace rocewatch
