// Probe rules on synthetic probe books (the e2e and VM suites raise them from real probes).
#include <gtest/gtest.h>

#include <algorithm>
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
    book.add(result(ProbeKind::rdma_write_lat, false, "gid_mismatch"));
    auto f = judge("rdma_fails_tcp_works");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].severity, Severity::critical);
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
