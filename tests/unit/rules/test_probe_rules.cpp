// Probe rules on synthetic probe books (the e2e and VM suites raise them from real probes).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "daemon/model/probe.hpp"
#include "daemon/rules/alerts.hpp"
#include "daemon/rules/rules.hpp"

using namespace rocewatch;

namespace {

struct ProbeRules : ::testing::Test {
    Snapshot s;
    Config c;
    ProbeBook book;

    void SetUp() override {
        c.peers = {PeerConfig{.name = "spark-b",
                              .address = "10.0.0.2:9879",
                              .rails = {{"rail0", "enp1s0f0np0", "10.1.0.1", "10.1.0.2", "rocep1s0f0", "rocep1s0f0"}}}};
        RdmaPort port{.port = 1, .rate_gbps = 100.0, .netdev = "enp1s0f0np0"};
        port.gids.push_back(
            {.index = 3, .gid = "::ffff:10.1.0.1", .type = "RoCE v2", .netdev = "enp1s0f0np0", .ipv4 = "10.1.0.1"});
        s.devices.push_back(RdmaDevice{.name = "rocep1s0f0", .ports = {port}});
        s.links.push_back(Link{.ifindex = 2, .name = "enp1s0f0np0", .mtu = 9000});
        s.host.ucx_version = "1.16.0";
    }

    ProbeResult result(ProbeKind k, bool ok, std::string reason = "", std::string rail = "rail0") {
        ProbeResult r;
        r.kind = k;
        r.peer = "spark-b";
        r.rail = std::move(rail);
        r.success = ok;
        r.reason = std::move(reason);
        return r;
    }

    std::vector<Finding> judge(const std::string& rule) {
        s.probes = std::make_shared<const ProbeBook>(book);
        std::vector<Finding> out;
        for (auto& f : evaluate_rules(s, c))
            if (f.rule == rule) out.push_back(std::move(f));
        return out;
    }
};

TEST_F(ProbeRules, PeerUnreachableWhenEveryLatestProbeFailedThatWay) {
    book.add(result(ProbeKind::tcp_lat, false, "connection_refused"));
    book.add(result(ProbeKind::tcp_bw, false, "timeout"));
    auto f = judge("peer_unreachable");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b");
    EXPECT_EQ(f[0].severity, Severity::critical);

    book.add(result(ProbeKind::tcp_lat, true));
    EXPECT_TRUE(judge("peer_unreachable").empty()) << "one probe got through";
    book.add(result(ProbeKind::tcp_lat, false, "auth_refused"));
    EXPECT_TRUE(judge("peer_unreachable").empty()) << "a refused token means the peer answered";
}

TEST_F(ProbeRules, BandwidthLowAgainstTheLocalLinkRate) {
    auto r = result(ProbeKind::tcp_bw, true);
    r.bandwidth_bits_per_second = 50e9;
    book.add(r);
    auto f = judge("probe_bandwidth_low");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0:tcp_bw");
    r.bandwidth_bits_per_second = 95e9;
    book.add(r);
    EXPECT_TRUE(judge("probe_bandwidth_low").empty());
}

TEST_F(ProbeRules, BandwidthLowOverAllRailsIsAgainstTheirSum) {
    // A NIXL run between two DGX Spark nodes: 105 of 200 Gbps over two 100G rails.
    c.peers[0].rails.push_back({"rail1", "", "10.2.0.1", "10.2.0.2", "", ""});  // found by its address
    RdmaPort port{.port = 1, .rate_gbps = 100.0, .netdev = "enp1s0f1np1"};
    port.gids.push_back(
        {.index = 3, .gid = "::ffff:10.2.0.1", .type = "RoCE v2", .netdev = "enp1s0f1np1", .ipv4 = "10.2.0.1"});
    s.devices.push_back(RdmaDevice{.name = "rocep1s0f1", .ports = {port}});
    for (auto kind : {ProbeKind::rdma_multirail_bw, ProbeKind::ucx_put_bw}) {
        auto r = result(kind, true, "", "");
        r.bandwidth_bits_per_second = 105e9;
        book.add(r);
        auto f = judge("probe_bandwidth_low");
        ASSERT_EQ(f.size(), 1u) << to_string(kind);
        EXPECT_EQ(f[0].object, std::string("spark-b:") + to_string(kind));
        EXPECT_NE(f[0].summary.find("below 90% of the 200 Gbps link"), std::string::npos) << f[0].summary;
        r.bandwidth_bits_per_second = 186e9;  // raw verbs on both links between two DGX Spark nodes
        book.add(r);
        EXPECT_TRUE(judge("probe_bandwidth_low").empty()) << to_string(kind);
    }
    // A rail whose rate is unknown leaves the all-rails figure unjudged, not judged against one rail.
    s.devices.pop_back();
    auto r = result(ProbeKind::rdma_multirail_bw, true, "", "");
    r.bandwidth_bits_per_second = 1e9;
    book.add(r);
    EXPECT_TRUE(judge("probe_bandwidth_low").empty());
}

TEST_F(ProbeRules, LatencyHighAboveThreshold) {
    auto r = result(ProbeKind::tcp_lat, true);
    r.latency = LatencyStats{.samples = 100, .used = 98, .typical = 20e-6, .p99 = 2e-3};
    book.add(r);
    EXPECT_EQ(judge("probe_latency_high").size(), 1u);
    r.latency->p99 = 50e-6;
    book.add(r);
    EXPECT_TRUE(judge("probe_latency_high").empty());
}

TEST_F(ProbeRules, LatencyThresholdPerKind) {
    // RDMA round trips are microseconds: its own 20 us limit, while TCP keeps the global 1 ms.
    c.probes.rdma_lat.latency_threshold = LatencyLimit{20};
    auto rdma = result(ProbeKind::rdma_write_lat, true);
    rdma.latency = LatencyStats{.samples = 1000, .used = 990, .typical = 3e-6, .p99 = 45e-6};
    book.add(rdma);
    auto tcp = result(ProbeKind::tcp_lat, true);
    tcp.latency = LatencyStats{.samples = 100, .used = 98, .typical = 20e-6, .p99 = 45e-6};
    book.add(tcp);
    auto f = judge("probe_latency_high");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0:rdma_write_lat");
    EXPECT_NE(f[0].summary.find("above 20 us (probes.rdma_lat.latency_threshold)"), std::string::npos) << f[0].summary;
    rdma.latency->p99 = 9e-6;
    book.add(rdma);
    EXPECT_TRUE(judge("probe_latency_high").empty());
    // Without its own limit a kind falls back to [probes] latency_threshold, and says so.
    tcp.latency->p99 = 2e-3;
    book.add(tcp);
    f = judge("probe_latency_high");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].summary.find("above 1000 us (probes.latency_threshold)"), std::string::npos) << f[0].summary;
}

