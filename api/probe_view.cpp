// Probe results, peer hellos and the peer-facing checks, as JSON and metric text: pure functions.
#include "api/probe_view.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "api/json_view.hpp"
#include "api/text_format.hpp"
#include "daemon/cluster/rail_match.hpp"
#include "daemon/model/dcb.hpp"
#include "daemon/model/rdma_port.hpp"
#include "util/base64.hpp"
#include "util/ct_compare.hpp"
#include "util/json_int.hpp"

namespace rocewatch::api {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using LabelSet = std::vector<ClientMetric::Label>;

MetricFamily family(std::string name, std::string help, MetricType type) {
    MetricFamily f;
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    return f;
}

void gauge(MetricFamily& f, LabelSet l, double v) {
    ClientMetric m;
    m.label = std::move(l);
    m.gauge.value = v;
    f.metric.push_back(std::move(m));
}

// Quantiles of one run; _count and _sum as given: cumulative for /metrics (`totals`), the
// run's own for /probe, which answers one run per scrape as blackbox_exporter does.
void latency_summary(MetricFamily& f, LabelSet l, const LatencyStats& st, const LatencyTotals& totals) {
    ClientMetric m;
    m.label = std::move(l);
    m.summary.quantile = {{0.5, st.typical}, {0.99, st.p99}, {0.999, st.p99_9}};
    m.summary.sample_count = totals.count;
    m.summary.sample_sum = totals.sum;
    f.metric.push_back(std::move(m));
}

LatencyTotals run_totals(const LatencyStats& st) { return {st.used, st.mean * static_cast<double>(st.used)}; }

// The mesh histogram's counts as Prometheus has them: each bucket counts the observations at
// or below its bound; the last (+Inf) counts all of them.
std::array<uint64_t, MeshSummary::kBuckets.size() + 1> cumulative_buckets(const MeshSummary& m) {
    std::array<uint64_t, MeshSummary::kBuckets.size() + 1> out{};
    uint64_t sum = 0;
    for (size_t i = 0; i < out.size(); ++i) out[i] = sum += m.buckets[i];
    return out;
}

// The rotating peers' summaries: a fixed number of series per rail and kind, whatever the
// cluster's size (docs/cluster.md#what-it-costs).
void add_mesh_families(std::vector<MetricFamily>& out, const ProbeBook& b) {
    if (b.mesh.empty()) return;
    auto runs = family("rocewatch_mesh_probes_total",
                       "Probes to the inventory's rotating peers over the rail, by result, since start.",
                       MetricType::Counter);
    auto hist = family("rocewatch_mesh_latency_seconds",
                       "Median half round trip of each successful probe to a rotating peer over the rail.",
                       MetricType::Histogram);
    auto failing = family("rocewatch_mesh_failing_peer",
                          "Rotating peers (at most 3) whose newest probe over the rail failed in the last two "
                          "rounds, newest first; always 1.",
                          MetricType::Gauge);
    auto slowest = family("rocewatch_mesh_slowest_peer_latency_seconds",
                          "The rotating peers (at most 3) with the highest median half round trip over the rail "
                          "in the last two rounds.",
                          MetricType::Gauge);
    for (const auto& [key, m] : b.mesh) {
        const std::string kind = to_string(key.kind);
        const std::pair<const char*, uint64_t> by_result[] = {{"success", m.successes}, {"failure", m.failures}};
        for (const auto& [result, n] : by_result) {
            ClientMetric c;
            c.label = {{"rail", key.rail}, {"kind", kind}, {"result", result}};
            c.counter.value = static_cast<double>(n);
            runs.metric.push_back(std::move(c));
        }
        ClientMetric h;
        h.label = {{"rail", key.rail}, {"kind", kind}};
        const auto counts = cumulative_buckets(m);
        for (size_t i = 0; i < MeshSummary::kBuckets.size(); ++i)
            h.histogram.bucket.push_back({counts[i], MeshSummary::kBuckets[i]});
        h.histogram.bucket.push_back({counts.back(), std::numeric_limits<double>::infinity()});
        h.histogram.sample_count = counts.back();
        h.histogram.sample_sum = m.sum;
        hist.metric.push_back(std::move(h));
        for (const auto& [peer, seen] : m.failing()) {
            LabelSet l = {{"rail", key.rail}, {"kind", kind}, {"peer", peer}};
            l.push_back({"reason", seen->reason.empty() ? "unknown" : seen->reason});
            gauge(failing, std::move(l), 1);
        }
        for (const auto& [peer, seen] : m.slowest())
            gauge(slowest, {{"rail", key.rail}, {"kind", kind}, {"peer", peer}}, seen->latency);
    }
    for (auto* f : {&runs, &hist, &failing, &slowest})
        if (!f->metric.empty()) out.push_back(std::move(*f));
}

// The rotating peers of this round and their per-rail summaries (REST twin of the mesh
// families; latencies in seconds, the histogram's buckets cumulative as in /metrics).
nlohmann::json mesh_json(const ProbeBook& b) {
    using nlohmann::json;
    json rotating = json::array();
    for (const auto& [name, address] : b.rotating) rotating.push_back({{"name", name}, {"address", address}});
    json summaries = json::array();
    for (const auto& [key, m] : b.mesh) {
        json buckets = json::array();
        const auto counts = cumulative_buckets(m);
        for (size_t i = 0; i < MeshSummary::kBuckets.size(); ++i)
            buckets.push_back({{"le", MeshSummary::kBuckets[i]}, {"count", counts[i]}});
        buckets.push_back({{"le", "+Inf"}, {"count", counts.back()}});
        json failing = json::array();
        for (const auto& [peer, seen] : m.failing())
            failing.push_back({{"peer", peer}, {"reason", seen->reason}, {"at", format_rfc3339(seen->at)}});
        json slowest = json::array();
        for (const auto& [peer, seen] : m.slowest())
            slowest.push_back(
                {{"peer", peer}, {"latency_p50_seconds", seen->latency}, {"at", format_rfc3339(seen->at)}});
        summaries.push_back({{"rail", key.rail},
                             {"kind", to_string(key.kind)},
                             {"successes", m.successes},
                             {"failures", m.failures},
                             {"latency_sum_seconds", m.sum},
                             {"latency_buckets", std::move(buckets)},
                             {"failing_peers", std::move(failing)},
                             {"slowest_peers", std::move(slowest)}});
    }
    return {{"round", b.round ? json(*b.round) : json(nullptr)},
            {"rotating_peers", std::move(rotating)},
            {"summaries", std::move(summaries)}};
}

}  // namespace

