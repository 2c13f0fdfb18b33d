// String conversions and lookups over the model types.
#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

const char* to_string(Severity s) {
    switch (s) {
        case Severity::info: return "info";
        case Severity::warning: return "warning";
        case Severity::critical: return "critical";
    }
    return "unknown";
}

const char* to_string(AlertState s) {
    switch (s) {
        case AlertState::inactive: return "inactive";
        case AlertState::pending: return "pending";
        case AlertState::firing: return "firing";
        case AlertState::resolved: return "resolved";
    }
    return "unknown";
}

const char* to_string(Health h) {
    switch (h) {
        case Health::healthy: return "healthy";
        case Health::warning: return "warning";
        case Health::critical: return "critical";
    }
    return "unknown";
}

const char* to_string(Scope s) {
    switch (s) {
        case Scope::node: return "node";
        case Scope::peer: return "peer";
        case Scope::path: return "path";
    }
    return "unknown";
}

std::optional<Scope> scope_from_string(const std::string& s) {
    if (s == "node") return Scope::node;
    if (s == "peer") return Scope::peer;
    if (s == "path") return Scope::path;
    return std::nullopt;
}

std::optional<Severity> severity_from_string(const std::string& s) {
    if (s == "info") return Severity::info;
    if (s == "warning") return Severity::warning;
    if (s == "critical") return Severity::critical;
    return std::nullopt;
}

Health overall_health(const Snapshot& s) {
    Health h = Health::healthy;
    for (const auto& a : s.alerts) {
        if (a.state != AlertState::firing || a.scope != Scope::node) continue;
        if (a.severity == Severity::critical) return Health::critical;
        if (a.severity == Severity::warning) h = Health::warning;
    }
    return h;
}

const Link* find_link(const Snapshot& s, const std::string& name) {
    for (const auto& l : s.links)
        if (l.name == name) return &l;
    return nullptr;
}

const RdmaDevice* find_device(const Snapshot& s, const std::string& name) {
    for (const auto& d : s.devices)
        if (d.name == name) return &d;
    return nullptr;
}

std::string lldp_switch_name(const LldpNeighbor& n) { return n.system_name.empty() ? n.chassis_id : n.system_name; }

std::string lldp_port_name(const LldpNeighbor& n) {
    if (n.port_id_subtype == "mac" && !n.port_description.empty()) return n.port_description;
    return n.port_id.empty() ? n.port_description : n.port_id;
}

RuleSettings rule_settings(const Config& c, const std::string& rule) {
    auto it = c.rules.find(rule);
    return it == c.rules.end() ? RuleSettings{} : it->second;
}

}  // namespace rocewatch