TEST_F(ProbeRules, RdmaFailsWhileTcpWorksPointsAtGidMtuQp) {
    book.add(result(ProbeKind::tcp_lat, true));
    auto failed = result(ProbeKind::rdma_write_lat, false, "gid_mismatch");
    failed.detail = "peer's GID 3 holds fe80::1, not 10.0.0.2";
    book.add(failed);
    auto f = judge("rdma_fails_tcp_works");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].severity, Severity::critical);
    // What the probe saw goes with the verdict, as probe_failed's does.
    EXPECT_NE(f[0].summary.find("fails (gid_mismatch: peer's GID 3 holds fe80::1, not 10.0.0.2)"), std::string::npos)
        << f[0].summary;
    EXPECT_NE(f[0].action.find("GID"), std::string::npos);
    EXPECT_NE(f[0].action.find("MTU"), std::string::npos);
    EXPECT_NE(f[0].action.find("QP"), std::string::npos);
    book.add(result(ProbeKind::tcp_lat, false, "timeout"));
    EXPECT_TRUE(judge("rdma_fails_tcp_works").empty()) << "both failing is peer_unreachable's business";
}

TEST_F(ProbeRules, RdmaProbesThatDidNotRunAreNotJudged) {
    book.add(result(ProbeKind::tcp_lat, true));
    book.add(result(ProbeKind::rdma_write_lat, true));
    book.add(result(ProbeKind::rdma_write_lat, false, "peer_busy"));
    EXPECT_TRUE(judge("rdma_fails_tcp_works").empty()) << "the peer served another session: RDMA untested";
    book.add(result(ProbeKind::rdma_write_lat, false, "device_not_found"));
    book.add(result(ProbeKind::rdma_write_lat, false, "peer_busy"));
    EXPECT_EQ(judge("rdma_fails_tcp_works").size(), 1u) << "the newest run that ran failed";
}

