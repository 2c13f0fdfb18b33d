// What kind of RDMA port a port is.
#include "daemon/model/rdma_port.hpp"

#include <charconv>

namespace rocewatch {

const char* to_string(NicFamily f) {
    switch (f) {
        case NicFamily::roce: return "roce";
        case NicFamily::infiniband: return "infiniband";
        case NicFamily::iwarp: return "iwarp";
        case NicFamily::usnic: return "usnic";
    }
    return "unknown";
}

std::optional<int> node_type_number(const std::string& node_type) {
    const auto colon = node_type.find(':');
    if (colon == std::string::npos || colon == 0) return std::nullopt;
    int n = 0;
    const char* end = node_type.data() + colon;
    auto [p, ec] = std::from_chars(node_type.data(), end, n);
    if (ec != std::errc() || p != end) return std::nullopt;
    return n;
}

NicFamily nic_family(const RdmaDevice& d, const RdmaPort& p) {
    if (p.link_layer == "InfiniBand") return NicFamily::infiniband;
    // include/rdma/ib_verbs.h, enum rdma_node_type: 1 CA, 2 switch, 3 router, 4 RNIC,
    // 5 usNIC, 6 usNIC UDP, 7 unspecified.
    switch (node_type_number(d.node_type).value_or(1)) {
        case 4: return NicFamily::iwarp;
        case 5:
        case 6: return NicFamily::usnic;
        default: return NicFamily::roce;
    }
}

}  // namespace rocewatch