nlohmann::json probe_result_json(const ProbeResult& r) {
    nlohmann::json j = {
        {"kind", to_string(r.kind)},
        {"peer", r.peer},
        {"rail", r.rail},
        {"success", r.success},
        {"duration_seconds", r.duration_seconds},
        {"reason", r.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
        {"detail", r.detail.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.detail)},
        {"bandwidth_bytes_per_second",
         r.bandwidth_bits_per_second ? nlohmann::json(*r.bandwidth_bits_per_second / 8) : nlohmann::json(nullptr)},
        {"bytes", r.bytes},
        {"iterations", r.iterations},
        {"streams", r.streams},
        {"bytes_per_stream", r.bytes_per_stream},
        {"bytes_per_rail", r.bytes_per_rail},
        {"info", details_json(r.info)},  // figures as numbers, text as strings
        {"started_at", r.started == TimePoint{} ? nlohmann::json(nullptr) : nlohmann::json(format_rfc3339(r.started))},
    };
    if (r.latency) {
        const auto& l = *r.latency;
        j["latency_seconds"] = {{"samples", l.samples}, {"used", l.used},       {"min", l.min},
                                {"max", l.max},         {"typical", l.typical}, {"mean", l.mean},
                                {"stddev", l.stddev},   {"p99", l.p99},         {"p99_9", l.p99_9}};
    } else {
        j["latency_seconds"] = nullptr;
    }
    return j;
}