// A probe the peer refused as busy, or skipped for our busy rail, neither raises nor clears
// anything: every probe rule judges the newest result that ran.
TEST_F(ProbeRules, EveryProbeRuleLooksPastProbesThatDidNotRun) {
    auto bw = result(ProbeKind::tcp_bw, true);
    bw.bandwidth_bits_per_second = 50e9;
    book.add(bw);
    auto lat = result(ProbeKind::tcp_lat, true);
    lat.latency = LatencyStats{.samples = 10, .used = 10, .typical = 0.5, .p99 = 2.0};
    book.add(lat);
    auto multi = result(ProbeKind::rdma_multirail_bw, true, "", "");
    multi.bytes_per_rail = {{"rail0", 95}, {"rail1", 5}};
    book.add(multi);
    book.add(result(ProbeKind::rdma_write_lat, false, "gid_mismatch"));
    const std::vector<std::string> rules = {"probe_bandwidth_low", "probe_latency_high", "rail_imbalance",
                                            "rdma_fails_tcp_works"};
    for (const auto& rule : rules) ASSERT_EQ(judge(rule).size(), 1u) << rule;
    for (auto k : {ProbeKind::tcp_bw, ProbeKind::tcp_lat, ProbeKind::rdma_multirail_bw, ProbeKind::rdma_write_lat})
        book.add(result(k, false, kReasonPeerBusy, k == ProbeKind::rdma_multirail_bw ? "" : "rail0"));
    book.add(result(ProbeKind::tcp_bw, false, kReasonSkippedBusy));
    for (const auto& rule : rules) EXPECT_EQ(judge(rule).size(), 1u) << rule << ": still judged by the last run";
    EXPECT_TRUE(judge("peer_unreachable").empty());

    // Only runs count towards peer_unreachable, too: busy answers say the peer is there, but
    // not that the path works.
    book = ProbeBook{};
    book.add(result(ProbeKind::tcp_lat, false, "timeout"));
    book.add(result(ProbeKind::tcp_bw, false, kReasonPeerBusy));
    EXPECT_EQ(judge("peer_unreachable").size(), 1u) << "the one probe that ran timed out";
}

TEST_F(ProbeRules, RailImbalanceOverNinetyPercent) {
    auto r = result(ProbeKind::rdma_multirail_bw, true, "", "");
    r.bytes_per_rail = {{"rail0", 95}, {"rail1", 5}};
    book.add(r);
    auto f = judge("rail_imbalance");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].details.at("top_rail"), "rail0");
    r.bytes_per_rail = {{"rail0", 55}, {"rail1", 45}};
    book.add(r);
    EXPECT_TRUE(judge("rail_imbalance").empty());
}

