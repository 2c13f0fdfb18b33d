#include "daemon/model/driver_stats.hpp"

namespace rocewatch {

namespace {

// "3" -> 3 for a single digit 0..7; -1 otherwise.
int priority_digit(std::string_view s) { return s.size() == 1 && s[0] >= '0' && s[0] <= '7' ? s[0] - '0' : -1; }

// "<prefix><p><suffix>" with p one priority digit: p, else -1.
int priority_between(std::string_view name, std::string_view prefix, std::string_view suffix) {
    if (name.size() != prefix.size() + 1 + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix))
        return -1;
    return priority_digit(name.substr(prefix.size(), 1));
}

}  // namespace

std::optional<DriverStatMeaning> driver_stat_meaning(std::string_view name) {
    using K = DriverStatKind;
    if (name == "tx_pause_storm_warning_events") return DriverStatMeaning{K::pause_storm, "tx", -1, "warning"};
    if (name == "tx_pause_storm_error_events") return DriverStatMeaning{K::pause_storm, "tx", -1, "error"};
    if (name == "fec_corrected_blocks") return DriverStatMeaning{K::fec_blocks, "rx", -1, "corrected"};
    if (name == "fec_uncorrectable_blocks") return DriverStatMeaning{K::fec_blocks, "rx", -1, "uncorrectable"};
    if (name == "rx_discards_phy") return DriverStatMeaning{K::discards, "rx", -1, ""};
    if (int p = priority_between(name, "rx_prio", "_discards"); p >= 0)
        return DriverStatMeaning{K::discards, "rx", p, ""};
    for (std::string_view dir : {"rx", "tx"}) {
        if (!name.starts_with(dir) || name.size() < 3 || name[2] != '_') continue;
        const std::string_view rest = name.substr(3);
        const std::string d(dir);
        if (rest == "pause_ctrl_phy" || rest == "pause_frames") return DriverStatMeaning{K::pause_frames, d, -1, ""};
        if (int p = priority_between(rest, "prio", "_pause"); p >= 0)
            return DriverStatMeaning{K::pause_frames, d, p, ""};
        if (int p = priority_between(rest, "pfc_ena_frames_pri", ""); p >= 0)
            return DriverStatMeaning{K::pause_frames, d, p, ""};
    }
    return std::nullopt;
}

}  // namespace rocewatch
