// Probe failures sorted by path: which peer, which rail, which family of probe (RDMA, TCP,
// peer-level runs) failed, so that every failing probe maps to exactly one verdict.
#pragma once

#include <string>
#include <vector>

#include "daemon/model/probe.hpp"

namespace rocewatch {

// The verdict a failing probe path gets, one rule each:
//   peer_unreachable      nothing to the peer passes and every failure is a reachability
//                         failure (unreachable, refused, timeout, no RDMA ACK)
//   rail_unreachable      every family on one rail fails while another path to the peer passes
//                         (RDMA and TCP both fail, or the only family probed fails with a
//                         reachability reason)
//   rdma_fails_tcp_works  RDMA fails on a rail, TCP over that rail passes
//   tcp_fails_rdma_works  TCP fails on a rail, RDMA over that rail passes
//   probe_failed          any other failing probe (a failing kind next to a passing one of its
//                         family, one family failing with the other not probed, other reasons)
struct PathVerdict {
    std::string rule;
    std::string peer;
    std::string rail;                        // "" for peer-wide verdicts and peer-level kinds
    std::vector<const ProbeResult*> failed;  // the failing latest runs it covers, >= 1
    std::vector<const ProbeResult*> passed;  // rdma_fails_tcp_works / tcp_fails_rdma_works: the pass
    std::vector<std::string> rails;          // peer_unreachable: the rails that failed
};

// Reasons that say the peer (or its RDMA port) did not answer at all.
bool reachability_reason(const std::string& reason);

// Judges the latest run of every (peer, rail, kind). A family's state on a rail is its newest
// run across its kinds (ties: a pass wins), so an older pass never masks a newer failure;
// every key whose latest run failed is covered by exactly one verdict.
std::vector<PathVerdict> judge_probe_paths(const ProbeBook& book);

}  // namespace rocewatch
