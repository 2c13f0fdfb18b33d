// Verdicts that fit the NIC: the fixture trees of each family (iWARP, InfiniBand, Omni-Path)
// read by the sysfs reader and judged by the rules, as the daemon does.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "daemon/model/rdma_port.hpp"
#include "daemon/rules/rules.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"
#include "test_env.hpp"

using namespace rocewatch;

namespace {

SysfsReadResult read_tree(const std::string& name) {
    return read_rdma_devices(std::filesystem::path(rocewatch::testing::fixtures_dir()) / "sysfs" / name);
}

Link up_link(int ifindex, const std::string& name, uint32_t mtu, const std::string& ipv4) {
    Link l{.ifindex = ifindex, .name = name, .operstate = "up", .admin_up = true, .carrier = true, .mtu = mtu};
    if (!ipv4.empty()) l.addresses.push_back({.family = AF_INET, .address = ipv4, .prefixlen = 24, .scope = "global"});
    return l;
}

std::string dump(const std::vector<Finding>& all) {
    std::string s;
    for (const auto& f : all) s += "\n  " + f.rule + " " + f.object + ": " + f.summary + " | " + f.action;
    return s;
}

std::vector<Finding> of_rule(const std::vector<Finding>& all, const std::string& rule) {
    std::vector<Finding> out;
    std::copy_if(all.begin(), all.end(), std::back_inserter(out), [&](const Finding& f) { return f.rule == rule; });
    return out;
}

// An X722 iWARP node as the daemon sees it: i40iw0 on eno1 (10.0.0.5/24, MTU 9000), listed
// as a rail.
Snapshot iwarp_node() {
    Snapshot s;
    s.devices = read_tree("i40iw-iwarp").devices;
    s.links.push_back(up_link(2, "eno1", 9000, "10.0.0.5"));
    return s;
}

}  // namespace

TEST(NicFamily, FromNodeTypeAndLinkLayer) {
    RdmaDevice d;
    RdmaPort p;
    p.link_layer = "Ethernet";
    d.node_type = "1: CA";
    EXPECT_EQ(nic_family(d, p), NicFamily::roce);
    d.node_type = "4: RNIC";
    EXPECT_EQ(nic_family(d, p), NicFamily::iwarp);
    d.node_type = "5: usNIC";
    EXPECT_EQ(nic_family(d, p), NicFamily::usnic);
    d.node_type = "6: usNIC UDP";
    EXPECT_EQ(nic_family(d, p), NicFamily::usnic);
    d.node_type = "";  // unreadable: judged by the link layer, as before node_type was read
    EXPECT_EQ(nic_family(d, p), NicFamily::roce);
    p.link_layer = "InfiniBand";
    d.node_type = "1: CA";
    EXPECT_EQ(nic_family(d, p), NicFamily::infiniband);
    EXPECT_EQ(node_type_number("4: RNIC"), 4);
    EXPECT_FALSE(node_type_number("RNIC"));
    EXPECT_FALSE(node_type_number(""));
}

TEST(NicFamily, IwarpFixtureIsReadAsIwarp) {
    const auto r = read_tree("i40iw-iwarp");
    ASSERT_EQ(r.devices.size(), 1u);
    const auto& d = r.devices.front();
    EXPECT_EQ(d.name, "i40iw0");
    EXPECT_EQ(d.node_type, "4: RNIC");
    ASSERT_EQ(d.ports.size(), 1u);
    EXPECT_EQ(d.ports[0].link_layer, "Ethernet");
    EXPECT_EQ(d.ports[0].netdev, "eno1");
    EXPECT_EQ(nic_family(d, d.ports[0]), NicFamily::iwarp);
    EXPECT_FALSE(d.ports[0].roce_v2_ipv4_gid_index);
}

// The finding: an iWARP port with an IPv4 address got a critical no_roce_v2_gid and RoCE
// advice. iWARP connects over TCP (iw_cm); GID 0 is the MAC and there is no RoCE v2 GID.
TEST(NicFamily, IwarpPortGetsNoRoceVerdicts) {
    Config c;
    c.expect.rails = {"i40iw0"};
    const auto all = evaluate_rules(iwarp_node(), c);
    EXPECT_TRUE(all.empty()) << dump(all);
    for (const auto& f : all) EXPECT_EQ(f.action.find("RoCE"), std::string::npos) << f.rule << ": " << f.action;
}

// The checks that fit iWARP still run: its netdev is held to the up and MTU rules.
TEST(NicFamily, IwarpPortKeepsTheNetdevChecks) {
    Snapshot s = iwarp_node();
    s.links[0].mtu = 1500;
    s.links[0].carrier = false;
    Config c;
    c.expect.mtu = 9000;
    const auto all = evaluate_rules(s, c);
    EXPECT_EQ(of_rule(all, "mtu_low").size(), 1u) << dump(all);
    EXPECT_EQ(of_rule(all, "netdev_down").size(), 1u) << dump(all);
    EXPECT_TRUE(of_rule(all, "no_roce_v2_gid").empty()) << dump(all);
}