TEST_F(ProbeRules, RailImbalanceOfAUcxRunNamesItsLanesAndTheUcxKnobs) {
    // What the VM test bed shows: UCX puts its data lane on the first rail only.
    auto r = result(ProbeKind::ucx_put_bw, true, "", "");
    r.bytes_per_rail = {{"railA", 33'000'000}, {"railB", 40'000}};
    r.info["ucx_lanes"] = "rc_verbs/rxe0:1,tcp/railB";
    book.add(r);
    auto f = judge("rail_imbalance");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b:ucx_put_bw");
    EXPECT_NE(f[0].summary.find("(UCX lanes: rc_verbs/rxe0:1,tcp/railB)"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].action.find("UCX_NET_DEVICES"), std::string::npos);
    EXPECT_NE(f[0].action.find("UCX_MAX_RNDV_RAILS"), std::string::npos);
}

TEST_F(ProbeRules, UcxVersionMismatchFromTheHello) {
    book.peers["spark-b"] = PeerState{.name = "spark-b",
                                      .hello_ok = true,
                                      .hello = PeerHello{.version = "0.1.0", .ucx_version = "1.15.0"}};
    EXPECT_EQ(judge("ucx_version_mismatch").size(), 1u);
    book.peers["spark-b"].hello->ucx_version = "1.16.0";
    EXPECT_TRUE(judge("ucx_version_mismatch").empty());
}

TEST_F(ProbeRules, PeerConfigMismatchOnMtuAndGidType) {
    PeerHello h;
    h.interfaces["enp1s0f0np0"] = PeerInterfaceInfo{.mtu = 1500, .gid_types = {"IB/RoCE v1"}};
    h.address_interface["10.1.0.2"] = "enp1s0f0np0";
    book.peers["spark-b"] = PeerState{.name = "spark-b", .hello_ok = true, .hello = h};
    auto f = judge("peer_config_mismatch");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0");
    EXPECT_EQ(f[0].details.at("peer_mtu"), "1500");
    EXPECT_EQ(f[0].details.at("local_gid_types"), "RoCE v2");
    book.peers["spark-b"].hello->interfaces["enp1s0f0np0"] = PeerInterfaceInfo{.mtu = 9000, .gid_types = {"RoCE v2"}};
    EXPECT_TRUE(judge("peer_config_mismatch").empty());
}

// Issue 12: the lossless set-up of a rail against the peer's end, from its hello: RoCE's
// priority, the PFC priorities, ECN at RoCE's priority; an end that does not know is not judged.
TEST_F(ProbeRules, PeerConfigMismatchOnTheLosslessSetUp) {
    s.links[0].dcb = DcbState{
        .ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 3, .protocol = 4791, .priority = 3}}}};
    s.devices[0].ports[0].ecn_rp_enabled = 0x08;
    s.devices[0].ports[0].ecn_np_enabled = 0x08;
    PeerHello h;
    h.interfaces["enp1s0f0np0"] = PeerInterfaceInfo{.mtu = 9000, .gid_types = {"RoCE v2"}};
    h.address_interface["10.1.0.2"] = "enp1s0f0np0";
    book.peers["spark-b"] = PeerState{.name = "spark-b", .hello_ok = true, .hello = h};
    EXPECT_TRUE(judge("peer_config_mismatch").empty()) << "the peer says nothing of its DCB: not judged";

    auto& theirs = book.peers["spark-b"].hello->interfaces["enp1s0f0np0"];
    theirs.pfc_enabled = 0x08;
    theirs.roce_priority = 3;
    theirs.ecn_rp_enabled = 0x08;
    theirs.ecn_np_enabled = 0x08;
    EXPECT_TRUE(judge("peer_config_mismatch").empty()) << "the same at both ends";

    theirs.pfc_enabled = 0;
    theirs.ecn_np_enabled = 0;
    auto f = judge("peer_config_mismatch");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0");
    EXPECT_NE(f[0].summary.find("PFC on priorities 3 here, none there"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].summary.find("ECN at the notification point for priority 3 on here, off there"), std::string::npos)
        << f[0].summary;
    EXPECT_NE(f[0].action.find("dcb pfc show dev enp1s0f0np0"), std::string::npos) << f[0].action;
    EXPECT_EQ(f[0].action.find("MTU (9000)"), std::string::npos) << "no MTU advice without an MTU difference";
    EXPECT_EQ(f[0].details.at("peer_pfc_priorities"), "none");
    EXPECT_EQ(f[0].details.at("local_ecn_np"), "on");

    // RoCE at another priority there: said; ECN is then not compared priority against priority.
    theirs.pfc_enabled = 0x08;
    theirs.roce_priority = 0;
    f = judge("peer_config_mismatch");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].summary.find("RoCE v2 at priority 3 here, 0 there"), std::string::npos) << f[0].summary;
    EXPECT_EQ(f[0].summary.find("ECN"), std::string::npos) << f[0].summary;
}

// A rail named by its local address alone is compared too, on the netdev its GID is on: the
// rule skipped every rail without local_interface once.
TEST_F(ProbeRules, PeerConfigMismatchOnARailNamedByAddress) {
    c.peers[0].rails = {{"rail0", "", "10.1.0.1", "10.1.0.2", "", ""}};
    PeerHello h;
    h.interfaces["enp1s0f0np0"] = PeerInterfaceInfo{.mtu = 1500, .gid_types = {"RoCE v2"}};
    h.address_interface["10.1.0.2"] = "enp1s0f0np0";
    book.peers["spark-b"] = PeerState{.name = "spark-b", .hello_ok = true, .hello = h};
    auto f = judge("peer_config_mismatch");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0");
    EXPECT_EQ(f[0].details.at("local_mtu"), "9000");
    EXPECT_EQ(f[0].details.at("peer_mtu"), "1500");
}

}  // namespace

