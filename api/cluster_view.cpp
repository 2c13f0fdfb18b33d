// The cluster inventory and the peers with their matched rails, as JSON and metric families: pure functions.
#include "api/cluster_view.hpp"

#include "api/json_view.hpp"
#include "daemon/cluster/rail_match.hpp"
#include "daemon/model/cluster.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/probe.hpp"

namespace rocewatch::api {
namespace {

using nlohmann::json;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

json time_or_null(TimePoint t) { return t == TimePoint{} ? json(nullptr) : json(format_rfc3339(t)); }

json rail_json(const PeerRailConfig& r) {
    return {{"name", r.name},
            {"local_interface", r.local_interface},
            {"local_address", r.local_address},
            {"local_device", r.local_device},
            {"remote_address", r.remote_address},
            {"remote_device", r.remote_device}};
}

MetricFamily family(const char* name, const char* help, MetricType type) {
    MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = type;
    return f;
}

void sample(MetricFamily& f, std::vector<ClientMetric::Label> labels, double v) {
    ClientMetric m;
    m.label = std::move(labels);
    if (f.type == MetricType::Counter)
        m.counter.value = v;
    else
        m.gauge.value = v;
    f.metric.push_back(std::move(m));
}

}  // namespace

json cluster_status_json(const Snapshot& s) {
    if (!s.cluster || s.cluster->path.empty()) return nullptr;
    const ClusterState& c = *s.cluster;
    json self = nullptr;
    if (c.self.index) {
        const auto& e = c.inventory.entries[*c.self.index];
        self = {{"target", e.target}, {"index", *c.self.index}, {"labels", e.labels}};
    }
    return {{"inventory", c.path},
            {"entries", c.inventory.entries.size()},
            {"self", std::move(self)},
            {"self_reason", c.self.reason},
            {"last_load_ok", c.last_load_ok},
            {"last_error", c.last_error.empty() ? json(nullptr) : json(c.last_error)},
            {"loaded_at", time_or_null(c.loaded_at)},
            {"last_attempt_at", time_or_null(c.last_attempt)},
            {"loads", c.loads},
            {"load_failures", c.load_failures},
            {"warnings", c.inventory.warnings}};
}

json peers_json(const Snapshot& s) {
    json items = json::array();
    // The same envelope as the other /api/v1 lists.
    auto doc = [&s](json peers) {
        return json{{"api_version", kApiVersion},
                    {"generation", s.generation},
                    {"collected_at", time_or_null(s.collected_at)},
                    {"peers", std::move(peers)}};
    };
    if (!s.config) return doc(std::move(items));
    const auto mine = local_rails(s, *s.config);
    const auto own = local_addresses(s);
    std::map<std::string, const InventoryEntry*> entry_of;
    if (s.cluster)
        for (const auto& e : s.cluster->inventory.entries) entry_of[e.target] = &e;
    std::vector<PeerConfig> peers = s.config->peers;
    if (s.probes)  // this round's rotating peers, rails matched as for the ring's
        for (const auto& [name, address] : s.probes->rotating)
            peers.push_back(
                PeerConfig{.name = name, .address = address, .rails = {}, .from_inventory = true, .rotating = true});
    for (const auto& p : peers) {
        const char* source = p.rotating ? "rotating" : p.from_inventory ? "inventory" : "config";
        json peer = {{"name", p.name},           {"address", p.address},   {"source", source},
                     {"labels", json::object()}, {"hello_ok", false},      {"hello_error", nullptr},
                     {"hello_at", nullptr},      {"rails", json::array()}, {"unmatched_rails", json::array()}};
        if (auto it = entry_of.find(p.address); it != entry_of.end()) peer["labels"] = it->second->labels;
        const PeerState* st = nullptr;
        if (s.probes)
            if (auto it = s.probes->peers.find(p.name); it != s.probes->peers.end()) st = &it->second;
        if (st) {
            peer["hello_ok"] = st->hello_ok;
            peer["hello_error"] = st->hello_error.empty() ? json(nullptr) : json(st->hello_error);
            if (!st->hello_detail.empty()) peer["hello_detail"] = st->hello_detail;
            peer["hello_at"] = time_or_null(st->hello_at);
        }
        if (!p.from_inventory) {
            for (const auto& r : p.rails) {
                auto j = rail_json(r);
                j["reason"] = "configured in [[peers.rails]]";
                peer["rails"].push_back(std::move(j));
            }
        } else if (st && st->hello) {
            auto m = match_rails(mine, *st->hello, own);
            for (const auto& r : m.matched) {
                auto j = rail_json(rail_config(r));
                j["remote_interface"] = r.remote_interface;
                j["reason"] = r.reason;
                peer["rails"].push_back(std::move(j));
            }
            for (const auto& r : m.unmatched)
                peer["unmatched_rails"].push_back({{"name", r.rail}, {"reason", r.reason}});
        }
        items.push_back(std::move(peer));
    }
    return doc(std::move(items));
}

void add_cluster_families(std::vector<MetricFamily>& out, const Snapshot& s) {
    if (!s.cluster || s.cluster->path.empty()) return;
    const ClusterState& c = *s.cluster;
    auto info = family("rocewatch_inventory_info",
                       "The inventory file and the entry that is this node (\"\" when none is); always 1.",
                       MetricType::Gauge);
    sample(info, {{"path", c.path}, {"self", c.self.index ? c.inventory.entries[*c.self.index].target : ""}}, 1);
    auto entries = family("rocewatch_inventory_entries", "Entries (targets) in the inventory in force.",
                          MetricType::Gauge);
    sample(entries, {}, static_cast<double>(c.inventory.entries.size()));
    auto ok = family("rocewatch_inventory_last_load_successful",
                     "1 when the last inventory load succeeded, else 0 (the previous inventory is kept).",
                     MetricType::Gauge);
    sample(ok, {}, c.last_load_ok ? 1 : 0);
    auto failures = family("rocewatch_inventory_load_failures_total",
                           "Inventory loads rejected since start (bad JSON, wrong shape, over a bound).",
                           MetricType::Counter);
    sample(failures, {}, static_cast<double>(c.load_failures));
    for (auto* f : {&info, &entries, &ok, &failures}) out.push_back(std::move(*f));
}

}  // namespace rocewatch::api
