// Builds the REST API's JSON documents from a Snapshot; no I/O, no clocks.
#include "api/json_view.hpp"

#include "api/cluster_view.hpp"

#include "daemon/model/dcb.hpp"
#include "daemon/model/probe.hpp"
#include "daemon/model/rdma_port.hpp"
#include "util/clock.hpp"
#include "util/utf8.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <system_error>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <regex>

namespace rocewatch::api {

using nlohmann::json;

namespace {

template <class T>
json opt(const std::optional<T>& v) {
    return v ? json(*v) : json(nullptr);
}

json time_or_null(TimePoint t) {
    auto s = format_rfc3339(t);
    return s.empty() ? json(nullptr) : json(std::move(s));
}

const char* family_name(int family) {
    switch (family) {
        case AF_INET: return "inet";
        case AF_INET6: return "inet6";
        default: return "unknown";
    }
}

json gid_json(const GidEntry& g) {
    return {{"index", g.index},
            {"gid", g.gid},
            {"type", g.type.empty() ? json(nullptr) : json(g.type)},
            {"netdev", g.netdev.empty() ? json(nullptr) : json(g.netdev)},
            {"ipv4", g.ipv4.empty() ? json(nullptr) : json(g.ipv4)}};
}

// A port's counters (rates, increases) as one JSON object, by name.
template <class V>
json object_of(const SharedMap<V>& m) {
    json o = json::object();
    for (const auto& [name, v] : m) o[name] = v;
    return o;
}

json port_json(const RdmaDevice& d, const RdmaPort& p) {
    json gids = json::array();
    for (const auto& g : p.gids) gids.push_back(gid_json(g));
    json roce_gid = nullptr;
    if (p.roce_v2_ipv4_gid_index)
        roce_gid = {{"index", *p.roce_v2_ipv4_gid_index}, {"address", p.roce_v2_ipv4_address}};
    return {
        {"port", p.port},
        {"state", opt(p.state)},
        {"state_name", p.state_name},
        {"phys_state", opt(p.phys_state)},
        {"phys_state_name", p.phys_state_name},
        {"up", port_up(p) ? json(*port_up(p)) : json(nullptr)},
        {"rate_bytes_per_second", p.rate_gbps ? json(*p.rate_gbps * 1e9 / 8) : json(nullptr)},
        {"rate_text", p.rate_text},
        {"link_layer", p.link_layer},
        {"nic_family", to_string(nic_family(d, p))},
        {"lid", opt(p.lid)},
        {"sm_lid", opt(p.sm_lid)},
        {"sm_sl", opt(p.sm_sl)},
        {"cap_mask", opt(p.cap_mask)},
        {"rdma_cm_default_tos", opt(p.rdma_cm_default_tos)},
        {"rdma_cm_default_mode", p.rdma_cm_default_mode.empty() ? json(nullptr) : json(p.rdma_cm_default_mode)},
        {"ecn_rp_enabled_priorities", p.ecn_rp_enabled ? json(priorities_in(*p.ecn_rp_enabled)) : json(nullptr)},
        {"ecn_np_enabled_priorities", p.ecn_np_enabled ? json(priorities_in(*p.ecn_np_enabled)) : json(nullptr)},
        {"netdev", p.netdev.empty() ? json(nullptr) : json(p.netdev)},
        {"active_mtu", opt(p.active_mtu)},
        {"max_mtu", opt(p.max_mtu)},
        {"active_speed", opt(p.active_speed)},
        {"active_width", opt(p.active_width)},
        {"roce_v2_gid", std::move(roce_gid)},
        {"gids", std::move(gids)},
        {"gids_source", p.gids_source.empty() ? json(nullptr) : json(p.gids_source)},
        {"xmit_bytes", opt(p.xmit_bytes)},
        {"rcv_bytes", opt(p.rcv_bytes)},
        {"counters", object_of(p.counters)},
        {"hw_counters", object_of(p.hw_counters)},
        {"counters_dropped", p.counters_dropped},
        {"gids_dropped", p.gids_dropped},
        {"rates", object_of(p.rates)},
        {"window_increase", object_of(p.window_increase)},
    };
}

json device_object(const RdmaDevice& d) {
    json ports = json::array();
    for (const auto& p : d.ports) ports.push_back(port_json(d, p));
    return {{"name", d.name},           {"driver", d.driver},
            {"node_guid", d.node_guid}, {"sys_image_guid", d.sys_image_guid},
            {"fw_ver", d.fw_ver},       {"board_id", d.board_id},
            {"hca_type", d.hca_type},   {"node_type", d.node_type},
            {"netdevs", d.netdevs},     {"ports", std::move(ports)}};
}

// Every list document carries the generation and time it was cut from, so a client
// comparing two answers knows whether they came from the same collection.
json envelope(const Snapshot& s, const char* key, json items) {
    return {{"api_version", kApiVersion},
            {"generation", s.generation},
            {"collected_at", time_or_null(s.collected_at)},
            {key, std::move(items)}};
}

// A decimal number as the rules write them with num(): optional minus, digits, optional
// fraction and exponent. Hex, names and "5m" are not.
std::optional<double> as_number(const std::string& v) {
    static const std::regex kNumber(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)",
                                    std::regex::ECMAScript | std::regex::nosubs);
    if (v.empty() || v.size() > 32 || !std::regex_match(v, kNumber)) return std::nullopt;
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end != v.c_str() + v.size() || !std::isfinite(d)) return std::nullopt;
    return d;
}

