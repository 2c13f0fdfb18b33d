// Snapshot -> Prometheus metric families, and their text rendering for /metrics.
#include "api/metrics.hpp"

#include "api/cluster_view.hpp"
#include "api/json_view.hpp"
#include "api/probe_view.hpp"
#include "api/text_format.hpp"
#include "api/web_guard.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/dcb.hpp"
#include "daemon/model/driver_stats.hpp"
#include "daemon/model/rdma_port.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <initializer_list>
#include <optional>
#include <regex>
#include <set>
#include <span>
#include <stdexcept>

namespace rocewatch::api {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// A sample's labels: up to kMax name/value pairs, views of strings that outlive the add()
// they are given to.
class Labels {
public:
    static constexpr std::size_t kMax = 8;
    Labels() = default;
    Labels(std::initializer_list<LabelView> labels) : n_(labels.size()) {
        if (n_ > kMax) throw std::logic_error("metrics: more than 8 labels on a sample");
        std::copy(labels.begin(), labels.end(), pairs_.begin());
    }
    [[nodiscard]] std::span<const LabelView> view() const { return {pairs_.data(), n_}; }

private:
    std::array<LabelView, kMax> pairs_{};
    std::size_t n_ = 0;
};

bool ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// One family as the sections fill it: as ClientMetrics (snapshot_to_families), or straight
// as its text (render_snapshot_metrics: without the ClientMetrics and their label strings,
// the render at 128 NICs takes 0.54 of its time; bench/stages_side_by_side.sh): its header,
// then its sample lines.
struct Family {
    MetricFamily fam;  // name, help, type; and the samples unless as_text
    bool as_text = false;
    std::string text;        // the header and sample lines, when as_text
    std::size_t header = 0;  // the header's bytes: while the text is no longer, no sample
};

// Families in declaration order with stable addresses, so each section can hold on to
// the families it fills while later ones are declared.
class Builder {
public:
    enum class Output { families, text };
    // sizes (Output::text): each family's bytes in the last render, in declaration order,
    // reserved up front so that its text is allocated once, not grown by doubling (at 128
    // NICs a family of 400 KB went through six blocks, each over the heap's mmap threshold
    // and so faulted in page by page; issue 14). Updated by finish_text.
    explicit Builder(Output output, RenderSizes* sizes = nullptr) : as_text_(output == Output::text), sizes_(sizes) {}

    Family& gauge(std::string name, std::string help) {
        return make(std::move(name), std::move(help), MetricType::Gauge);
    }
    Family& counter(std::string name, std::string help) {
        return make(std::move(name), std::move(help), MetricType::Counter);
    }