namespace {

// The field when it holds a T, else `fallback`: a wrong type is a missing field, never a throw.
template <class T>
T field_or(const nlohmann::json& j, const char* key, T fallback) {
    const auto it = j.find(key);
    if (it == j.end()) return fallback;
    if constexpr (std::is_same_v<T, bool>) {
        return it->is_boolean() ? it->get<bool>() : fallback;
    } else if constexpr (std::is_same_v<T, std::string>) {
        return it->is_string() ? it->get<std::string>() : fallback;
    } else if constexpr (std::is_floating_point_v<T>) {
        return it->is_number() ? it->get<T>() : fallback;
    } else {
        return it->is_number_unsigned() ? it->get<T>() : fallback;
    }
}

LatencyStats latency_from_json(const nlohmann::json& l) {
    LatencyStats s;
    s.samples = field_or<uint64_t>(l, "samples", 0);
    s.used = field_or<uint64_t>(l, "used", 0);
    s.min = field_or(l, "min", 0.0);
    s.max = field_or(l, "max", 0.0);
    s.typical = field_or(l, "typical", 0.0);
    s.mean = field_or(l, "mean", 0.0);
    s.stddev = field_or(l, "stddev", 0.0);
    s.p99 = field_or(l, "p99", 0.0);
    s.p99_9 = field_or(l, "p99_9", 0.0);
    return s;
}

}  // namespace

ProbeResult probe_result_from_json(const nlohmann::json& j, ProbeKind kind_if_missing) {
    ProbeResult r;
    if (!j.is_object()) return r;
    r.kind = probe_kind_from_string(field_or<std::string>(j, "kind", "")).value_or(kind_if_missing);
    r.peer = field_or<std::string>(j, "peer", "");
    r.rail = field_or<std::string>(j, "rail", "");
    r.success = field_or(j, "success", false);
    r.duration_seconds = field_or(j, "duration_seconds", 0.0);
    r.reason = field_or<std::string>(j, "reason", "");
    r.detail = field_or<std::string>(j, "detail", "");
    // Bytes per second since API version 2; a peer of an older version still sends bits.
    if (j.contains("bandwidth_bytes_per_second") && j["bandwidth_bytes_per_second"].is_number())
        r.bandwidth_bits_per_second = j["bandwidth_bytes_per_second"].get<double>() * 8;
    else if (j.contains("bandwidth_bits_per_second") && j["bandwidth_bits_per_second"].is_number())
        r.bandwidth_bits_per_second = j["bandwidth_bits_per_second"].get<double>();
    r.bytes = field_or<uint64_t>(j, "bytes", 0);
    r.iterations = field_or<uint64_t>(j, "iterations", 0);
    r.streams = field_or<uint32_t>(j, "streams", 0);
    if (j.contains("bytes_per_stream") && j["bytes_per_stream"].is_array())
        for (const auto& v : j["bytes_per_stream"])
            if (v.is_number_unsigned()) r.bytes_per_stream.push_back(v.get<uint64_t>());
    if (j.contains("bytes_per_rail") && j["bytes_per_rail"].is_object())
        for (const auto& [k, v] : j["bytes_per_rail"].items())
            if (v.is_number_unsigned()) r.bytes_per_rail[k] = v.get<uint64_t>();
    if (j.contains("info") && j["info"].is_object()) {
        for (const auto& [k, v] : j["info"].items()) {
            if (v.is_string())
                r.info[k] = v.get<std::string>();
            else if (v.is_number())
                r.info[k] = v.dump();
        }
    }
    if (j.contains("latency_seconds") && j["latency_seconds"].is_object())
        r.latency = latency_from_json(j["latency_seconds"]);
    return r;
}