json alert_object(const Alert& a) {
    return {{"rule", a.rule},
            {"object", a.object},
            {"severity", to_string(a.severity)},
            {"state", to_string(a.state)},
            {"scope", to_string(a.scope)},
            {"summary", a.summary},
            {"action", a.action},
            {"details", details_json(a.details)},
            {"state_changed_at", time_or_null(a.since)},
            {"first_seen_at", time_or_null(a.first_seen)},
            {"last_seen_at", time_or_null(a.last_seen)}};
}

}  // namespace

json versioned(json j) {
    j["api_version"] = kApiVersion;
    return j;
}

json details_json(const std::map<std::string, std::string>& details) {
    json out = json::object();
    for (const auto& [k, v] : details) {
        if (auto d = as_number(v)) {
            // Whole numbers stay integers in the JSON text ("1500", not "1500.0").
            if (v.find_first_of(".eE") == std::string::npos && v.size() < 19)
                out[k] = std::stoll(v);
            else
                out[k] = *d;
        } else {
            out[k] = v;
        }
    }
    return out;
}

std::string format_rfc3339(TimePoint t) {
    if (t == TimePoint{}) return {};
    const auto ms = std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    const int millis = static_cast<int>(ms - static_cast<long long>(secs) * 1000);
    std::tm tm{};
    if (!gmtime_r(&secs, &tm)) return {};
    std::array<char, 40> buf{};
    const int n = std::snprintf(buf.data(), buf.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : std::string{};
}

json status_json(const Snapshot& s, TimePoint now) {
    size_t ports = 0, ports_up = 0, bonds = 0, links_up = 0;
    for (const auto& d : s.devices)
        for (const auto& p : d.ports) {
            ++ports;
            if (port_up(p).value_or(false)) ++ports_up;
        }
    for (const auto& l : s.links) {
        if (l.bond) ++bonds;
        if (l.operstate == "up") ++links_up;
    }

    json by_severity = {{"info", 0}, {"warning", 0}, {"critical", 0}};
    json by_state = {{"pending", 0}, {"firing", 0}};
    for (const auto& a : s.alerts) {
        by_severity[to_string(a.severity)] = by_severity.value(to_string(a.severity), 0) + 1;
        by_state[to_string(a.state)] = by_state.value(to_string(a.state), 0) + 1;
    }

    json collectors = json::array();
    for (const auto& c : s.collectors)
        collectors.push_back(
            {{"name", c.name},
             {"success", c.success},
             {"duration_seconds", c.duration_seconds},
             {"read_errors", c.read_errors},
             {"last_error", c.last_error.empty() ? json(nullptr) : json(c.last_error)},
             {"errors", c.errors},
             {"ignored", c.ignored},
             {"last_success_at", time_or_null(c.last_success)},
             {"data_age_seconds",
              c.last_success != TimePoint{} ? json(seconds_between(c.last_success, now)) : json(nullptr)}});

    const bool collected = s.collected_at != TimePoint{};
    const bool started = s.daemon.started_at != TimePoint{};
    return {
        {"api_version", kApiVersion},
        {"health", to_string(overall_health(s))},
        {"hostname", s.host.hostname},
        {"version", s.version},
        {"generation", s.generation},
        {"collected_at", time_or_null(s.collected_at)},
        {"collection_age_seconds", collected ? json(seconds_between(s.collected_at, now)) : json(nullptr)},
        {"counters_read_at", time_or_null(s.counters_read_at)},
        {"counts",
         {{"devices", s.devices.size()},
          {"ports", ports},
          {"ports_up", ports_up},
          {"links", s.links.size()},
          {"links_up", links_up},
          {"bonds", bonds},
          {"alerts", {{"total", s.alerts.size()}, {"by_severity", by_severity}, {"by_state", by_state}}}}},
        {"daemon",
         {{"started_at", time_or_null(s.daemon.started_at)},
          {"uptime_seconds", started ? json(seconds_between(s.daemon.started_at, now)) : json(nullptr)},
          {"ready", s.daemon.ready},
          {"config_source", s.daemon.config_source.empty() ? json(nullptr) : json(s.daemon.config_source)},
          {"config_loaded_at", time_or_null(s.daemon.config_last_reload)},
          {"config_last_reload_ok", s.daemon.config_last_reload_ok},
          {"config_last_errors", s.daemon.config_last_errors}}},
        {"host",
         {{"nvidia_gpu_present", s.host.nvidia_gpu_present},
          {"nvidia_peermem_loaded", s.host.nvidia_peermem_loaded},
          {"ucx_version", s.host.ucx_version.empty() ? json(nullptr) : json(s.host.ucx_version)}}},
        {"netlink", {{"events", s.netlink_events}, {"resyncs", s.netlink_resyncs}}},
        {"collectors", std::move(collectors)},
        {"cluster", cluster_status_json(s)},
        // Peer probing on or off, and why off (no token file, unreadable token, data port taken).
        {"probes",
         {{"enabled", s.probes && s.probes->enabled},
          {"disabled_reason",
           s.probes && !s.probes->disabled_reason.empty() ? json(s.probes->disabled_reason) : json(nullptr)}}},
    };
}

json devices_json(const Snapshot& s) {
    json items = json::array();
    for (const auto& d : s.devices) items.push_back(device_object(d));
    return envelope(s, "devices", std::move(items));
}

std::optional<json> device_json(const Snapshot& s, const std::string& name) {
    const RdmaDevice* d = find_device(s, name);
    if (!d) return std::nullopt;
    json j = device_object(*d);
    j["generation"] = s.generation;
    j["collected_at"] = time_or_null(s.collected_at);
    j["api_version"] = kApiVersion;
    return j;
}

namespace {

const char* app_selector_name(uint8_t sel) {
    switch (sel) {
        case 1: return "ethertype";
        case 2: return "tcp_port";
        case 3: return "udp_port";
        case 4: return "port";
        case 5: return "dscp";
        default: return "unknown";
    }
}

// ethtool netlink's link modes, FEC and pause of a netdev; each part null with its error where
// the driver does not report it.
json phy_json(const PhyLink& p) {
    const auto part = [](int error, json fields) {
        return error == 0 ? std::move(fields) : json{{"error", std::generic_category().message(error)}};
    };
    const auto text = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    return {{"link_modes", part(p.linkmodes_error, {{"speed_bytes_per_second",
                                                     p.speed_mbps ? json(*p.speed_mbps * 1e6 / 8) : json(nullptr)},
                                                    {"lanes", opt(p.lanes)},
                                                    {"autoneg", opt(p.autoneg)},
                                                    {"duplex", text(p.duplex)}})},
            {"fec", part(p.fec_error, {{"active", text(p.fec_active)},
                                       {"auto", opt(p.fec_auto)},
                                       {"corrected_blocks", opt(p.fec_corrected_blocks)},
                                       {"uncorrectable_blocks", opt(p.fec_uncorrectable_blocks)},
                                       {"corrected_bits", opt(p.fec_corrected_bits)},
                                       {"corrected_blocks_per_lane", p.fec_corrected_blocks_lanes},
                                       {"uncorrectable_blocks_per_lane", p.fec_uncorrectable_blocks_lanes}})},
            {"pause", part(p.pause_error, {{"autoneg", opt(p.pause_autoneg)},
                                           {"rx", opt(p.pause_rx)},
                                           {"tx", opt(p.pause_tx)},
                                           {"tx_frames", opt(p.pause_tx_frames)},
                                           {"rx_frames", opt(p.pause_rx_frames)}})},
            {"standard_stats", part(p.stats_error, p.standard_stats)}};
}

// The device lldpd hears on the link: on a rail, the switch and its port.
json lldp_json(const LldpNeighbor& n) {
    const auto text = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
    return {{"switch", text(lldp_switch_name(n))},
            {"switch_port", text(lldp_port_name(n))},
            {"protocol", text(n.protocol)},
            {"system_name", text(n.system_name)},
            {"chassis_id", text(n.chassis_id)},
            {"chassis_id_subtype", text(n.chassis_id_subtype)},
            {"port_id", text(n.port_id)},
            {"port_id_subtype", text(n.port_id_subtype)},
            {"port_description", text(n.port_description)},
            {"management_address", text(n.management_address)},
            {"max_frame_size", opt(n.max_frame_size)},
            {"vlan_id", opt(n.vlan_id)},
            {"neighbours", n.neighbours}};
}

// The transceiver module (ethtool -m): identity, monitors per lane in SI-ish units the specs
// use (degrees C, volts, milliwatts, milliamps) and the module's own warning/alarm levels.
json module_json(const Transceiver& t) {
    if (t.error != 0) return {{"error", std::generic_category().message(t.error)}};
    const auto levels = [](const ModuleThresholds& th) {
        return json{{"high_alarm", opt(th.high_alarm)},
                    {"high_warning", opt(th.high_warning)},
                    {"low_warning", opt(th.low_warning)},
                    {"low_alarm", opt(th.low_alarm)}};
    };
    json lanes = json::array();
    for (size_t i = 0; i < t.lanes.size(); ++i)
        lanes.push_back({{"lane", i + 1},
                         {"rx_power_mw", opt(t.lanes[i].rx_power_mw)},
                         {"tx_power_mw", opt(t.lanes[i].tx_power_mw)},
                         {"tx_bias_ma", opt(t.lanes[i].tx_bias_ma)}});
    const auto text = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    return {{"spec", text(t.spec)},
            {"type", text(t.type)},
            {"identifier", t.identifier},
            {"vendor", text(t.vendor)},
            {"part_number", text(t.part_number)},
            {"serial", text(t.serial)},
            {"diagnostics", t.diagnostics},
            {"rx_power_type", t.rx_power_oma ? "oma" : "average"},
            {"media_lanes", opt(t.media_lanes)},
            {"nominal_lane_gbps", opt(t.nominal_lane_gbps)},
            {"fastest_application", t.fastest_application.empty() ? json(nullptr) : json(t.fastest_application)},
            {"fastest_application_gbps", opt(t.fastest_application_gbps)},
            {"temperature_celsius", opt(t.temperature_c)},
            {"voltage_volts", opt(t.voltage_v)},
            {"lanes", std::move(lanes)},
            {"thresholds",
             {{"temperature_celsius", levels(t.temperature_thresholds)},
              {"voltage_volts", levels(t.voltage_thresholds)},
              {"rx_power_mw", levels(t.rx_power_thresholds)},
              {"tx_power_mw", levels(t.tx_power_thresholds)},
              {"tx_bias_ma", levels(t.tx_bias_thresholds)}}}};
}

// The driver's pause, pause-storm and discard counters (ethtool -S names): value, rate per
// second and increase over the counter window where known; null where none were read.
json driver_stats_json(const Link& l) {
    if (l.driver_stats.empty()) return nullptr;
    json out = json::object();
    for (const auto& [name, v] : l.driver_stats) {
        auto r = l.driver_stat_rates.find(name);
        auto w = l.driver_stat_increase.find(name);
        out[name] = {{"value", v},
                     {"per_second", r != l.driver_stat_rates.end() ? json(r->second) : json(nullptr)},
                     {"window_increase", w != l.driver_stat_increase.end() ? json(w->second) : json(nullptr)}};
    }
    return out;
}

// A netdev's DCB as dcbnl gave it, and the priority RoCE v2 gets from it at the ToS rdma_cm
// gives its connections (configfs default_roce_tos, else 0).
json dcb_json(const DcbState& d, int tos) {
    if (d.error != 0) return {{"supported", false}, {"error", std::strerror(d.error)}};
    const DcbIeee& i = d.ieee;
    json j = {{"supported", true}};
    j["pfc_enabled_priorities"] = i.pfc_enabled ? json(pfc_priorities(i)) : json(nullptr);
    j["pfc_cap"] = i.pfc_cap ? json(*i.pfc_cap) : json(nullptr);
    j["prio_tc"] = i.prio_tc ? json(*i.prio_tc) : json(nullptr);
    j["tc_tx_bw_percent"] = i.tc_tx_bw ? json(*i.tc_tx_bw) : json(nullptr);
    json apps = json::array();
    for (const auto& a : i.apps)
        apps.push_back(
            {{"selector", app_selector_name(a.selector)}, {"protocol", a.protocol}, {"priority", a.priority}});
    j["app"] = std::move(apps);
    const auto roce = roce_priority(i, tos);
    j["roce_tos"] = tos;
    j["roce_priority"] = roce.priority;
    j["roce_priority_reason"] = roce.how;
    j["roce_priority_pfc"] = i.pfc_enabled ? json(pfc_on(i, roce.priority)) : json(nullptr);
    return j;
}

}  // namespace

json interfaces_json(const Snapshot& s) {
    json items = json::array();
    for (const auto& l : s.links) {
        json addrs = json::array();
        for (const auto& a : l.addresses)
            addrs.push_back({{"family", family_name(a.family)},
                             {"address", a.address},
                             {"prefixlen", a.prefixlen},
                             {"cidr", a.address + "/" + std::to_string(a.prefixlen)},
                             {"scope", a.scope}});
        // Which RDMA ports are bound to this netdev, and which GID entries name it: after
        // enslaving to a bond the GIDs move to the bond while the port still names the
        // physical netdev, and seeing both lists side by side is how that is spotted.
        json rdma = json::array();
        json gid_refs = json::array();
        for (const auto& d : s.devices)
            for (const auto& p : d.ports) {
                if (p.netdev == l.name)
                    rdma.push_back({{"device", d.name},
                                    {"port", p.port},
                                    {"state_name", p.state_name},
                                    {"roce_v2_gid_index", opt(p.roce_v2_ipv4_gid_index)}});
                for (const auto& g : p.gids)
                    if (g.netdev == l.name)
                        gid_refs.push_back({{"device", d.name},
                                            {"port", p.port},
                                            {"index", g.index},
                                            {"type", g.type.empty() ? json(nullptr) : json(g.type)},
                                            {"ipv4", g.ipv4.empty() ? json(nullptr) : json(g.ipv4)}});
            }
        items.push_back({{"name", l.name},
                         {"ifindex", l.ifindex},
                         {"kind", l.kind.empty() ? json(nullptr) : json(l.kind)},
                         {"operstate", l.operstate},
                         {"admin_up", l.admin_up},
                         {"carrier", l.carrier},
                         {"carrier_changes", opt(l.carrier_changes)},
                         {"carrier_transitions_in_window", l.transitions_in_window},
                         {"mtu", l.mtu},
                         {"mac", l.mac},
                         {"master", l.master.empty() ? json(nullptr) : json(l.master)},
                         {"is_bond", l.bond.has_value()},
                         {"addresses", std::move(addrs)},
                         {"rdma", std::move(rdma)},
                         {"gid_refs", std::move(gid_refs)},
                         {"dcb", l.dcb ? dcb_json(*l.dcb, rdma_cm_tos_for_netdev(s, l.name)) : json(nullptr)},
                         {"phy", l.phy ? phy_json(*l.phy) : json(nullptr)},
                         {"module", l.module ? module_json(*l.module) : json(nullptr)},
                         {"lldp", l.lldp ? lldp_json(*l.lldp) : json(nullptr)},
                         {"driver_stats", driver_stats_json(l)}});
    }
    return envelope(s, "interfaces", std::move(items));
}

json bonds_json(const Snapshot& s) {
    json items = json::array();
    for (const auto& l : s.links) {
        if (!l.bond) continue;
        const BondInfo& b = *l.bond;
        json slaves = json::array();
        size_t up = 0;
        for (const auto& name : b.slaves) {
            const Link* sl = find_link(s, name);
            const BondSlaveInfo* si = sl && sl->slave ? &*sl->slave : nullptr;
            if (si && si->mii_status == "up") ++up;
            slaves.push_back({{"name", name},
                              {"state", si ? json(si->state) : json(nullptr)},
                              {"mii_status", si ? json(si->mii_status) : json(nullptr)},
                              {"link_failure_count", si ? opt(si->link_failure_count) : json(nullptr)},
                              {"link_failure_increase", si ? opt(si->link_failure_increase) : json(nullptr)},
                              {"perm_hwaddr", si ? json(si->perm_hwaddr) : json(nullptr)},
                              {"operstate", sl ? json(sl->operstate) : json(nullptr)},
                              {"carrier", sl ? json(sl->carrier) : json(nullptr)},
                              {"mtu", sl ? json(sl->mtu) : json(nullptr)}});
        }
        items.push_back({{"name", l.name},
                         {"mode", b.mode},
                         {"xmit_hash_policy", b.xmit_hash_policy.empty() ? json(nullptr) : json(b.xmit_hash_policy)},
                         {"miimon_seconds", b.miimon ? json(*b.miimon / 1000.0) : json(nullptr)},
                         {"active_slave", b.active_slave.empty() ? json(nullptr) : json(b.active_slave)},
                         {"operstate", l.operstate},
                         {"mtu", l.mtu},
                         {"slaves_total", b.slaves.size()},
                         {"slaves_up", up},
                         {"slaves", std::move(slaves)}});
    }
    return envelope(s, "bonds", std::move(items));
}

json alerts_json(const Snapshot& s, const AlertFilter& f) {
    json items = json::array();
    for (const auto& a : s.alerts) {
        if (f.severity && a.severity != *f.severity) continue;
        if (f.state && a.state != *f.state) continue;
        if (f.scope && a.scope != *f.scope) continue;
        if (f.rule && a.rule != *f.rule) continue;
        if (f.object && a.object != *f.object) continue;
        items.push_back(alert_object(a));
    }
    json j = envelope(s, "alerts", std::move(items));
    j["health"] = to_string(overall_health(s));
    return j;
}

json history_json(const Snapshot& s, std::optional<std::size_t> limit) {
    json items = json::array();
    if (s.history) {
        const auto& h = *s.history;
        const size_t skip = limit && *limit < h.size() ? h.size() - *limit : 0;
        for (size_t i = skip; i < h.size(); ++i) {
            const auto& t = h[i];
            items.push_back({{"changed_at", time_or_null(t.at)},
                             {"rule", t.rule},
                             {"object", t.object},
                             {"severity", to_string(t.severity)},
                             {"from", to_string(t.from)},
                             {"to", to_string(t.to)},
                             {"scope", to_string(t.scope)},
                             {"summary", t.summary}});
        }
    }
    json j = envelope(s, "history", std::move(items));
    j["total"] = s.history ? s.history->size() : 0;
    return j;
}

json error_json(int status, const std::string& message) { return {{"error", message}, {"status", status}}; }

namespace {

// A copy of j with every string and key passed through escape_invalid_utf8.
json escaped(const json& j) {
    if (j.is_string()) return escape_invalid_utf8(j.get_ref<const std::string&>());
    if (j.is_array()) {
        json out = json::array();
        for (const auto& v : j) out.push_back(escaped(v));
        return out;
    }
    if (j.is_object()) {
        json out = json::object();
        for (const auto& [k, v] : j.items()) out[escape_invalid_utf8(k)] = escaped(v);
        return out;
    }
    return j;
}

}  // namespace

std::string escape_invalid_utf8(std::string_view s) {
    if (valid_utf8(s)) return std::string(s);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() + 8);
    for (std::size_t i = 0; i < s.size();) {
        if (const std::size_t n = utf8_sequence(s, i); n > 0) {
            out.append(s.substr(i, n));
            i += n;
            continue;
        }
        const auto c = static_cast<unsigned char>(s[i++]);
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
    }
    return out;
}

std::string dump_json(const json& j) {
    // Names are nearly always valid: the strict dump is the fast path, and the walk that
    // escapes runs only for a document that holds a bad byte.
    try {
        return j.dump(2) + "\n";
    } catch (const json::type_error&) {
        return escaped(j).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    }
}

}  // namespace rocewatch::api