    // Output::families: those with a sample, in order.
    std::vector<MetricFamily> finish() && {
        std::vector<MetricFamily> out;
        for (auto& f : fams_)
            if (!f.fam.metric.empty()) out.push_back(std::move(f.fam));
        return out;
    }
    // Output::text: the text of each family with a sample, in order, moved out.
    std::vector<std::string> finish_text() && {
        if (sizes_) sizes_->family_bytes.clear();
        std::vector<std::string> out;
        for (auto& f : fams_) {
            if (sizes_) sizes_->family_bytes.push_back(f.text.size());
            if (f.text.size() > f.header) out.push_back(std::move(f.text));
        }
        return out;
    }

private:
    Family& make(std::string name, std::string help, MetricType type) {
        auto& f = fams_.emplace_back();
        f.fam.name = std::move(name);
        f.fam.help = std::move(help);
        f.fam.type = type;
        f.as_text = as_text_;
        if (as_text_) {
            const std::size_t i = fams_.size() - 1;
            if (sizes_ && i < sizes_->family_bytes.size()) f.text.reserve(sizes_->family_bytes[i]);
            append_family_header(f.text, f.fam.name, f.fam.help, f.fam.type);
            f.header = f.text.size();
        }
        return f;
    }
    bool as_text_;
    RenderSizes* sizes_;
    std::deque<Family> fams_;
};

// Label values must be UTF-8, and one that is not makes Prometheus drop the whole scrape;
// names (netdevs, RDMA devices) are bytes. Every label value goes through escape_invalid_utf8:
// here for text, in escape_labels for families.
void add(Family& f, const Labels& labels, double value) {
    if (f.as_text) {
        const auto given = labels.view();
        if (std::all_of(given.begin(), given.end(), [](const LabelView& l) { return ascii(l.second); })) {
            append_sample_line(f.text, f.fam.name, given, value);
            return;
        }
        std::array<std::string, Labels::kMax> valid;
        std::array<LabelView, Labels::kMax> fixed{};
        for (std::size_t i = 0; i < given.size(); ++i) {
            valid[i] = escape_invalid_utf8(given[i].second);
            fixed[i] = {given[i].first, valid[i]};
        }
        append_sample_line(f.text, f.fam.name, std::span(fixed.data(), given.size()), value);
        return;
    }
    ClientMetric m;
    for (const auto& [name, v] : labels.view()) m.label.push_back({std::string(name), std::string(v)});
    if (f.fam.type == MetricType::Counter)
        m.counter.value = value;
    else
        m.gauge.value = value;
    f.fam.metric.push_back(std::move(m));
}

double b(bool v) { return v ? 1.0 : 0.0; }

// mlx5 lists `lifespan` among hw_counters, but it is a setting (how long counter values
// are cached, in ms), not a count; exporting it as a _total would be a lie.
bool is_counter_name(std::string_view hw_counter) { return hw_counter != "lifespan"; }

void rdma_families(Builder& bld, const Snapshot& s) {
    auto& dev_info = bld.gauge("rocewatch_rdma_device_info",
                               "RDMA device metadata; always 1. node_type: 1: CA (InfiniBand, RoCE), 4: RNIC (iWARP).");
    auto& port_info = bld.gauge("rocewatch_rdma_port_info", "RDMA port metadata; always 1.");
    auto& state = bld.gauge("rocewatch_rdma_port_state", "RDMA port logical state as sysfs numbers it (4 = ACTIVE).");
    auto& phys = bld.gauge("rocewatch_rdma_port_phys_state",
                           "RDMA port physical state as sysfs numbers it (5 = LinkUp).");
    auto& up = bld.gauge("rocewatch_rdma_port_up",
                         "1 when the RDMA port is up (state ACTIVE and phys_state LinkUp), else 0.");
    auto& rate = bld.gauge("rocewatch_rdma_port_rate_bytes_per_second",
                           "Negotiated RDMA port rate in bytes per second.");
    auto& amtu = bld.gauge("rocewatch_rdma_port_active_mtu_bytes", "Active RDMA path MTU in bytes.");
    auto& mmtu = bld.gauge("rocewatch_rdma_port_max_mtu_bytes", "Largest RDMA path MTU the port supports, in bytes.");
    auto& tx = bld.counter("rocewatch_rdma_port_data_transmitted_bytes_total",
                           "Bytes transmitted by the RDMA port (port_xmit_data x 4).");
    auto& rx = bld.counter("rocewatch_rdma_port_data_received_bytes_total",
                           "Bytes received by the RDMA port (port_rcv_data x 4).");
    // The well-known counters/ files, each its own family named as node_exporter's infiniband
    // collector names it (node_infiniband_[port_]X -> rocewatch_rdma_port_X), so one query
    // serves both; port_xmit_data/port_rcv_data are the byte families above. Every other
    // counters/ file stays in the generic family, as read.
    struct Named {
        const char* file;
        Family* fam;
    };
    // (name, help, file): docs/gen/refs.py reads the family from `counter("name", "help"`.
    const auto counter = [&](const char* name, const char* help, const char* file) {
        return Named{file, &bld.counter(name, help)};
    };
    const Named known[] = {
        counter("rocewatch_rdma_port_excessive_buffer_overrun_errors_total",
                "Times the port's receive buffer overran (excessive_buffer_overrun_errors).",
                "excessive_buffer_overrun_errors"),
        counter("rocewatch_rdma_port_link_downed_total",
                "Times the link error recovery failed and the link went down (link_downed).", "link_downed"),
        counter("rocewatch_rdma_port_link_error_recovery_total",
                "Successful link error recoveries (link_error_recovery).", "link_error_recovery"),
        counter("rocewatch_rdma_port_local_link_integrity_errors_total",
                "Local physical errors past their threshold (local_link_integrity_errors).",
                "local_link_integrity_errors"),
        counter("rocewatch_rdma_port_multicast_packets_received_total",
                "Multicast packets received (multicast_rcv_packets).", "multicast_rcv_packets"),
        counter("rocewatch_rdma_port_multicast_packets_transmitted_total",
                "Multicast packets transmitted (multicast_xmit_packets).", "multicast_xmit_packets"),
        counter("rocewatch_rdma_port_constraint_errors_received_total",
                "Received packets discarded for constraints (port_rcv_constraint_errors).",
                "port_rcv_constraint_errors"),
        counter("rocewatch_rdma_port_constraint_errors_transmitted_total",
                "Packets not transmitted for constraints (port_xmit_constraint_errors).",
                "port_xmit_constraint_errors"),
        counter("rocewatch_rdma_port_discards_transmitted_total", "Outbound packets discarded (port_xmit_discards).",
                "port_xmit_discards"),
        counter("rocewatch_rdma_port_errors_received_total", "Received packets with errors (port_rcv_errors).",
                "port_rcv_errors"),
        counter("rocewatch_rdma_port_packets_received_total", "Packets received, all of them (port_rcv_packets).",
                "port_rcv_packets"),
        counter("rocewatch_rdma_port_packets_transmitted_total",
                "Packets transmitted, all of them (port_xmit_packets).", "port_xmit_packets"),
        counter("rocewatch_rdma_port_receive_remote_physical_errors_total",
                "Received packets marked with the EBP delimiter (port_rcv_remote_physical_errors).",
                "port_rcv_remote_physical_errors"),
        counter("rocewatch_rdma_port_receive_switch_relay_errors_total",
                "Received packets discarded because they could not be relayed (port_rcv_switch_relay_errors).",
                "port_rcv_switch_relay_errors"),
        counter("rocewatch_rdma_port_transmit_wait_total",
                "Ticks the port had data to send but no credits (port_xmit_wait).", "port_xmit_wait"),
        counter("rocewatch_rdma_port_symbol_error_total", "Minor link errors on any lane (symbol_error).",
                "symbol_error"),
        counter("rocewatch_rdma_port_unicast_packets_received_total", "Unicast packets received (unicast_rcv_packets).",
                "unicast_rcv_packets"),
        counter("rocewatch_rdma_port_unicast_packets_transmitted_total",
                "Unicast packets transmitted (unicast_xmit_packets).", "unicast_xmit_packets"),
        counter("rocewatch_rdma_port_vl15_dropped_total",
                "Incoming VL15 packets dropped for lack of buffers (VL15_dropped).", "VL15_dropped"),
    };
    const auto known_family = [&](std::string_view file) -> Family* {
        if (file == "port_xmit_data" || file == "port_rcv_data") return nullptr;  // the byte families
        for (const auto& k : known)
            if (file == k.file) return k.fam;
        return nullptr;
    };
    const auto is_data_words = [](std::string_view file) {
        return file == "port_xmit_data" || file == "port_rcv_data";
    };
    // Plural "counters": promtool's lint refuses a type name ("_counter_") inside a metric name.
    auto& counters = bld.counter("rocewatch_rdma_port_counters_total",
                                 "RDMA port counter from counters/ that has no family of its own, raw value as read.");
    auto& hw = bld.counter("rocewatch_rdma_port_hw_counters_total",
                           "RDMA port driver counter from hw_counters/, raw value.");
    auto& gid = bld.gauge("rocewatch_rdma_gid_info", "Populated GID table entry; always 1.");
    auto& dropped =
        bld.gauge("rocewatch_rdma_port_series_dropped",
                  "Counters and GIDs of the port left out of this snapshot: past the per-port cap of series.");
    auto& roce_gid =
        bld.gauge("rocewatch_rdma_port_roce_v2_gid_index",
                  "GID index of the RoCE v2 entry holding the netdev's IPv4 address (what perftest -x and UCX need).");

    for (const auto& d : s.devices) {
        add(dev_info,
            {{"device", d.name},
             {"driver", d.driver},
             {"fw_ver", d.fw_ver},
             {"node_guid", d.node_guid},
             {"board_id", d.board_id},
             {"node_type", d.node_type}},
            1);
        for (const auto& p : d.ports) {
            const std::string port = std::to_string(p.port);
            const Labels dp = {{"device", d.name}, {"port", port}};
            add(port_info, {{"device", d.name}, {"port", port}, {"link_layer", p.link_layer}, {"netdev", p.netdev}}, 1);
            if (p.state) add(state, dp, *p.state);
            if (auto u = port_up(p)) add(up, dp, b(*u));
            if (p.phys_state) add(phys, dp, *p.phys_state);
            if (p.rate_gbps) add(rate, dp, *p.rate_gbps * 1e9 / 8);
            if (p.active_mtu) add(amtu, dp, *p.active_mtu);
            if (p.max_mtu) add(mmtu, dp, *p.max_mtu);
            if (p.xmit_bytes) add(tx, dp, static_cast<double>(*p.xmit_bytes));
            if (p.rcv_bytes) add(rx, dp, static_cast<double>(*p.rcv_bytes));
            for (const auto& [name, v] : p.counters) {
                if (is_data_words(name)) continue;
                if (Family* f = known_family(name))
                    add(*f, dp, static_cast<double>(v));
                else
                    add(counters, {{"device", d.name}, {"port", port}, {"counter", std::string(name)}},
                        static_cast<double>(v));
            }
            for (const auto& [name, v] : p.hw_counters)
                if (is_counter_name(name))
                    add(hw, {{"device", d.name}, {"port", port}, {"counter", std::string(name)}},
                        static_cast<double>(v));
            for (const auto& g : p.gids)
                add(gid,
                    {{"device", d.name},
                     {"port", port},
                     {"index", std::to_string(g.index)},
                     {"gid", g.gid},
                     {"type", g.type},
                     {"netdev", g.netdev}},
                    1);
            add(dropped, dp, static_cast<double>(p.counters_dropped + p.gids_dropped));
            if (p.roce_v2_ipv4_gid_index)
                add(roce_gid, {{"device", d.name}, {"port", port}, {"address", p.roce_v2_ipv4_address}},
                    *p.roce_v2_ipv4_gid_index);
        }
    }
}

// [metrics] netdev_include/netdev_exclude, compiled once per render (the config loader has
// refused a regex that does not compile).
class NetdevFilter {
public:
    explicit NetdevFilter(const MetricsConfig& m) {
        if (!m.netdev_include.empty()) include_.emplace(m.netdev_include, std::regex::ECMAScript | std::regex::nosubs);
        if (!m.netdev_exclude.empty()) exclude_.emplace(m.netdev_exclude, std::regex::ECMAScript | std::regex::nosubs);
    }
    bool operator()(const std::string& name) const {
        if (include_ && !std::regex_search(name, *include_)) return false;
        return !(exclude_ && std::regex_search(name, *exclude_));
    }

private:
    std::optional<std::regex> include_, exclude_;
};

void link_families(Builder& bld, const Snapshot& s) {
    auto& info = bld.gauge("rocewatch_link_info", "Network interface metadata; always 1.");
    auto& up = bld.gauge("rocewatch_link_up", "1 when the interface's operstate is up, else 0.");
    auto& admin = bld.gauge("rocewatch_link_admin_up", "1 when the interface is administratively up (IFF_UP), else 0.");
    auto& carrier = bld.gauge("rocewatch_link_carrier", "1 when the interface has carrier, else 0.");
    auto& changes = bld.counter("rocewatch_link_carrier_changes_total",
                                "Carrier changes the kernel counted on the interface.");
    auto& mtu = bld.gauge("rocewatch_link_mtu_bytes", "Interface MTU in bytes.");
    auto& pfc = bld.gauge("rocewatch_link_pfc_enabled",
                          "1 when PFC is on for the 802.1p priority, else 0 (DCB IEEE tables over dcbnl; RoCE "
                          "netdevs whose driver reports DCB only).");
    auto& roce_prio = bld.gauge("rocewatch_link_roce_priority",
                                "The 802.1p priority RoCE v2 traffic gets from the netdev's DCB APP table at the ToS "
                                "rdma_cm gives it (configfs default_roce_tos, else 0); RoCE netdevs whose driver "
                                "reports DCB only.");
    auto& ecn = bld.gauge("rocewatch_link_ecn_enabled",
                          "1 when ECN is on for the 802.1p priority at the point (rp: reaction, np: "
                          "notification), else 0 (class/net/<netdev>/ecn/roce_{rp,np}/enable; RoCE netdevs "
                          "whose driver has those files only).");
    auto& pause = bld.counter("rocewatch_link_pause_frames_total",
                              "Pause (PFC) frames the driver counted, by direction and 802.1p priority (\"all\": "
                              "every priority together); RoCE netdevs whose driver counts them (ethtool -S).");
    auto& storms = bld.counter("rocewatch_link_pause_storm_events_total",
                               "Pause storm events the NIC counted (level warning: pausing past the storm threshold; "
                               "error: it stopped pausing); RoCE netdevs whose driver counts them.");
    auto& discards = bld.counter("rocewatch_link_rx_discards_total",
                                 "Received packets the port dropped, by 802.1p priority (\"all\": at the port); RoCE "
                                 "netdevs whose driver counts them.");
    auto& fec = bld.counter("rocewatch_link_fec_blocks_total",
                            "FEC codewords the port corrected, or could not correct (frames lost on the wire), from "
                            "ethtool netlink's FEC statistics; RoCE netdevs whose driver counts them.");
    auto& mod_info = bld.gauge("rocewatch_module_info",
                               "The transceiver module of a RoCE netdev (ethtool -m): type, vendor, part number, "
                               "serial; always 1.");
    auto& mod_temp = bld.gauge("rocewatch_module_temperature_celsius", "Transceiver module temperature.");
    auto& mod_volt = bld.gauge("rocewatch_module_supply_voltage_volts", "Transceiver module supply voltage.");
    auto& mod_rx = bld.gauge("rocewatch_module_rx_power_watts",
                             "Optical power the module receives, per lane (average or OMA, as the module says).");
    auto& mod_tx = bld.gauge("rocewatch_module_tx_power_watts", "Optical power the module transmits, per lane.");
    auto& mod_bias = bld.gauge("rocewatch_module_tx_bias_amperes", "Laser bias current of the module, per lane.");
    auto& mod_level = bld.gauge("rocewatch_module_threshold",
                                "The module's own warning and alarm levels, in the unit of the quantity's own "
                                "metric (celsius, volts, watts, amperes).");
    auto& fcs = bld.counter("rocewatch_link_fcs_errors_total",
                            "Received frames with a bad frame check sequence (IEEE 802.3 aFrameCheckSequenceErrors, "
                            "ethtool netlink's eth-mac group); RoCE netdevs whose driver counts them.");
    auto& symbols = bld.counter("rocewatch_link_symbol_errors_total",
                                "Symbol errors while the carrier was up (IEEE 802.3 aSymbolErrorDuringCarrier, "
                                "ethtool netlink's eth-phy group); RoCE netdevs whose driver counts them.");
    auto& lldp = bld.gauge("rocewatch_link_lldp_neighbor_info",
                           "The device lldpd hears on the link (on a rail, the switch and its port), by name and "
                           "port as it sends them; always 1. Join on netdev to group alerts by switch.");
    const NetdevFilter netdev_exported(s.config ? s.config->metrics : MetricsConfig{});
    for (const auto& l : s.links) {
        if (!netdev_exported(l.name)) continue;
        const Labels i = {{"netdev", l.name}};
        if (l.lldp)
            add(lldp,
                {{"netdev", l.name},
                 {"switch", lldp_switch_name(*l.lldp)},
                 {"switch_port", lldp_port_name(*l.lldp)},
                 {"chassis_id", l.lldp->chassis_id}},
                1);
        if (l.phy) {
            const auto& st = l.phy->standard_stats;
            if (auto it = st.find("eth-mac/FrameCheckSequenceErrors"); it != st.end()) add(fcs, i, it->second);
            if (auto it = st.find("eth-phy/SymbolErrorDuringCarrier"); it != st.end()) add(symbols, i, it->second);
        }
        if (l.module && l.module->error == 0 && !l.module->spec.empty()) {
            const Transceiver& t = *l.module;
            add(mod_info,
                {{"netdev", l.name},
                 {"type", t.type},
                 {"vendor", t.vendor},
                 {"part_number", t.part_number},
                 {"serial", t.serial}},
                1);
            if (t.temperature_c) add(mod_temp, i, *t.temperature_c);
            if (t.voltage_v) add(mod_volt, i, *t.voltage_v);
            for (size_t n = 0; n < t.lanes.size(); ++n) {
                const std::string lane = std::to_string(n + 1);
                const Labels li = {{"netdev", l.name}, {"lane", lane}};
                if (t.lanes[n].rx_power_mw) add(mod_rx, li, *t.lanes[n].rx_power_mw / 1e3);
                if (t.lanes[n].tx_power_mw) add(mod_tx, li, *t.lanes[n].tx_power_mw / 1e3);
                if (t.lanes[n].tx_bias_ma) add(mod_bias, li, *t.lanes[n].tx_bias_ma / 1e3);
            }
            const auto levels = [&](const char* quantity, const ModuleThresholds& th, double scale) {
                for (const auto& [level, v] :
                     {std::pair{"high_alarm", th.high_alarm}, std::pair{"high_warning", th.high_warning},
                      std::pair{"low_warning", th.low_warning}, std::pair{"low_alarm", th.low_alarm}})
                    if (v) add(mod_level, {{"netdev", l.name}, {"quantity", quantity}, {"level", level}}, *v * scale);
            };
            levels("temperature", t.temperature_thresholds, 1);
            levels("supply_voltage", t.voltage_thresholds, 1);
            levels("rx_power", t.rx_power_thresholds, 1e-3);
            levels("tx_power", t.tx_power_thresholds, 1e-3);
            levels("tx_bias", t.tx_bias_thresholds, 1e-3);
        }
        std::set<std::string> stat_series;  // two names for one series (a driver with both): the first
        for (const auto& [name, v] : l.driver_stats) {
            const auto m = driver_stat_meaning(name);
            if (!m) continue;
            const std::string prio = m->priority < 0 ? "all" : std::to_string(m->priority);
            if (!stat_series.insert(std::to_string(int(m->kind)) + m->direction + prio + m->level).second) continue;
            switch (m->kind) {
                case DriverStatKind::pause_frames:
                    add(pause, {{"netdev", l.name}, {"direction", m->direction}, {"priority", prio}}, v);
                    break;
                case DriverStatKind::pause_storm: add(storms, {{"netdev", l.name}, {"level", m->level}}, v); break;
                case DriverStatKind::discards: add(discards, {{"netdev", l.name}, {"priority", prio}}, v); break;
                case DriverStatKind::fec_blocks: add(fec, {{"netdev", l.name}, {"type", m->level}}, v); break;
            }
        }
        add(info, {{"netdev", l.name}, {"kind", l.kind}, {"mac", l.mac}, {"master", l.master}}, 1);
        add(up, i, b(l.operstate == "up"));
        add(admin, i, b(l.admin_up));
        add(carrier, i, b(l.carrier));
        if (l.carrier_changes) add(changes, i, *l.carrier_changes);
        add(mtu, i, l.mtu);
        if (l.dcb && l.dcb->error == 0) {
            const auto& d = l.dcb->ieee;
            if (d.pfc_enabled)
                for (int p = 0; p < 8; ++p)
                    add(pfc, {{"netdev", l.name}, {"priority", std::to_string(p)}}, b(pfc_on(d, p)));
            add(roce_prio, i, roce_priority(d, rdma_cm_tos_for_netdev(s, l.name)).priority);
        }
        if (const RdmaPort* rp = roce_port_for_netdev(s, l.name)) {
            for (const auto& [point, bits] : {std::pair{"rp", rp->ecn_rp_enabled}, std::pair{"np", rp->ecn_np_enabled}})
                if (bits)
                    for (int p = 0; p < 8; ++p)
                        add(ecn, {{"netdev", l.name}, {"point", point}, {"priority", std::to_string(p)}},
                            b(((*bits >> p) & 1u) != 0));
        }
    }
}

void bond_families(Builder& bld, const Snapshot& s) {
    auto& info = bld.gauge("rocewatch_bond_info", "Bond configuration; always 1.");
    auto& slaves = bld.gauge("rocewatch_bond_slaves", "Interfaces enslaved to the bond.");
    auto& slaves_up = bld.gauge("rocewatch_bond_slaves_up", "Bond slaves whose MII status is up.");
    auto& miimon = bld.gauge("rocewatch_bond_miimon_seconds",
                             "Bond MII link monitoring interval in seconds (0 = off).");
    auto& mii_up = bld.gauge("rocewatch_bond_slave_mii_up", "1 when the bond slave's MII status is up, else 0.");
    auto& active = bld.gauge("rocewatch_bond_slave_active", "1 when the bond slave's state is active, 0 when backup.");
    auto& failures = bld.counter("rocewatch_bond_slave_link_failures_total",
                                 "Link failures the bonding driver counted on the slave.");
    for (const auto& l : s.links) {
        if (!l.bond) continue;
        const auto& bond = *l.bond;
        add(info, {{"bond", l.name}, {"mode", bond.mode}, {"xmit_hash_policy", bond.xmit_hash_policy}}, 1);
        add(slaves, {{"bond", l.name}}, static_cast<double>(bond.slaves.size()));
        if (bond.miimon) add(miimon, {{"bond", l.name}}, *bond.miimon / 1000.0);
        size_t n_up = 0;
        for (const auto& name : bond.slaves) {
            const Link* sl = find_link(s, name);
            if (!sl || !sl->slave) continue;
            const auto& si = *sl->slave;
            const Labels bi = {{"bond", l.name}, {"netdev", name}};
            const bool is_up = si.mii_status == "up";
            n_up += is_up ? 1 : 0;
            add(mii_up, bi, b(is_up));
            if (!si.state.empty()) add(active, bi, b(si.state == "active"));
            if (si.link_failure_count) add(failures, bi, *si.link_failure_count);
        }
        add(slaves_up, {{"bond", l.name}}, static_cast<double>(n_up));
    }
}

void alert_families(Builder& bld, const Snapshot& s) {
    auto& active = bld.gauge("rocewatch_alert_active", "1 for every pending or firing alert.");
    auto& counts = bld.gauge("rocewatch_alerts", "Active alerts by severity and state.");
    auto& health =
        bld.gauge("rocewatch_health_status",
                  "This node's health from its node-scoped firing alerts: 0 healthy, 1 warning, 2 critical.");
    for (const auto& a : s.alerts)
        if (a.state == AlertState::pending || a.state == AlertState::firing)
            add(active,
                {{"rule", a.rule},
                 {"object", a.object},
                 {"severity", to_string(a.severity)},
                 {"state", to_string(a.state)},
                 {"scope", to_string(a.scope)}},
                1);
    // Every combination, zeros included: an alert query should see 0, not "no data".
    for (auto sev : {Severity::info, Severity::warning, Severity::critical})
        for (auto st : {AlertState::pending, AlertState::firing}) {
            size_t n = 0;
            for (const auto& a : s.alerts) n += (a.severity == sev && a.state == st) ? 1 : 0;
            add(counts, {{"severity", to_string(sev)}, {"state", to_string(st)}}, static_cast<double>(n));
        }
    double h = 0;
    switch (overall_health(s)) {
        case Health::healthy: h = 0; break;
        case Health::warning: h = 1; break;
        case Health::critical: h = 2; break;
    }
    add(health, {}, h);
}

void host_families(Builder& bld, const Snapshot& s) {
    add(bld.gauge("rocewatch_host_nvidia_gpu_present", "1 when an NVIDIA GPU is on the PCI bus, else 0."), {},
        b(s.host.nvidia_gpu_present));
    add(bld.gauge("rocewatch_host_nvidia_peermem_loaded",
                  "1 when the nvidia_peermem module (GPUDirect RDMA) is loaded, else 0."),
        {}, b(s.host.nvidia_peermem_loaded));
    auto& ucx = bld.gauge("rocewatch_ucx_info", "UCX library version the daemon was built with; always 1.");
    if (!s.host.ucx_version.empty()) add(ucx, {{"version", s.host.ucx_version}}, 1);
}

// The notifier's counters; the families are left out while no Alertmanager is configured.
void alertmanager_families(Builder& bld, const Snapshot& s) {
    auto& sent = bld.counter("rocewatch_alertmanager_notifications_total",
                             "Alerts delivered to the Alertmanager (2xx answers) since start.");
    auto& errors = bld.counter("rocewatch_alertmanager_errors_total",
                               "Alerts in POSTs to the Alertmanager that failed (no answer, or not 2xx) since start.");
    auto& dropped = bld.counter("rocewatch_alertmanager_dropped_total",
                                "Alerts dropped, unsent, from the full notification queue since start.");
    auto& queued = bld.gauge("rocewatch_alertmanager_queue_length", "Alerts waiting to be sent to Alertmanager.");
    if (!s.alertmanager) return;
    for (const auto& t : s.alertmanager->targets) {
        add(sent, {{"alertmanager", t.url}}, static_cast<double>(t.sent));
        add(errors, {{"alertmanager", t.url}}, static_cast<double>(t.errors));
    }
    add(dropped, {}, static_cast<double>(s.alertmanager->dropped));
    add(queued, {}, static_cast<double>(s.alertmanager->queue_length));
}

// The node's probe budget: what it allows, what the last minute used, and runs by side and result.
void probe_budget_families(Builder& bld, const Snapshot& s) {
    if (!s.probe_budget) return;
    const ProbeBudgetStats& b = *s.probe_budget;
    auto& max_runs =
        bld.gauge("rocewatch_probe_budget_max_runs_per_minute",
                  "[probes] max_runs_per_minute: probe runs and peers' sessions allowed in any 60 s (0 = no limit).");
    auto& max_bytes =
        bld.gauge("rocewatch_probe_budget_max_bytes_per_minute",
                  "[probes] max_bytes_per_minute: their payload bytes allowed in any 60 s (0 = no limit).");
    auto& runs = bld.gauge("rocewatch_probe_budget_runs_last_minute",
                           "Probe runs and peers' sessions admitted in the last 60 s.");
    auto& bytes = bld.gauge("rocewatch_probe_budget_bytes_last_minute", "Their payload bytes in the last 60 s.");
    auto& total = bld.counter("rocewatch_probe_budget_runs_total",
                              "Probe runs this daemon started (side own) and sessions its peers asked for (side peer), "
                              "by whether the budget admitted them, since start.");
    auto& moved = bld.counter("rocewatch_probe_budget_bytes_total",
                              "Payload bytes of the admitted runs and sessions, by side, since start.");
    add(max_runs, {}, static_cast<double>(b.max_runs_per_minute));
    add(max_bytes, {}, static_cast<double>(b.max_bytes_per_minute));
    add(runs, {}, static_cast<double>(b.runs_last_minute));
    add(bytes, {}, static_cast<double>(b.bytes_last_minute));
    for (size_t i = 0; i < 2; ++i) {
        const char* side = i == 0 ? "own" : "peer";
        add(total, {{"side", side}, {"result", "admitted"}}, static_cast<double>(b.admitted[i]));
        add(total, {{"side", side}, {"result", "refused"}}, static_cast<double>(b.refused[i]));
        add(moved, {{"side", side}}, static_cast<double>(b.bytes[i]));
    }
}

void self_families(Builder& bld, const Snapshot& s) {
    auto& ok = bld.gauge("rocewatch_collector_success", "1 when the collector's last round succeeded, else 0.");
    auto& dur = bld.gauge("rocewatch_collector_duration_seconds", "Duration of the collector's last round in seconds.");
    auto& errs = bld.gauge("rocewatch_collector_read_errors",
                           "Files the collector could not read in its last round (skipped).");
    auto& ignored = bld.gauge("rocewatch_collector_ignored_entries",
                              "Entries the collector set aside in its last round as not what they were listed as "
                              "(a dangling RDMA device or port symlink, a stray file): not errors.");
    auto& last_ok = bld.gauge("rocewatch_collector_last_success_timestamp_seconds",
                              "Unix time of the collector's last successful round: the age of what it contributed.");
    for (const auto& c : s.collectors) {
        const Labels l = {{"collector", c.name}};
        add(ok, l, b(c.success));
        add(dur, l, c.duration_seconds);
        add(errs, l, static_cast<double>(c.read_errors));
        add(ignored, l, static_cast<double>(c.ignored.size()));
        if (c.last_success != TimePoint{}) add(last_ok, l, unix_seconds(c.last_success));
    }
    auto& last = bld.gauge("rocewatch_last_collection_timestamp_seconds",
                           "Unix time of the collection the snapshot holds.");
    if (s.collected_at != TimePoint{}) add(last, {}, unix_seconds(s.collected_at));
    auto& counters_read = bld.gauge("rocewatch_rdma_counters_read_timestamp_seconds",
                                    "Unix time the RDMA port counters exported were read. They are read within a tenth "
                                    "of a percent of a core and at least every 15 s, so on "
                                    "a node with many ports less often than every collection.");
    if (s.counters_read_at != TimePoint{}) add(counters_read, {}, unix_seconds(s.counters_read_at));
    add(bld.gauge("rocewatch_snapshot_generation", "Sequence number of the snapshot served."), {},
        static_cast<double>(s.generation));
    add(bld.counter("rocewatch_netlink_events_total", "Netlink events received since start."), {},
        static_cast<double>(s.netlink_events));
    add(bld.counter("rocewatch_netlink_resyncs_total",
                    "Full netlink re-dumps after socket buffer overruns since start."),
        {}, static_cast<double>(s.netlink_resyncs));
    alertmanager_families(bld, s);
    probe_budget_families(bld, s);
    add(bld.gauge("rocewatch_config_last_reload_successful", "1 when the last configuration reload succeeded, else 0."),
        {}, b(s.daemon.config_last_reload_ok));
    auto& reload_ts = bld.gauge("rocewatch_config_last_reload_success_timestamp_seconds",
                                "Unix time the running configuration was loaded.");
    if (s.daemon.config_last_reload != TimePoint{}) add(reload_ts, {}, unix_seconds(s.daemon.config_last_reload));
#ifdef ROCEWATCH_VERSION
    const std::string built = ROCEWATCH_VERSION;
#else
    const std::string built = "unknown";
#endif
    add(bld.gauge("rocewatch_build_info", "rocewatch version; always 1."),
        {{"version", s.version.empty() ? built : s.version}}, 1);
}

// escape_invalid_utf8 on every label of every family (see add()).
void escape_labels(std::vector<MetricFamily>& families) {
    for (auto& f : families)
        for (auto& m : f.metric)
            for (auto& l : m.label) l.value = escape_invalid_utf8(l.value);
}

// The families the probe and cluster views add, after the sections' own.
std::vector<MetricFamily> view_families(const Snapshot& s) {
    std::vector<MetricFamily> out;
    add_probe_families(out, s);
    add_cluster_families(out, s);
    escape_labels(out);
    return out;
}

void sections(Builder& bld, const Snapshot& s) {
    rdma_families(bld, s);
    link_families(bld, s);
    bond_families(bld, s);
    alert_families(bld, s);
    host_families(bld, s);
    self_families(bld, s);
}

}  // namespace