// ---------------------------------------------------------------- one definition of up

TEST(PortUp, ActiveAndLinkUpOnly) {
    RdmaPort p;
    EXPECT_FALSE(port_up(p)) << "neither readable: unknown";
    p.state = 4;
    p.state_name = "ACTIVE";
    EXPECT_EQ(port_up(p), true) << "phys_state unreadable is not held against it";
    p.phys_state = 5;
    EXPECT_EQ(port_up(p), true);
    p.phys_state = 4;
    EXPECT_EQ(port_up(p), false);
    p.phys_state = 5;
    p.state = 2;
    EXPECT_EQ(port_up(p), false);
    // A state that cannot be read (a garbled file) is not taken for ACTIVE.
    p.state.reset();
    p.state_name.clear();
    EXPECT_FALSE(port_up(p).has_value()) << "LinkUp, state unknown: unknown";
    p.phys_state = 3;
    EXPECT_EQ(port_up(p), false) << "Disabled is down whatever the state";
}

TEST(PortUp, KernelPhysStateNames) {
    EXPECT_STREQ(kernel_phys_state_name(1), "Sleep");
    EXPECT_STREQ(kernel_phys_state_name(2), "Polling");
    EXPECT_STREQ(kernel_phys_state_name(3), "Disabled");
    EXPECT_STREQ(kernel_phys_state_name(4), "PortConfigurationTraining");
    EXPECT_STREQ(kernel_phys_state_name(5), "LinkUp");
    EXPECT_STREQ(kernel_phys_state_name(6), "LinkErrorRecovery");
    EXPECT_STREQ(kernel_phys_state_name(7), "Phy Test");
    EXPECT_STREQ(kernel_phys_state_name(9), "");
    RdmaPort p;
    p.phys_state = 3;
    p.phys_state_name = "Disabled";
    EXPECT_EQ(phys_state_words(p), "phys_state 3: Disabled");
    p.phys_state = 4;
    p.phys_state_name = "ACTIVE";  // procfs's mlx5 fixture: the code is what the kernel means
    EXPECT_EQ(phys_state_words(p), "phys_state 4: PortConfigurationTraining");
    p.state = 4;
    p.state_name = "ACTIVE";
    EXPECT_EQ(state_words(p), "state 4: ACTIVE");
    EXPECT_EQ(state_words(RdmaPort{}), "state ?");
}

// The finding: port_down fired on state ACTIVE with phys_state 4 while the up views said 1,
// and its summary said "physical state ACTIVE". Now the rule goes by port_up, which the
// metric and REST use too, and names the kernel's code and name.
TEST(PortUp, PortDownSaysTheKernelsCodeAndName) {
    Snapshot s = iwarp_node();
    auto& p = s.devices.at(0).ports.at(0);
    p.phys_state = 4;
    p.phys_state_name = "ACTIVE";
    ASSERT_EQ(port_up(p), false);
    const auto all = evaluate_rules(s, Config{});
    const auto down = of_rule(all, "port_down");
    ASSERT_EQ(down.size(), 1u) << dump(all);
    EXPECT_NE(down[0].summary.find("state 4: ACTIVE, phys_state 4: PortConfigurationTraining"), std::string::npos)
        << down[0].summary;
    EXPECT_EQ(down[0].details.at("phys_state"), "phys_state 4: PortConfigurationTraining");
}

// ---------------------------------------------------------------- InfiniBand

namespace {

// The mlx4 fixture: two ACTIVE QDR InfiniBand ports, no netdev.
Snapshot ib_node() {
    Snapshot s;
    s.devices = read_tree("mlx4-ib").devices;
    return s;
}

RdmaPort& ib_port(Snapshot& s, uint32_t n) { return s.devices.at(0).ports.at(n - 1); }

}  // namespace

TEST(InfiniBand, IbFactsAreRead) {
    const auto s = ib_node();
    const auto& p = s.devices.at(0).ports.at(0);
    EXPECT_EQ(p.lid, 3u);
    EXPECT_EQ(p.sm_lid, 1u);
    EXPECT_EQ(p.sm_sl, 0u);
    EXPECT_EQ(p.cap_mask, 0x02514868u);
}

