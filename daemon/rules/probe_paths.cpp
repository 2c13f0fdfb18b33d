// Probe failures sorted by path: see probe_paths.hpp.
#include "daemon/rules/probe_paths.hpp"

#include <map>
#include <set>

namespace rocewatch {
namespace {

enum class Family { rdma, tcp, peer_level };

Family family_of(ProbeKind k) {
    if (is_peer_level_kind(k)) return Family::peer_level;
    return is_tcp_kind(k) ? Family::tcp : Family::rdma;
}

enum class State { absent, pass, fail };

struct Group {
    std::vector<const ProbeResult*> latest;  // the latest run of each kind
    const ProbeResult* newest = nullptr;     // newest of them; a pass on a tie
    State state() const {
        if (!newest) return State::absent;
        return newest->success ? State::pass : State::fail;
    }
    std::vector<const ProbeResult*> failed() const {
        std::vector<const ProbeResult*> v;
        for (const auto* r : latest)
            if (!r->success) v.push_back(r);
        return v;
    }
    void add(const ProbeResult* r) {
        latest.push_back(r);
        if (!newest || r->started > newest->started || (r->started == newest->started && r->success)) newest = r;
    }
};

struct Rail {
    std::map<Family, Group> families;
    State state(Family f) const {
        auto it = families.find(f);
        return it == families.end() ? State::absent : it->second.state();
    }
};

}  // namespace

bool reachability_reason(const std::string& r) {
    return r == "peer_unreachable" || r == "connection_refused" || r == "timeout" || r == "rdma_no_ack";
}

std::vector<PathVerdict> judge_probe_paths(const ProbeBook& book) {
    // peer -> rail -> family -> latest run of each kind
    std::map<std::string, std::map<std::string, Rail>> peers;
    for (const auto& [k, results] : book.results)
        if (const ProbeResult* r = last_run(results)) peers[k.peer][k.rail].families[family_of(k.kind)].add(r);

    std::vector<PathVerdict> out;
    for (const auto& peer_rails : peers) {
        const std::string& peer = peer_rails.first;
        const auto& rails = peer_rails.second;
        bool any_pass = false, all_reachability = true;
        std::vector<const ProbeResult*> all_failed;
        std::vector<std::string> failed_rails;
        for (const auto& [rail, paths] : rails) {
            bool rail_failed = false;
            for (const auto& [f, g] : paths.families) {
                if (g.state() == State::pass) any_pass = true;
                for (const auto* r : g.failed()) {
                    all_failed.push_back(r);
                    rail_failed = true;
                    if (!reachability_reason(r->reason)) all_reachability = false;
                }
            }
            if (rail_failed && !rail.empty()) failed_rails.push_back(rail);
        }
        if (all_failed.empty()) continue;
        if (!any_pass && all_reachability) {
            out.push_back({.rule = "peer_unreachable", .peer = peer, .failed = all_failed, .rails = failed_rails});
            continue;
        }
        for (const auto& rail_paths : rails) {
            // Named copies: clang 14 (Debian 12) cannot capture structured bindings in a lambda.
            const std::string& rail = rail_paths.first;
            const auto& paths = rail_paths.second;
            const State rdma = paths.state(Family::rdma), tcp = paths.state(Family::tcp);
            std::set<const ProbeResult*> covered;
            auto emit = [&](const char* rule, std::vector<const ProbeResult*> failed,
                            std::vector<const ProbeResult*> passed = {}) {
                if (failed.empty()) return;
                for (const auto* r : failed) covered.insert(r);
                out.push_back({.rule = rule,
                               .peer = peer,
                               .rail = rail,
                               .failed = std::move(failed),
                               .passed = std::move(passed)});
            };
            const auto& fam = paths.families;
            auto failed_of = [&](Family f) {
                auto it = fam.find(f);
                return it == fam.end() ? std::vector<const ProbeResult*>{} : it->second.failed();
            };
            auto only_reachability = [&](Family f) {
                for (const auto* r : failed_of(f))
                    if (!reachability_reason(r->reason)) return false;
                return true;
            };
            auto newest_of = [&](Family f) { return std::vector<const ProbeResult*>{fam.at(f).newest}; };
            // A named rail whose every probed family fails (RDMA and TCP), while another path to
            // the peer passes: the rail to that peer is down.
            // Where only one family was probed, its failures must say the peer did not answer.
            const bool all_fail = (rdma == State::fail && tcp == State::fail) ||
                                  (rdma == State::fail && tcp == State::absent && only_reachability(Family::rdma)) ||
                                  (tcp == State::fail && rdma == State::absent && only_reachability(Family::tcp));
            if (!rail.empty() && any_pass && all_fail) {
                auto failed = failed_of(Family::rdma);
                for (const auto* r : failed_of(Family::tcp)) failed.push_back(r);
                emit("rail_unreachable", std::move(failed));
            } else if (rdma == State::fail && tcp == State::pass) {
                emit("rdma_fails_tcp_works", failed_of(Family::rdma), newest_of(Family::tcp));
            } else if (tcp == State::fail && rdma == State::pass) {
                emit("tcp_fails_rdma_works", failed_of(Family::tcp), newest_of(Family::rdma));
            }
            // Whatever failing run is left: one verdict each, named by its kind.
            for (const auto& [f, g] : fam)
                for (const auto* r : g.failed())
                    if (!covered.count(r)) emit("probe_failed", {r});
        }
    }
    return out;
}

}  // namespace rocewatch