// Issue 10: a failure that points at a peer is reported, but does not make this node
// unhealthy (node health checks drain nodes on --once's exit code and health_status).
TEST_F(ProbeRules, PeerScopedAlertsDoNotMakeThisNodeUnhealthy) {
    book.add(result(ProbeKind::tcp_lat, false, "timeout"));
    book.add(result(ProbeKind::tcp_bw, false, "timeout"));
    s.probes = std::make_shared<const ProbeBook>(book);
    // This synthetic node is otherwise far from healthy (no port state, no carrier): judge it
    // by this one rule only.
    for (const auto& id : all_rule_ids())
        if (id != "peer_unreachable") c.rules[id].enabled = false;
    AlertTracker t;
    t.update(evaluate_rules(s, c), c, Clock::now());
    s.alerts = t.active();
    auto it = std::find_if(s.alerts.begin(), s.alerts.end(),
                           [](const Alert& a) { return a.rule == "peer_unreachable"; });
    ASSERT_NE(it, s.alerts.end());
    EXPECT_EQ(it->state, AlertState::firing);
    EXPECT_EQ(it->severity, Severity::critical);
    EXPECT_EQ(overall_health(s), Health::healthy) << "only node-scoped alerts judge this node";
}

// ---------------------------------------------------------------- every failure has a verdict

namespace {

const std::vector<std::string> kPathRules = {"peer_unreachable", "rail_unreachable", "rdma_fails_tcp_works",
                                             "tcp_fails_rdma_works", "probe_failed"};

// Whether a finding names this peer's rail: by its object ("spark-b/rail0", "spark-b/rail0:tcp_lat"),
// or, for a peer-wide verdict, by the rails its details list.
bool names_rail(const Finding& f, const std::string& peer, const std::string& rail) {
    if (f.object.rfind(peer + "/" + rail, 0) == 0) {
        const char next = f.object.size() > peer.size() + 1 + rail.size() ? f.object[peer.size() + 1 + rail.size()] : 0;
        return next == 0 || next == ':';
    }
    if (f.object != peer) return false;
    auto it = f.details.find("rails");
    if (it == f.details.end()) return false;
    const std::string& v = it->second;
    size_t pos = 0;
    while (pos <= v.size()) {
        size_t end = v.find(", ", pos);
        if (v.substr(pos, end == std::string::npos ? std::string::npos : end - pos) == rail) return true;
        if (end == std::string::npos) break;
        pos = end + 2;
    }
    return false;
}

}  // namespace

// Two rails x three kinds (TCP latency, RDMA latency, RDMA bandwidth), each pass, fail or
// absent: 729 books, under reachability failures and under other reasons. Every rail with a
// failing probe is named by at least one alert; a rail whose probes pass is named by none.
TEST_F(ProbeRules, EveryCombinationOfRailAndKindFailuresHasAVerdict) {
    c.peers[0].rails.push_back({"rail1", "", "10.2.0.1", "10.2.0.2", "", ""});
    const std::vector<std::string> rails = {"rail0", "rail1"};
    const std::vector<ProbeKind> kinds = {ProbeKind::tcp_lat, ProbeKind::rdma_write_lat, ProbeKind::rdma_write_bw};
    const size_t cells = rails.size() * kinds.size();
    size_t combos = 0;
    for (bool reachability : {true, false}) {
        size_t total = 1;
        for (size_t i = 0; i < cells; ++i) total *= 3;
        for (size_t code = 0; code < total; ++code) {
            book = ProbeBook{};
            std::map<std::string, bool> rail_fails, rail_passes;
            size_t rest = code;
            std::string label;
            for (size_t i = 0; i < cells; ++i, rest /= 3) {
                const auto& rail = rails[i / kinds.size()];
                const ProbeKind kind = kinds[i % kinds.size()];
                const int state = static_cast<int>(rest % 3);  // 0 absent, 1 pass, 2 fail
                label += rail + ":" + to_string(kind) + "=" +
                         (state == 0   ? "absent"
                          : state == 1 ? "pass"
                                       : "fail") +
                         " ";
                if (state == 0) continue;
                const std::string why = state == 1          ? ""
                                        : is_tcp_kind(kind) ? (reachability ? "timeout" : "auth_refused")
                                                            : (reachability ? "rdma_no_ack" : "gid_mismatch");
                auto r = result(kind, state == 1, why, rail);
                r.started = TimePoint{} + std::chrono::seconds(i);
                book.add(r);
                (state == 1 ? rail_passes : rail_fails)[rail] = true;
            }
            ++combos;
            std::vector<Finding> found;
            for (const auto& rule : kPathRules)
                for (auto& f : judge(rule)) found.push_back(std::move(f));
            for (const auto& f : found) EXPECT_EQ(f.object.rfind("spark-b", 0), 0u) << label << f.object;
            if (rail_fails.empty()) {
                EXPECT_TRUE(found.empty()) << label << "nothing failed, yet " << found.front().rule;
                continue;
            }
            for (const auto& rail : rails) {
                const bool named = std::any_of(found.begin(), found.end(),
                                               [&](const Finding& f) { return names_rail(f, "spark-b", rail); });
                if (rail_fails.count(rail))
                    EXPECT_TRUE(named) << label << "(reachability " << reachability << "): " << rail << " unnamed";
                else
                    EXPECT_FALSE(named) << label << "(reachability " << reachability << "): " << rail
                                        << " passes or was not probed, yet named";
            }
        }
    }
    EXPECT_EQ(combos, 2u * 729u);
}

