// What kind of RDMA port a port is, and whether it is up.
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

std::optional<bool> port_up(const RdmaPort& p) {
    const bool state_known = p.state || !p.state_name.empty();
    const bool phys_known = p.phys_state || !p.phys_state_name.empty();
    const bool active = p.state ? *p.state == 4 : p.state_name == "ACTIVE";
    const bool link_up = p.phys_state ? *p.phys_state == 5 : p.phys_state_name == "LinkUp";
    // Down where either readable part says so.
    if ((state_known && !active) || (phys_known && !link_up)) return false;
    // Not called up when the logical state cannot be read; a driver without a readable
    // phys_state is judged by its state alone.
    if (!state_known) return std::nullopt;
    return true;
}

const char* kernel_phys_state_name(int code) {
    static constexpr const char* kNames[] = {
        "", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test"};
    if (code < 0 || code >= static_cast<int>(std::size(kNames))) return "";
    return kNames[code];
}

namespace {

std::string words(const char* what, const std::optional<int>& code, const std::string& name, const char* fallback) {
    std::string w = what;
    if (!code && name.empty()) return w + " ?";
    w += ' ';
    if (code) w += std::to_string(*code) + ": ";
    w += name.empty() ? fallback : name;
    return w;
}

}  // namespace

std::string state_words(const RdmaPort& p) { return words("state", p.state, p.state_name, "?"); }

// The kernel's name for a code it names: a driver or a fixture that prints "4: ACTIVE" still
// means PortConfigurationTraining.
std::string phys_state_words(const RdmaPort& p) {
    const char* kernel = p.phys_state ? kernel_phys_state_name(*p.phys_state) : "";
    return words("phys_state", p.phys_state, *kernel ? kernel : p.phys_state_name, "?");
}

const RdmaPort* roce_port_for_netdev(const Snapshot& s, const std::string& netdev) {
    for (const auto& d : s.devices)
        for (const auto& p : d.ports)
            if (p.netdev == netdev && nic_family(d, p) == NicFamily::roce) return &p;
    return nullptr;
}

int rdma_cm_tos_for_netdev(const Snapshot& s, const std::string& netdev) {
    const RdmaPort* p = roce_port_for_netdev(s, netdev);
    return p ? p->rdma_cm_default_tos.value_or(0) : 0;
}

}  // namespace rocewatch
