// What a NIC driver's own statistics (ethtool -S names) mean for lossless RoCE: pause frames
// per priority, pause storm events, discards at the port. One table for the reader, the
// rules and /metrics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocewatch {

// A netdev's driver statistics as read (netlink/ethtool_stats.hpp), or why not.
struct DriverStats {
    int error = 0;  // errno of the failed ioctl: EOPNOTSUPP (no driver stats), ENODEV, ...
    std::vector<std::pair<std::string, uint64_t>> values;  // in the driver's order
};

enum class DriverStatKind {
    pause_frames,  // PFC or global pause frames, received (rx) or sent (tx)
    pause_storm,   // the NIC kept sending pause frames past its storm threshold
    discards,      // packets dropped at the port, received
    fec_blocks,    // FEC codewords corrected, or uncorrectable (frames lost on the wire)
};

struct DriverStatMeaning {
    DriverStatKind kind = DriverStatKind::pause_frames;
    std::string direction;  // "rx" or "tx"
    int priority = -1;      // 0..7; -1: every priority together
    std::string level;      // pause_storm: "warning" or "error"; fec_blocks: "corrected" or
                            // "uncorrectable"; else ""
};

// Pure. mlx5: rx/tx_prio<p>_pause, rx/tx_pause_ctrl_phy, tx_pause_storm_warning_events,
// tx_pause_storm_error_events, rx_discards_phy, rx_prio<p>_discards; bnxt_en:
// rx/tx_pfc_ena_frames_pri<p>, rx/tx_pause_frames; ethtool netlink's standard
// fec_corrected_blocks / fec_uncorrectable_blocks. Unset for any other name.
[[nodiscard]] std::optional<DriverStatMeaning> driver_stat_meaning(std::string_view name);

}  // namespace rocewatch
