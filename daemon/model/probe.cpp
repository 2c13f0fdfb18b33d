// Names of the probe kinds (the spelling used in config, metrics and the HTTP API) and the probe book.
#include "daemon/model/probe.hpp"

#include "daemon/model/config.hpp"

#include <algorithm>

namespace rocewatch {

const char* to_string(ProbeKind k) {
    switch (k) {
        case ProbeKind::rdma_write_bw: return "rdma_write_bw";
        case ProbeKind::rdma_write_lat: return "rdma_write_lat";
        case ProbeKind::rdma_multirail_bw: return "rdma_multirail_bw";
        case ProbeKind::tcp_bw: return "tcp_bw";
        case ProbeKind::tcp_lat: return "tcp_lat";
        case ProbeKind::ucx_put_bw: return "ucx_put_bw";
        case ProbeKind::ucx_put_lat: return "ucx_put_lat";
    }
    return "unknown";
}

const std::vector<ProbeKind>& all_probe_kinds() {
    static const std::vector<ProbeKind> kinds = {
        ProbeKind::rdma_write_bw, ProbeKind::rdma_write_lat, ProbeKind::rdma_multirail_bw, ProbeKind::tcp_bw,
        ProbeKind::tcp_lat,       ProbeKind::ucx_put_bw,     ProbeKind::ucx_put_lat,
    };
    return kinds;
}

std::optional<ProbeKind> probe_kind_from_string(const std::string& s) {
    for (ProbeKind k : all_probe_kinds())
        if (s == to_string(k)) return k;
    return std::nullopt;
}

bool is_bandwidth_kind(ProbeKind k) {
    return k == ProbeKind::rdma_write_bw || k == ProbeKind::rdma_multirail_bw || k == ProbeKind::tcp_bw ||
           k == ProbeKind::ucx_put_bw;
}

bool is_rdma_kind(ProbeKind k) {
    return k == ProbeKind::rdma_write_bw || k == ProbeKind::rdma_write_lat || k == ProbeKind::rdma_multirail_bw;
}

bool is_tcp_kind(ProbeKind k) { return k == ProbeKind::tcp_bw || k == ProbeKind::tcp_lat; }

bool is_ucx_kind(ProbeKind k) { return k == ProbeKind::ucx_put_bw || k == ProbeKind::ucx_put_lat; }

bool is_peer_level_kind(ProbeKind k) { return k == ProbeKind::rdma_multirail_bw || is_ucx_kind(k); }

ProbeTiming probe_timing(const ProbesConfig& p, ProbeKind k) {
    // Bandwidth: sending time plus connect, QP or worker set-up, and the closing report.
    constexpr Duration kTcpSetup{std::chrono::seconds(5)};
    constexpr Duration kSessionSetup{std::chrono::seconds(10)};
    switch (k) {
        case ProbeKind::tcp_bw:
            return {p.tcp_bw.interval, p.tcp_bw.jitter, p.tcp_bw.duration + kTcpSetup, p.tcp_bw.busy_fraction};
        case ProbeKind::tcp_lat: return {p.tcp_lat.interval, p.tcp_lat.jitter, p.tcp_lat.timeout, std::nullopt};
        case ProbeKind::rdma_write_bw:
        case ProbeKind::rdma_multirail_bw:
            return {p.rdma_bw.interval, p.rdma_bw.jitter, p.rdma_bw.duration + kSessionSetup, p.rdma_bw.busy_fraction};
        case ProbeKind::rdma_write_lat:
            return {p.rdma_lat.interval, p.rdma_lat.jitter, p.rdma_lat.timeout, std::nullopt};
        case ProbeKind::ucx_put_bw:
            return {p.ucx_bw.interval, p.ucx_bw.jitter, p.ucx_bw.duration + kSessionSetup, p.ucx_bw.busy_fraction};
        case ProbeKind::ucx_put_lat: return {p.ucx_lat.interval, p.ucx_lat.jitter, p.ucx_lat.timeout, std::nullopt};
    }
    return {};
}

LatencyThreshold latency_threshold(const ProbesConfig& p, ProbeKind k) {
    auto own = [&](const std::optional<LatencyLimit>& v, const char* section) -> std::optional<LatencyThreshold> {
        if (!v) return std::nullopt;
        return LatencyThreshold{std::chrono::duration<double>(*v).count(),
                                std::string("probes.") + section + ".latency_threshold"};
    };
    std::optional<LatencyThreshold> t;
    if (k == ProbeKind::tcp_lat) t = own(p.tcp_lat.latency_threshold, "tcp_lat");
    if (k == ProbeKind::rdma_write_lat) t = own(p.rdma_lat.latency_threshold, "rdma_lat");
    if (k == ProbeKind::ucx_put_lat) t = own(p.ucx_lat.latency_threshold, "ucx_lat");
    if (t) return *t;
    return {std::chrono::duration<double>(p.latency_threshold).count(), "probes.latency_threshold"};
}

const ProbeResult* ProbeBook::latest(const ProbeKey& k) const {
    auto it = results.find(k);
    if (it == results.end() || it->second.empty()) return nullptr;
    return &it->second.back();
}

void ProbeBook::add(ProbeResult r) {
    const ProbeKey key{r.peer, r.rail, r.kind};
    if (r.success && r.latency) {
        auto& t = latency_totals[key];
        t.count += r.latency->used;
        t.sum += r.latency->mean * static_cast<double>(r.latency->used);
    }
    auto& h = results[key];
    if (!probe_ran(r) && !h.empty() && !probe_ran(h.back()) && h.back().reason == r.reason) {
        const auto it = h.back().info.find("repeated");
        const unsigned long before = it == h.back().info.end() ? 1 : std::strtoul(it->second.c_str(), nullptr, 10);
        r.info["repeated"] = std::to_string(before + 1);
        h.back() = std::move(r);
        return;
    }
    h.push_back(std::move(r));
    while (h.size() > kHistoryLimit) h.pop_front();
}

void ProbeBook::add_mesh(const ProbeResult& r, std::chrono::milliseconds keep_for) {
    if (!probe_ran(r) || r.reason == kReasonStopped) return;
    auto& m = mesh[MeshKey{r.rail, r.kind}];
    MeshPeerSeen seen{.success = r.success, .latency = 0, .reason = r.reason, .at = r.started};
    if (r.success) {
        ++m.successes;
        if (r.latency) {
            seen.latency = r.latency->typical;
            const auto b = std::lower_bound(MeshSummary::kBuckets.begin(), MeshSummary::kBuckets.end(), seen.latency);
            ++m.buckets[static_cast<size_t>(b - MeshSummary::kBuckets.begin())];
            m.sum += seen.latency;
        }
    } else {
        ++m.failures;
    }
    m.seen[r.peer] = std::move(seen);
    // Peers of earlier rounds fade out; the bound holds whatever the clock does.
    std::erase_if(m.seen, [&](const auto& kv) { return kv.second.at < r.started - keep_for; });
    while (m.seen.size() > MeshSummary::kMaxSeen) {
        auto oldest = std::min_element(m.seen.begin(), m.seen.end(),
                                       [](const auto& a, const auto& b) { return a.second.at < b.second.at; });
        m.seen.erase(oldest);
    }
}

namespace {
using Named = std::vector<std::pair<std::string, const MeshPeerSeen*>>;
Named pick(const std::map<std::string, MeshPeerSeen>& seen, bool success,
           bool (*before)(const MeshPeerSeen&, const MeshPeerSeen&)) {
    Named out;
    for (const auto& [peer, s] : seen)
        if (s.success == success) out.emplace_back(peer, &s);
    std::stable_sort(out.begin(), out.end(),
                     [&](const auto& a, const auto& b) { return before(*a.second, *b.second); });
    if (out.size() > MeshSummary::kWorst) out.resize(MeshSummary::kWorst);
    return out;
}
}  // namespace

std::vector<std::pair<std::string, const MeshPeerSeen*>> MeshSummary::failing() const {
    return pick(seen, false, [](const MeshPeerSeen& a, const MeshPeerSeen& b) { return a.at > b.at; });
}

std::vector<std::pair<std::string, const MeshPeerSeen*>> MeshSummary::slowest() const {
    return pick(seen, true, [](const MeshPeerSeen& a, const MeshPeerSeen& b) { return a.latency > b.latency; });
}

const ProbeResult* last_run(const std::deque<ProbeResult>& history) {
    for (auto it = history.rbegin(); it != history.rend(); ++it)
        if (probe_ran(*it)) return &*it;
    return nullptr;
}

}  // namespace rocewatch