nlohmann::json probes_json(const Snapshot& s) {
    nlohmann::json j = {{"api_version", kApiVersion},
                        {"enabled", false},
                        {"disabled_reason", nullptr},
                        {"peers", nlohmann::json::array()},
                        {"probes", nlohmann::json::array()}};
    if (s.probe_budget) {
        const ProbeBudgetStats& pb = *s.probe_budget;
        auto sides = [](const std::array<uint64_t, 2>& v) { return nlohmann::json{{"own", v[0]}, {"peer", v[1]}}; };
        j["budget"] = {{"max_runs_per_minute", pb.max_runs_per_minute},
                       {"max_bytes_per_minute", pb.max_bytes_per_minute},
                       {"runs_last_minute", pb.runs_last_minute},
                       {"bytes_last_minute", pb.bytes_last_minute},
                       {"admitted", sides(pb.admitted)},
                       {"refused", sides(pb.refused)},
                       {"bytes", sides(pb.bytes)}};
    }
    if (!s.probes) return j;
    const ProbeBook& b = *s.probes;
    j["enabled"] = b.enabled;
    if (!b.disabled_reason.empty()) j["disabled_reason"] = b.disabled_reason;
    for (const auto& [name, p] : b.peers) {
        nlohmann::json peer = {{"name", name},
                               {"address", p.address},
                               {"hello_ok", p.hello_ok},
                               {"hello_error",
                                p.hello_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.hello_error)},
                               {"hello_at", p.hello_at == TimePoint{} ? nlohmann::json(nullptr)
                                                                      : nlohmann::json(format_rfc3339(p.hello_at))}};
        if (!p.hello_detail.empty()) peer["hello_detail"] = p.hello_detail;
        peer["rotating"] = b.rotating.count(name) > 0;
        if (p.hello) {
            peer["version"] = p.hello->version;
            peer["data_port"] = p.hello->data_port;
            peer["ucx_version"] = p.hello->ucx_version;
        }
        j["peers"].push_back(std::move(peer));
    }
    for (const auto& [key, results] : b.results) {
        if (results.empty()) continue;
        nlohmann::json history = nlohmann::json::array();
        for (const auto& r : results)
            history.push_back(
                {{"started_at",
                  r.started == TimePoint{} ? nlohmann::json(nullptr) : nlohmann::json(format_rfc3339(r.started))},
                 {"success", r.success},
                 {"reason", r.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
                 {"duration_seconds", r.duration_seconds},
                 {"bandwidth_bytes_per_second", r.bandwidth_bits_per_second
                                                    ? nlohmann::json(*r.bandwidth_bits_per_second / 8)
                                                    : nlohmann::json(nullptr)},
                 {"latency_p50_seconds", r.latency ? nlohmann::json(r.latency->typical) : nlohmann::json(nullptr)}});
        nlohmann::json entry = {{"peer", key.peer},
                                {"rail", key.rail},
                                {"kind", to_string(key.kind)},
                                {"latest", probe_result_json(results.back())},
                                {"history", std::move(history)}};
        // When the latest did not run (our rail or the peer busy), the run verdicts go by.
        if (!probe_ran(results.back())) {
            const ProbeResult* ran = last_run(results);
            entry["last_run"] = ran ? probe_result_json(*ran) : nlohmann::json(nullptr);
        }
        j["probes"].push_back(std::move(entry));
    }
    j["mesh"] = mesh_json(b);
    return j;
}