// The gap found in the test bed: every probe over one rail fails while the other rail passes.
TEST_F(ProbeRules, ARailDownToAPeerIsNamedWhileItsOtherRailPasses) {
    c.peers[0].rails.push_back({"rail1", "", "10.2.0.1", "10.2.0.2", "", ""});
    book.add(result(ProbeKind::tcp_lat, false, "timeout", "rail0"));
    book.add(result(ProbeKind::rdma_write_lat, false, "rdma_no_ack", "rail0"));
    book.add(result(ProbeKind::tcp_lat, true, "", "rail1"));
    book.add(result(ProbeKind::rdma_write_lat, true, "", "rail1"));
    auto f = judge("rail_unreachable");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0");
    EXPECT_EQ(f[0].severity, Severity::critical);
    EXPECT_NE(f[0].summary.find("rail0"), std::string::npos) << f[0].summary;
    EXPECT_TRUE(judge("peer_unreachable").empty());
    EXPECT_TRUE(judge("rdma_fails_tcp_works").empty());
}

// Where lldpd hears a switch on the rail's netdev, a path verdict names that switch and port.
TEST_F(ProbeRules, ARailVerdictNamesTheSwitchAndPortLldpHears) {
    c.peers[0].rails.push_back({"rail1", "", "10.2.0.1", "10.2.0.2", "", ""});
    book.add(result(ProbeKind::tcp_lat, false, "timeout", "rail0"));
    book.add(result(ProbeKind::tcp_lat, true, "", "rail1"));
    s.links[0].lldp = LldpNeighbor{.system_name = "leaf-07", .port_id = "Ethernet12", .port_id_subtype = "ifname"};
    auto f = judge("rail_unreachable");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].details["switch"], "leaf-07");
    EXPECT_EQ(f[0].details["switch_port"], "Ethernet12");
    EXPECT_NE(f[0].summary.find("(enp1s0f0np0 is cabled to leaf-07 port Ethernet12, as LLDP says)"), std::string::npos)
        << f[0].summary;
    // A peer-wide verdict has no one rail, so no one switch.
    book.add(result(ProbeKind::tcp_lat, false, "timeout", "rail1"));
    auto p = judge("peer_unreachable");
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].details.count("switch"), 0u);
}

TEST_F(ProbeRules, TcpFailsWhileRdmaWorksOnARail) {
    book.add(result(ProbeKind::rdma_write_lat, true));
    auto failed = result(ProbeKind::tcp_lat, false, "connection_refused");
    failed.detail = "10.0.0.2:9880";
    book.add(failed);
    auto f = judge("tcp_fails_rdma_works");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].summary.find("fails (connection_refused: 10.0.0.2:9880)"), std::string::npos) << f[0].summary;
    EXPECT_EQ(f[0].object, "spark-b/rail0:tcp_lat");
    EXPECT_TRUE(judge("peer_unreachable").empty());
}

