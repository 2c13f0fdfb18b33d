// Names of the probe kinds (the spelling used in config, metrics and the HTTP API) and the probe book.
#include "model/probe.hpp"

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
        ProbeKind::rdma_write_bw, ProbeKind::rdma_write_lat, ProbeKind::rdma_multirail_bw,
        ProbeKind::tcp_bw,        ProbeKind::tcp_lat,        ProbeKind::ucx_put_bw,
        ProbeKind::ucx_put_lat,
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

const ProbeResult* ProbeBook::latest(const ProbeKey& k) const {
    auto it = results.find(k);
    if (it == results.end() || it->second.empty()) return nullptr;
    return &it->second.back();
}

void ProbeBook::add(ProbeResult r) {
    auto& h = results[ProbeKey{r.peer, r.rail, r.kind}];
    h.push_back(std::move(r));
    while (h.size() > kHistoryLimit) h.pop_front();
}

}  // namespace rocewatch