nlohmann::json hello_json(const Snapshot& s, uint16_t data_port) {
    nlohmann::json ifaces = nlohmann::json::object();
    for (const auto& l : s.links) {
        std::set<std::string> gid_types;
        std::string rdma_device;
        for (const auto& d : s.devices)
            for (const auto& p : d.ports)
                if (p.netdev == l.name) {
                    if (rdma_device.empty()) rdma_device = d.name;
                    for (const auto& g : p.gids)
                        if (!g.type.empty()) gid_types.insert(g.type);
                }
        nlohmann::json addrs = nlohmann::json::array(), cidrs = nlohmann::json::array();
        nlohmann::json prefixes = nlohmann::json::array();
        for (const auto& a : l.addresses) {
            addrs.push_back(a.address);
            prefixes.push_back({{"address", a.address}, {"prefixlen", a.prefixlen}});
            if (a.family == AF_INET) cidrs.push_back(a.address + "/" + std::to_string(a.prefixlen));
        }
        nlohmann::json i = {{"mtu", l.mtu},
                            {"gid_types", gid_types},
                            {"addresses", std::move(addrs)},
                            {"prefixes", std::move(prefixes)},
                            {"cidrs", std::move(cidrs)},
                            {"mac", l.mac},
                            {"rdma_device", rdma_device}};
        // Who answers ARP for which address: what the peer's cabling checks need from us.
        if (l.arp_ignore) i["arp_ignore"] = *l.arp_ignore;
        if (l.arp_announce) i["arp_announce"] = *l.arp_announce;
        if (l.rp_filter) i["rp_filter"] = *l.rp_filter;
        // Lossless RoCE: what the peer compares its end of the rail with.
        if (l.dcb && l.dcb->error == 0) {
            if (l.dcb->ieee.pfc_enabled) i["pfc_enabled"] = *l.dcb->ieee.pfc_enabled;
            i["roce_priority"] = roce_priority(l.dcb->ieee, rdma_cm_tos_for_netdev(s, l.name)).priority;
        }
        if (const RdmaPort* rp = roce_port_for_netdev(s, l.name)) {
            if (rp->ecn_rp_enabled) i["ecn_rp_enabled"] = *rp->ecn_rp_enabled;
            if (rp->ecn_np_enabled) i["ecn_np_enabled"] = *rp->ecn_np_enabled;
        }
        ifaces[l.name] = std::move(i);
    }
    // Our rails in order, so a peer whose rails share one subnet can pair them by position.
    nlohmann::json rails = nlohmann::json::array();
    if (s.config)
        for (const auto& r : local_rails(s, *s.config))
            rails.push_back({{"name", r.name}, {"device", r.device}, {"netdev", r.netdev}});
    return {
        {"version", s.version},
        {"protocol_version", kPeerProtocolVersion},
        {"data_port", data_port},
        {"ucx_version", s.host.ucx_version},
        {"interfaces", std::move(ifaces)},
        {"rails", std::move(rails)},
    };
}