// A pass older than a failure does not mask it: the bandwidth kind passed long ago, the latency
// kind of the same family fails now, and TCP fails now: the peer is unreachable.
TEST_F(ProbeRules, AnOlderPassDoesNotMaskANewerFailure) {
    auto bw = result(ProbeKind::rdma_write_bw, true);
    bw.started = TimePoint{} + std::chrono::seconds(10);
    book.add(bw);
    auto lat = result(ProbeKind::rdma_write_lat, false, "rdma_no_ack");
    lat.started = TimePoint{} + std::chrono::seconds(600);
    book.add(lat);
    auto tcp = result(ProbeKind::tcp_lat, false, "timeout");
    tcp.started = TimePoint{} + std::chrono::seconds(601);
    book.add(tcp);
    auto f = judge("peer_unreachable");
    ASSERT_EQ(f.size(), 1u) << "an RDMA bandwidth pass 10 minutes old masked the peer going away";
    EXPECT_EQ(f[0].details.at("rails"), "rail0");
    // A TCP pass older than its failure does not make RDMA "fail while TCP works" either.
    book = ProbeBook{};
    auto tcp_bw = result(ProbeKind::tcp_bw, true);
    tcp_bw.started = TimePoint{} + std::chrono::seconds(10);
    book.add(tcp_bw);
    book.add(tcp);
    book.add(lat);
    EXPECT_TRUE(judge("rdma_fails_tcp_works").empty());
    EXPECT_EQ(judge("peer_unreachable").size(), 1u);
}

TEST_F(ProbeRules, AKindFailingForAnotherReasonIsProbeFailed) {
    auto ok = result(ProbeKind::rdma_write_lat, true);
    ok.started = TimePoint{} + std::chrono::seconds(20);
    book.add(ok);
    auto bw = result(ProbeKind::rdma_write_bw, false, "rdma_receiver_not_ready");
    bw.started = TimePoint{} + std::chrono::seconds(10);
    book.add(bw);
    book.add(result(ProbeKind::tcp_lat, true));
    auto f = judge("probe_failed");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0:rdma_write_bw");
    EXPECT_EQ(f[0].details.at("reason"), "rdma_receiver_not_ready");
    EXPECT_NE(f[0].action.find("Read the probe's detail"), std::string::npos) << f[0].action;
}

// Where the reason alone says what to do, the verdict says it: a peer of another rocewatch
// version (its hello failed), a peer that refused our token.
TEST_F(ProbeRules, AVersionMismatchOrARefusedTokenSaysWhatToDo) {
    auto old = result(ProbeKind::tcp_lat, false, "version_mismatch");
    old.detail = "hello to spark-b (spark-b:9879) failed: version_mismatch (spark-b runs rocewatch 0.9.0, peer "
                 "protocol 1; this node speaks 2)";
    book.add(old);
    auto f = judge("probe_failed");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].summary.find("spark-b runs rocewatch 0.9.0, peer protocol 1"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].action.find("Run the same rocewatch version here and on spark-b"), std::string::npos) << f[0].action;
    book = {};
    book.add(result(ProbeKind::tcp_lat, false, "auth_refused"));
    f = judge("probe_failed");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].action.find("spark-b refused this node's peer token"), std::string::npos) << f[0].action;
}

// ---------------------------------------------------------------- cabling between nodes

namespace {

// Two rails, each in its own subnet; the peer's hello names its NICs' MACs and ARP settings.
struct Cabling : ProbeRules {
    void SetUp() override {
        ProbeRules::SetUp();
        c.peers[0].rails.push_back({"rail1", "enp1s0f1np1", "10.2.0.1", "10.2.0.2", "", ""});
        s.links[0].addresses = {{.family = AF_INET, .address = "10.1.0.1", .prefixlen = 24, .scope = "global"}};
        s.links.push_back(Link{.ifindex = 3,
                               .name = "enp1s0f1np1",
                               .mtu = 9000,
                               .addresses = {{.family = AF_INET, .address = "10.2.0.1", .prefixlen = 24}}});
        PeerHello h;
        h.interfaces["p0"] = PeerInterfaceInfo{
            .mtu = 9000, .mac = "aa:00:00:00:00:01", .cidrs = {"10.1.0.2/24"}, .arp_ignore = 0, .arp_announce = 0};
        h.interfaces["p1"] = PeerInterfaceInfo{
            .mtu = 9000, .mac = "aa:00:00:00:00:02", .cidrs = {"10.2.0.2/24"}, .arp_ignore = 0, .arp_announce = 0};
        h.address_interface = {{"10.1.0.2", "p0"}, {"10.2.0.2", "p1"}};
        book.peers["spark-b"] = PeerState{.name = "spark-b", .hello_ok = true, .hello = h};
    }
    PeerHello& hello() { return *book.peers["spark-b"].hello; }
};

}  // namespace