std::vector<MetricFamily> snapshot_to_families(const Snapshot& s) {
    Builder bld(Builder::Output::families);
    sections(bld, s);
    auto out = std::move(bld).finish();
    escape_labels(out);
    for (auto& f : view_families(s)) out.push_back(std::move(f));
    return out;
}

namespace {

void http_section(Builder& bld, const HttpStats& stats, const WebReloadStatus* web) {
    auto& req = bld.counter("rocewatch_http_requests_total",
                            "HTTP requests answered, by route pattern and status code.");
    for (const auto& r : stats.requests())
        add(req, {{"handler", r.handler}, {"code", std::to_string(r.code)}}, static_cast<double>(r.count));
    auto& rej = bld.counter("rocewatch_http_rejected_total",
                            "Connections turned away before routing (hostile or malformed head, timeout, overload).");
    for (const auto& [reason, n] : stats.rejected()) add(rej, {{"reason", to_string(reason)}}, static_cast<double>(n));
    if (web) {  // a renewed certificate that fails to load is otherwise only a log line
        add(bld.gauge("rocewatch_web_config_last_reload_successful",
                      "1 when the web config's newest version on disk is the one in use, 0 while it is refused "
                      "(the last good one stays)."),
            {}, web->ok ? 1 : 0);
        add(bld.gauge("rocewatch_web_config_last_reload_success_timestamp_seconds",
                      "When the web config in use was loaded, at start or on a change, as a Unix time."),
            {}, unix_seconds(web->last_success));
    }
}

}  // namespace

