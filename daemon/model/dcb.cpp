// Which priority RoCE v2 traffic gets from a netdev's DCB APP table.
#include "daemon/model/dcb.hpp"

#include <linux/dcbnl.h>

namespace rocewatch {

namespace {
constexpr uint16_t kRoceV2Port = 4791;
}  // namespace

std::vector<int> priorities_in(uint8_t bits) {
    std::vector<int> out;
    for (int p = 0; p < 8; ++p)
        if ((bits >> p) & 1u) out.push_back(p);
    return out;
}

std::vector<int> pfc_priorities(const DcbIeee& d) { return priorities_in(d.pfc_enabled.value_or(0)); }

RocePriority roce_priority(const DcbIeee& d, int tos) {
    const int dscp = (tos >> 2) & 0x3f;
    bool maps_dscp = false;
    for (const auto& a : d.apps)
        if (a.selector == IEEE_8021QAZ_APP_SEL_DSCP) {
            maps_dscp = true;
            if (a.protocol == dscp)
                return {a.priority, "DSCP " + std::to_string(dscp) + " (ToS " + std::to_string(tos) +
                                        ") maps to priority " + std::to_string(a.priority) + " in the APP table"};
        }
    for (const auto& a : d.apps)
        if (a.selector == IEEE_8021QAZ_APP_SEL_DGRAM && a.protocol == kRoceV2Port)
            return {a.priority, "the APP table maps UDP port 4791 (RoCE v2) to priority " + std::to_string(a.priority)};
    if (maps_dscp)
        return {0, "the APP table maps DSCPs but not DSCP " + std::to_string(dscp) + " (ToS " + std::to_string(tos) +
                       "): priority 0"};
    return {0, "no APP table entry for RoCE v2 (UDP port 4791 or its DSCP): priority 0"};
}

}  // namespace rocewatch