TEST_F(Cabling, RightNeighboursAreSilent) {
    s.neighbours = {{"10.1.0.2", "aa:00:00:00:00:01", "enp1s0f0np0"}, {"10.2.0.2", "AA:00:00:00:00:02", "enp1s0f1np1"}};
    for (const char* rule : {"rails_crossed", "arp_answered_by_wrong_nic", "rail_subnet_mismatch"})
        EXPECT_TRUE(judge(rule).empty()) << rule;
}

// The peer's rail-1 NIC answers on our rail 0 (and the other way round): the cables are crossed.
TEST_F(Cabling, RailsCrossed) {
    s.neighbours = {{"10.1.0.2", "aa:00:00:00:00:02", "enp1s0f0np0"}, {"10.2.0.2", "aa:00:00:00:00:01", "enp1s0f1np1"}};
    auto f = judge("rails_crossed");
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].object, "spark-b/rail0");
    EXPECT_EQ(f[0].severity, Severity::critical);
    EXPECT_NE(f[0].summary.find("p1 (rail rail1)"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].summary.find("crossed"), std::string::npos) << f[0].summary;
    EXPECT_EQ(f[0].details.at("answering_interface"), "p1");
    EXPECT_EQ(f[1].object, "spark-b/rail1");
    EXPECT_TRUE(judge("arp_answered_by_wrong_nic").empty());

    // RDMA failing while TCP works is then not "the RDMA set-up".
    book.add(result(ProbeKind::tcp_lat, true));
    book.add(result(ProbeKind::rdma_write_lat, false, "rdma_no_ack"));
    auto r = judge("rdma_fails_tcp_works");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].details.at("cause"), "rails_crossed");
    EXPECT_EQ(r[0].summary.find("RDMA set-up"), std::string::npos) << r[0].summary;
}

// Both of the peer's NICs in one subnet, arp_ignore=0: the wrong one answered for the rail's address.
TEST_F(Cabling, ArpAnsweredByWrongNicSaysWhatToSet) {
    hello().interfaces["p1"].cidrs = {"10.1.0.12/24"};
    hello().interfaces["p1"].rp_filter = 1;
    hello().address_interface = {{"10.1.0.2", "p0"}, {"10.1.0.12", "p1"}};
    s.neighbours = {{"10.1.0.2", "aa:00:00:00:00:02", "enp1s0f0np0"}};
    auto f = judge("arp_answered_by_wrong_nic");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail0");
    EXPECT_NE(f[0].summary.find("arp_ignore=0"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].summary.find("rp_filter=1"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].action.find("arp_ignore=1"), std::string::npos) << f[0].action;
    EXPECT_NE(f[0].action.find("arp_announce=2"), std::string::npos) << f[0].action;
    EXPECT_EQ(f[0].details.at("peer_arp_ignore"), "0");
    EXPECT_TRUE(judge("rails_crossed").empty());
    // A neighbour learnt on another of our links is not this rail's.
    s.neighbours[0].link = "enp1s0f1np1";
    EXPECT_TRUE(judge("arp_answered_by_wrong_nic").empty());
}

TEST_F(Cabling, PeerAddressOnAnotherSubnet) {
    c.peers[0].rails[1].remote_address = "10.3.0.2";
    auto f = judge("rail_subnet_mismatch");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].object, "spark-b/rail1");
    EXPECT_NE(f[0].summary.find("10.2.0.1/24"), std::string::npos) << f[0].summary;
}

// An older peer says no MAC: nothing to compare, nothing said.
TEST_F(Cabling, APeerWithoutMacsIsNotJudged) {
    hello().interfaces["p0"].mac.clear();
    s.neighbours = {{"10.1.0.2", "aa:00:00:00:00:02", "enp1s0f0np0"}};
    EXPECT_TRUE(judge("rails_crossed").empty());
}