std::vector<MetricFamily> http_families(const HttpStats& stats, const WebReloadStatus* web) {
    Builder bld(Builder::Output::families);
    http_section(bld, stats, web);
    return std::move(bld).finish();
}

// The same text as text_format(snapshot_to_families(s)), written as the sections walk the
// snapshot (test: Metrics.RenderedTextIsTheFamiliesInTextFormat).
std::vector<std::string> render_snapshot_pieces(const Snapshot& s, RenderSizes* sizes) {
    Builder bld(Builder::Output::text, sizes);
    sections(bld, s);
    auto pieces = std::move(bld).finish_text();
    std::string views;
    append_text_format(views, view_families(s));
    if (!views.empty()) pieces.push_back(std::move(views));
    return pieces;
}

std::string join_pieces(const std::vector<std::string>& pieces) {
    std::size_t size = 0;
    for (const auto& p : pieces) size += p.size();
    std::string out;
    out.reserve(size);
    for (const auto& p : pieces) out += p;
    return out;
}

std::string render_snapshot_metrics(const Snapshot& s) { return join_pieces(render_snapshot_pieces(s)); }

// Every scrape renders this part: written as text directly, not through families first
// (test: Metrics.HttpTextIsTheFamiliesInTextFormat).
std::string render_http_metrics(const HttpStats& stats, const WebReloadStatus* web) {
    Builder bld(Builder::Output::text);
    http_section(bld, stats, web);
    return join_pieces(std::move(bld).finish_text());
}

std::string render_metrics(const Snapshot& s, const HttpStats& stats) {
    return render_snapshot_metrics(s) + render_http_metrics(stats);
}

}  // namespace rocewatch::api
