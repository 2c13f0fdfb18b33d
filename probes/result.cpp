// Names of the probe kinds: the spelling used in config, metrics and the HTTP API.
#include "probes/result.hpp"

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

}  // namespace rocewatch