// The finding: InfiniBand ports got Ethernet advice with a literal <netdev> (`ethtool
// <netdev>`, `ethtool -m <netdev>`). Break every port rule on an IB port: each action must
// speak InfiniBand.
TEST(InfiniBand, AdviceSpeaksInfiniBand) {
    Snapshot s = ib_node();
    auto& p1 = ib_port(s, 1);
    p1.state = 1;
    p1.state_name = "DOWN";
    p1.phys_state = 2;
    p1.phys_state_name = "Polling";
    auto& p2 = ib_port(s, 2);
    p2.window_increase = {{"link_downed", 1},
                          {"symbol_error", 5000},
                          {"port_rcv_errors", 3},
                          {"excessive_buffer_overrun_errors", 1},
                          {"port_xmit_discards", 2}};
    p2.rates["np_cnp_sent"] = 1e6;
    Config c;
    c.expect.port_rate_gbps = 100;
    const auto all = evaluate_rules(s, c);
    std::set<std::string> rules;
    for (const auto& f : all) {
        rules.insert(f.rule);
        EXPECT_EQ(f.action.find("<netdev>"), std::string::npos) << f.rule << ": " << f.action;
        EXPECT_EQ(f.action.find("ethtool"), std::string::npos) << f.rule << ": " << f.action;
        EXPECT_EQ(f.action.find("ip link"), std::string::npos) << f.rule << ": " << f.action;
        EXPECT_EQ(f.action.find("mlnx_qos"), std::string::npos) << f.rule << ": " << f.action;
        EXPECT_EQ(f.action.find("PFC"), std::string::npos) << f.rule << ": " << f.action;
        EXPECT_EQ(f.action.find("RoCE"), std::string::npos) << f.rule << ": " << f.action;
    }
    EXPECT_EQ(rules, (std::set<std::string>{"port_down", "port_rate_low", "error_counters", "congestion"}))
        << dump(all);
    const auto down = of_rule(all, "port_down");
    ASSERT_EQ(down.size(), 1u);
    EXPECT_NE(down[0].action.find("`ibstat mlx4_0 1`"), std::string::npos) << down[0].action;
    EXPECT_NE(down[0].action.find("iblinkinfo"), std::string::npos) << down[0].action;
}

// INIT with the link up: no subnet manager has configured the port. One verdict that says
// so (not a port_down beside it), with the SM advice.
TEST(InfiniBand, InitPortMeansNoSubnetManager) {
    Snapshot s = ib_node();
    auto& p = ib_port(s, 1);
    p.state = 2;
    p.state_name = "INIT";
    p.sm_lid = 0;
    p.lid = 0;
    const auto all = evaluate_rules(s, Config{});
    ASSERT_EQ(all.size(), 1u) << dump(all);
    const auto& f = all.front();
    EXPECT_EQ(f.rule, "ib_port_not_active_no_sm");
    EXPECT_EQ(f.object, "mlx4_0/1");
    EXPECT_EQ(f.severity, Severity::critical);
    EXPECT_NE(f.summary.find("no subnet manager has configured it"), std::string::npos) << f.summary;
    EXPECT_NE(f.summary.find("state 2: INIT"), std::string::npos) << f.summary;
    EXPECT_NE(f.summary.find("sm_lid 0"), std::string::npos) << f.summary;
    EXPECT_NE(f.action.find("opensm"), std::string::npos) << f.action;
    EXPECT_NE(f.action.find("sminfo"), std::string::npos) << f.action;
    EXPECT_EQ(f.details.at("sm_lid"), "0x0");
}

TEST(InfiniBand, ArmedPortWasConfiguredButNotActivated) {
    Snapshot s = ib_node();
    auto& p = ib_port(s, 2);
    p.state = 3;
    p.state_name = "ARMED";
    const auto all = evaluate_rules(s, Config{});
    ASSERT_EQ(all.size(), 1u) << dump(all);
    EXPECT_EQ(all[0].rule, "ib_port_not_active_no_sm");
    EXPECT_NE(all[0].summary.find("has not activated it"), std::string::npos) << all[0].summary;
}

// INIT on an Ethernet port is no subnet manager's business.
TEST(InfiniBand, InitOnAnEthernetPortIsAPortDown) {
    Snapshot s = iwarp_node();
    auto& p = s.devices.at(0).ports.at(0);
    p.state = 2;
    p.state_name = "INIT";
    const auto all = evaluate_rules(s, Config{});
    EXPECT_EQ(of_rule(all, "port_down").size(), 1u) << dump(all);
    EXPECT_TRUE(of_rule(all, "ib_port_not_active_no_sm").empty()) << dump(all);
}

// The fixture trees of each family, healthy as they are: no verdict at all, and certainly no
// RoCE one.
TEST(NicFamily, HealthyFamilyTreesAreSilent) {
    for (const char* tree : {"mlx4-ib", "hfi1-opa", "i40iw-iwarp"}) {
        SCOPED_TRACE(tree);
        Snapshot s;
        s.devices = read_tree(tree).devices;
        if (std::string(tree) == "i40iw-iwarp") s.links.push_back(up_link(2, "eno1", 9000, "10.0.0.5"));
        Config c;
        for (const auto& d : s.devices) c.expect.rails.push_back(d.name);
        const auto all = evaluate_rules(s, c);
        EXPECT_TRUE(all.empty()) << dump(all);
    }
}