namespace {

// Whether a string from a peer can be a name, version or type: at most 255 bytes, no control
// characters. What a peer says ends up in alert summaries, the log and the API.
bool peer_text_ok(const std::string& v) {
    return v.size() <= 255 &&
           std::none_of(v.begin(), v.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// A short name from a peer: a string peer_text_ok takes, else "".
std::string peer_name(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return "";
    const auto& v = it->get_ref<const std::string&>();
    return peer_text_ok(v) ? v : "";
}

// A string the hello needs: refused whole when it is no name (a hostile or broken peer).
std::string peer_text(const nlohmann::json& v, const char* what) {
    auto s = v.get<std::string>();
    if (!peer_text_ok(s))
        throw std::invalid_argument(std::string("hello: ") + what +
                                    " is longer than 255 bytes or holds control characters");
    return s;
}
std::vector<std::string> peer_texts(const nlohmann::json& v, const char* what) {
    std::vector<std::string> out;
    for (const auto& e : v) out.push_back(peer_text(e, what));
    return out;
}

}  // namespace

PeerHello hello_from_json(const nlohmann::json& j) {
    PeerHello h;
    h.version = peer_text(j.at("version"), "version");
    const auto protocol = json_int<uint32_t>(j.at("protocol_version"));
    const auto port = json_int<uint16_t>(j.at("data_port"));
    if (!protocol || !port)
        throw std::invalid_argument("hello: protocol_version and data_port must be integers in range");
    h.protocol_version = *protocol;
    h.data_port = *port;
    h.ucx_version = j.contains("ucx_version") ? peer_text(j["ucx_version"], "ucx_version") : "";
    for (const auto& item : j.at("interfaces").items()) {
        // Named, not a structured binding: clang 14 (Debian 12) cannot capture one in a lambda.
        const std::string& name = item.key();
        const nlohmann::json& i = item.value();
        if (!peer_text_ok(name)) throw std::invalid_argument("hello: an interface name is no name");
        PeerInterfaceInfo info;
        if (i.contains("mtu")) info.mtu = json_int<uint32_t>(i["mtu"]);
        if (i.contains("gid_types")) info.gid_types = peer_texts(i["gid_types"], "a GID type");
        if (i.contains("mac") && i["mac"].is_string()) info.mac = i["mac"].get<std::string>();
        if (i.contains("cidrs")) info.cidrs = peer_texts(i["cidrs"], "a CIDR");
        auto small = [&](const char* key) -> std::optional<int> {
            if (!i.contains(key)) return std::nullopt;
            auto v = json_int<uint8_t>(i[key]);
            return v ? std::optional<int>(*v) : std::nullopt;
        };
        info.arp_ignore = small("arp_ignore");
        info.arp_announce = small("arp_announce");
        info.rp_filter = small("rp_filter");
        const auto bits = [&](const char* key) -> std::optional<uint8_t> {
            auto v = small(key);
            return v ? std::optional<uint8_t>(static_cast<uint8_t>(*v)) : std::nullopt;
        };
        info.pfc_enabled = bits("pfc_enabled");
        info.ecn_rp_enabled = bits("ecn_rp_enabled");
        info.ecn_np_enabled = bits("ecn_np_enabled");
        if (auto prio = small("roce_priority"); prio && *prio < 8) info.roce_priority = prio;
        if (i.contains("addresses"))
            for (const auto& a : i["addresses"]) h.address_interface[peer_text(a, "an address")] = name;
        // Added after protocol 1 shipped: absent or malformed is "not said", never an error.
        if (auto p = i.find("prefixes"); p != i.end() && p->is_array())
            for (const auto& e : *p) {
                if (!e.is_object()) continue;
                int len = -1;
                if (auto it = e.find("prefixlen"); it != e.end())
                    if (auto v = json_int<uint8_t>(*it)) len = *v;
                auto addr = peer_name(e, "address");
                if (len >= 0 && len <= 128 && !addr.empty()) info.prefixes.push_back({addr, len});
            }
        info.mac = peer_name(i, "mac");
        info.rdma_device = peer_name(i, "rdma_device");
        h.interfaces[name] = std::move(info);
    }
    if (auto r = j.find("rails"); r != j.end() && r->is_array())
        for (const auto& e : *r)
            if (e.is_object())
                h.rails.push_back({peer_name(e, "name"), peer_name(e, "device"), peer_name(e, "netdev")});
    return h;
}

bool bearer_matches(const std::string& header, const std::string& token) {
    static constexpr std::string_view kPrefix = "Bearer ";
    if (token.empty() || !has_auth_scheme(header, kPrefix)) return false;
    return constant_time_equal(std::string_view(header).substr(kPrefix.size()), token);
}

bool credentials_match(const std::string& header, const std::string& token) {
    if (token.empty()) return false;
    if (!has_auth_scheme(header, "Basic ")) return bearer_matches(header, token);
    const auto c = parse_basic_authorization(header);
    return c && constant_time_equal(c->password, token);
}

void add_probe_families(std::vector<MetricFamily>& out, const Snapshot& s) {
    if (!s.probes) return;
    auto ok = family("rocewatch_probe_success", "1 when the latest probe to the peer over the rail succeeded, else 0.",
                     MetricType::Gauge);
    auto dur = family("rocewatch_probe_duration_seconds", "Duration of the latest probe in seconds.",
                      MetricType::Gauge);
    // Bytes, not bits: Prometheus' base unit (promtool's lint refuses "bits").
    auto bw = family("rocewatch_probe_bandwidth_bytes_per_second",
                     "Bandwidth the latest bandwidth probe measured (at the receiver), in bytes per second.",
                     MetricType::Gauge);
    auto lat = family("rocewatch_probe_latency_seconds",
                      "Half round trip latency in seconds: quantiles of the latest run, _count and _sum over "
                      "every sample since start.",
                      MetricType::Summary);
    auto per_rail = family("rocewatch_probe_bytes_per_rail",
                           "Bytes each rail moved during the latest multi-rail probe (port counters).",
                           MetricType::Gauge);
    auto last = family("rocewatch_probe_last_run_timestamp_seconds", "Unix time the latest probe started.",
                       MetricType::Gauge);
    // The reason words are a fixed set (probes/errors.hpp), so the label stays bounded.
    auto failure = family("rocewatch_probe_failure_info", "Why the latest probe failed; always 1.", MetricType::Gauge);
    auto ucx = family("rocewatch_probe_ucx_info",
                      "UCX versions of both sides and the lanes UCX chose in the latest UCX probe; always 1.",
                      MetricType::Gauge);
    for (const auto& [key, results] : s.probes->results) {
        if (results.empty()) continue;
        // A probe that did not run (our rail or the peer busy) measured nothing: the figures of
        // the last real run stand, and its timestamp shows how old they are.
        const ProbeResult* r = last_run(results);
        if (!r) continue;
        const LabelSet l = {{"peer", key.peer}, {"rail", key.rail}, {"kind", to_string(key.kind)}};
        gauge(ok, l, r->success ? 1 : 0);
        gauge(dur, l, r->duration_seconds);
        if (r->started != TimePoint{}) gauge(last, l, unix_seconds(r->started));
        if (!r->success) {
            LabelSet fl = l;
            fl.push_back({"reason", r->reason.empty() ? "unknown"
                                                      : r->reason});  // clang 14 (fuzz build): no paren-aggregate init
            gauge(failure, fl, 1);
            continue;
        }
        if (is_ucx_kind(key.kind) && r->info.count("ucx_lanes")) {
            auto info = [&](const char* k) {
                auto it = r->info.find(k);
                return it == r->info.end() ? std::string() : it->second;
            };
            gauge(ucx,
                  {{"peer", key.peer},
                   {"kind", to_string(key.kind)},
                   {"local_version", info("local_ucx_version")},
                   {"remote_version", info("remote_ucx_version")},
                   {"lanes", info("ucx_lanes")}},
                  1);
        }
        if (r->bandwidth_bits_per_second) gauge(bw, l, *r->bandwidth_bits_per_second / 8);
        if (r->latency) {
            const auto t = s.probes->latency_totals.find(key);
            latency_summary(lat, l, *r->latency,
                            t == s.probes->latency_totals.end() ? run_totals(*r->latency) : t->second);
        }
        for (const auto& [rail, bytes] : r->bytes_per_rail) {
            LabelSet rl = {{"peer", key.peer}, {"rail", rail}, {"kind", to_string(key.kind)}};
            gauge(per_rail, rl, static_cast<double>(bytes));
        }
    }
    for (auto* f : {&ok, &dur, &bw, &lat, &per_rail, &last, &failure, &ucx})
        if (!f->metric.empty()) out.push_back(std::move(*f));
    add_mesh_families(out, *s.probes);
}

std::string render_probe_result(const ProbeResult& r) {
    std::vector<MetricFamily> fams;
    auto ok = family("probe_success", "1 when the probe succeeded, else 0.", MetricType::Gauge);
    gauge(ok, {}, r.success ? 1 : 0);
    auto dur = family("probe_duration_seconds", "How long the probe took, in seconds.", MetricType::Gauge);
    gauge(dur, {}, r.duration_seconds);
    fams.push_back(std::move(ok));
    fams.push_back(std::move(dur));
    if (r.success && r.bandwidth_bits_per_second) {
        auto bw = family("probe_bandwidth_bytes_per_second", "Bandwidth measured at the receiver, in bytes per second.",
                         MetricType::Gauge);
        gauge(bw, {}, *r.bandwidth_bits_per_second / 8);
        fams.push_back(std::move(bw));
    }
    if (r.success && r.latency) {
        auto lat = family("probe_latency_seconds", "Half round trip latency, in seconds.", MetricType::Summary);
        latency_summary(lat, {}, *r.latency, run_totals(*r.latency));
        fams.push_back(std::move(lat));
    }
    if (!r.success) {
        auto why = family("probe_failure_info", "Why the probe failed; always 1.", MetricType::Gauge);
        gauge(why, {{"reason", r.reason}}, 1);
        fams.push_back(std::move(why));
    }
    return text_format(fams);
}

}  // namespace rocewatch::api
