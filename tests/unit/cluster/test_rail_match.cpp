// Automatic rail matching from a peer's hello: tables of layouts, the DGX Spark pair and its traps included.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/cluster/rail_match.hpp"
#include "tests/unit/rules/spark_node.hpp"

namespace rocewatch {
namespace {

struct Iface {
    std::string name;
    std::vector<PeerPrefix> prefixes;
    bool rdma = true;
    std::string device;
};

PeerHello hello(const std::vector<Iface>& ifaces, const std::vector<PeerRail>& rails = {}) {
    PeerHello h;
    h.protocol_version = 1;
    for (const auto& i : ifaces) {
        PeerInterfaceInfo info;
        info.mtu = 9000;
        info.prefixes = i.prefixes;
        info.rdma_device = i.device;
        if (i.rdma) info.gid_types = {"IB/RoCE v1", "RoCE v2"};
        for (const auto& p : i.prefixes) h.address_interface[p.address] = i.name;
        h.interfaces[i.name] = info;
    }
    h.rails = rails;
    return h;
}

// The far node of the DGX Spark pair: the same layout at .12.
PeerHello spark_peer() {
    return hello({{"lo", {{"127.0.0.1", 8}}, false},
                  {"enP7s7", {{"10.0.0.6", 24}}, false},
                  {"enp1s0f0np0", {{"192.168.100.12", 24}}, true, "rocep1s0f0"},
                  {"enp1s0f1np1", {{"192.168.200.12", 24}}, true, "rocep1s0f1"},
                  {"enP2p1s0f0np0", {}, true, "roceP2p1s0f0"}},
                 {{"rocep1s0f0", "rocep1s0f0", "enp1s0f0np0"}, {"rocep1s0f1", "rocep1s0f1", "enp1s0f1np1"}});
}

TEST(LocalRails, SparkNodeTakesEveryDeviceButTheIgnoredOneWithItsNetdevAndAddress) {
    auto rails = local_rails(testing::healthy_spark(), testing::spark_config());
    ASSERT_EQ(rails.size(), 2u);
    EXPECT_EQ(rails[0].name, "rocep1s0f0");
    EXPECT_EQ(rails[0].netdev, "enp1s0f0np0");
    ASSERT_EQ(rails[0].prefixes.size(), 1u);
    EXPECT_EQ(rails[0].prefixes[0], (PeerPrefix{"192.168.100.11", 24}));
    EXPECT_EQ(rails[1].name, "rocep1s0f1");
}

TEST(LocalRails, ExpectRailsOrderAndClusterRailsNetdevs) {
    auto s = testing::healthy_spark();
    auto c = testing::spark_config();
    c.expect.rails = {"rocep1s0f1", "rocep1s0f0"};
    auto rails = local_rails(s, c);
    ASSERT_EQ(rails.size(), 2u);
    EXPECT_EQ(rails[0].name, "rocep1s0f1");
    c.cluster.rails = {"enP7s7"};
    rails = local_rails(s, c);
    ASSERT_EQ(rails.size(), 1u);
    EXPECT_EQ(rails[0].name, "enP7s7");
    EXPECT_EQ(rails[0].device, "");
    EXPECT_EQ(rails[0].prefixes[0].address, "10.0.0.5");
}

TEST(RailMatch, SparkPairPairsEachRailWithThePeersInterfaceInItsSubnet) {
    auto m = match_rails(local_rails(testing::healthy_spark(), testing::spark_config()), spark_peer(),
                         local_addresses(testing::healthy_spark()));
    ASSERT_EQ(m.matched.size(), 2u);
    EXPECT_TRUE(m.unmatched.empty());
    EXPECT_EQ(m.matched[0].rail, "rocep1s0f0");
    EXPECT_EQ(m.matched[0].local_interface, "enp1s0f0np0");
    EXPECT_EQ(m.matched[0].local_address, "192.168.100.11");
    EXPECT_EQ(m.matched[0].remote_interface, "enp1s0f0np0");
    EXPECT_EQ(m.matched[0].remote_address, "192.168.100.12");
    EXPECT_EQ(m.matched[0].remote_device, "rocep1s0f0");
    EXPECT_EQ(m.matched[0].reason, "same subnet 192.168.100.0/24");
    EXPECT_EQ(m.matched[1].remote_address, "192.168.200.12");
    EXPECT_EQ(m.matched[1].reason, "same subnet 192.168.200.0/24");
    auto rc = rail_config(m.matched[1]);
    EXPECT_EQ(rc.name, "rocep1s0f1");
    EXPECT_EQ(rc.local_device, "rocep1s0f1");
    EXPECT_EQ(rc.remote_device, "rocep1s0f1");
}

struct Case {
    const char* name;
    std::vector<LocalRail> local;
    PeerHello peer;
    // Per local rail: the peer interface it pairs with, or "" when unmatched.
    std::vector<std::string> want;
    // A piece of each rail's reason.
    std::vector<std::string> why;
};

LocalRail lr(const std::string& name, const std::string& addr, int len) {
    return {name, "", name, addr.empty() ? std::vector<PeerPrefix>{} : std::vector<PeerPrefix>{{addr, len}}};
}

TEST(RailMatch, Table) {
    const std::vector<Case> cases = {
        {"second interface in the same subnet: the peer's rail wins",
         {lr("r0", "192.168.100.11", 24)},
         hello({{"ethX", {{"192.168.100.13", 24}}}, {"r0", {{"192.168.100.12", 24}}}}, {{"r0", "", "r0"}}),
         {"r0"},
         {"ethX, r0) r0 is its rail"}},
        {"second interface in the same subnet, no rails list: the one with RoCE GIDs wins",
         {lr("r0", "192.168.100.11", 24)},
         hello({{"ethX", {{"192.168.100.13", 24}}, false}, {"r0", {{"192.168.100.12", 24}}}}),
         {"r0"},
         {"only r0 has RoCE GIDs"}},
        {"second interface in the same subnet, nothing tells them apart: no guess",
         {lr("r0", "192.168.100.11", 24)},
         hello({{"ethX", {{"192.168.100.13", 24}}}, {"r0", {{"192.168.100.12", 24}}}}),
         {""},
         {"ambiguous: the peer has 2 interfaces in 192.168.100.0/24"}},
        {"all rails in one subnet: by rails order on both sides",
         {lr("a", "10.0.1.1", 16), lr("b", "10.0.2.1", 16)},
         hello({{"p1", {{"10.0.2.2", 16}}}, {"p0", {{"10.0.1.2", 16}}}}, {{"x0", "", "p0"}, {"x1", "", "p1"}}),
         {"p0", "p1"},
         {"rails share subnet 10.0.0.0/16: the 1st", "the 2nd in rails order"}},
        {"all rails in one subnet, the peer's order differs from its names: order wins",
         {lr("a", "10.0.1.1", 16), lr("b", "10.0.2.1", 16)},
         hello({{"p1", {{"10.0.2.2", 16}}}, {"p0", {{"10.0.1.2", 16}}}}, {{"x1", "", "p1"}, {"x0", "", "p0"}}),
         {"p1", "p0"},
         {"1st", "2nd"}},
        {"all rails in one subnet, the peer lists none: unmatched",
         {lr("a", "10.0.1.1", 16), lr("b", "10.0.2.1", 16)},
         hello({{"p1", {{"10.0.2.2", 16}}}, {"p0", {{"10.0.1.2", 16}}}}),
         {"", ""},
         {"does not list its rails", "does not list its rails"}},
        {"all rails in one subnet, the peer has fewer there",
         {lr("a", "10.0.1.1", 16), lr("b", "10.0.2.1", 16)},
         hello({{"p0", {{"10.0.1.2", 16}}}, {"p1", {{"10.1.0.2", 16}}}}, {{"x0", "", "p0"}, {"x1", "", "p1"}}),
         {"p0", ""},
         {"1st", "the 2nd here, the peer has 1 there"}},
        {"a hello that claims this rail's own address is not the peer: this node would probe itself",
         {lr("a", "10.77.1.1", 24)},
         hello({{"p0", {{"10.77.1.1", 24}}}}),
         {""},
         {"no interface of the peer in 10.77.1.0/24 (its hello claims 10.77.1.1, which is this node's"}},
        {"nor the subnet's network or broadcast address",
         {lr("a", "10.0.1.1", 24), lr("b", "10.0.2.1", 24)},
         hello({{"p0", {{"10.0.1.255", 24}}}, {"p1", {{"10.0.2.0", 24}}}}),
         {"", ""},
         {"claims 10.0.1.255", "claims 10.0.2.0"}},
        {"an interface with our address does not make a real one ambiguous",
         {lr("a", "10.0.1.1", 24)},
         hello({{"p0", {{"10.0.1.1", 24}}}, {"p1", {{"10.0.1.2", 24}}}}),
         {"p1"},
         {"same subnet 10.0.1.0/24"}},
        {"a /31 has no network or broadcast address: its other end is the peer",
         {lr("a", "10.0.1.0", 31)},
         hello({{"p0", {{"10.0.1.1", 31}}}}),
         {"p0"},
         {"same subnet 10.0.1.0/31"}},
        {"no peer interface in the subnet",
         {lr("a", "10.0.1.1", 24)},
         hello({{"p0", {{"10.0.2.2", 24}}}}),
         {""},
         {"no interface of the peer in 10.0.1.0/24"}},
        {"rail without an address",
         {lr("a", "", 0)},
         hello({{"p0", {{"10.0.2.2", 24}}}}),
         {""},
         {"no IPv4 address on a"}},
        {"link-local addresses say nothing",
         {lr("a", "169.254.1.1", 16)},
         hello({{"p0", {{"169.254.7.7", 16}}}}),
         {""},
         {"no IPv4 address on a"}},
        {"a peer that sends no prefixes (an older hello) matches nothing",
         {lr("a", "10.0.1.1", 24)},
         [] {
             PeerHello h;
             h.interfaces["p0"] = {};
             h.address_interface["10.0.1.2"] = "p0";
             return h;
         }(),
         {""},
         {"no interface of the peer"}},
        {"the peer's prefix length does not matter, ours does",
         {lr("a", "10.0.1.1", 24)},
         hello({{"p0", {{"10.0.1.2", 16}}}}),
         {"p0"},
         {"same subnet 10.0.1.0/24"}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto m = match_rails(c.local, c.peer, {});
        ASSERT_EQ(m.matched.size() + m.unmatched.size(), c.local.size());
        for (size_t i = 0; i < c.local.size(); ++i) {
            const auto& rail = c.local[i].name;
            auto hit = std::ranges::find(m.matched, rail, &RailMatch::rail);
            auto miss = std::ranges::find(m.unmatched, rail, &RailMiss::rail);
            if (c.want[i].empty()) {
                ASSERT_NE(miss, m.unmatched.end()) << rail;
                EXPECT_NE(miss->reason.find(c.why[i]), std::string::npos) << miss->reason;
            } else {
                ASSERT_NE(hit, m.matched.end()) << rail;
                EXPECT_EQ(hit->remote_interface, c.want[i]);
                EXPECT_NE(hit->reason.find(c.why[i]), std::string::npos) << hit->reason;
            }
        }
    }
}

// An address of any of this node's links, not only its rails', is not the peer's either: a
// hello naming this node's management address in a rail's subnet is refused too.
TEST(RailMatch, AnAddressOfAnyLocalLinkIsNotThePeers) {
    const std::vector<LocalRail> local = {lr("a", "10.0.1.1", 24)};
    const auto peer = hello({{"p0", {{"10.0.1.9", 24}}}});
    EXPECT_EQ(match_rails(local, peer, {}).matched.size(), 1u);
    const auto m = match_rails(local, peer, {"10.0.1.9", "fe80::1"});
    EXPECT_TRUE(m.matched.empty());
    ASSERT_EQ(m.unmatched.size(), 1u);
    EXPECT_NE(m.unmatched[0].reason.find("claims 10.0.1.9"), std::string::npos) << m.unmatched[0].reason;
}

TEST(LocalAddresses, EveryAddressOfEveryLink) {
    const auto own = local_addresses(testing::healthy_spark());
    EXPECT_TRUE(own.count("192.168.100.11"));
    EXPECT_TRUE(own.count("10.0.0.5"));
}

}  // namespace
}  // namespace rocewatch
