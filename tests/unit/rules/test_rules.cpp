// Every rule fires on the failure it names and stays silent on the healthy node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <set>

#include "daemon/rules/rules.hpp"
#include "spark_node.hpp"

using namespace rocewatch;
using namespace rocewatch::testing;

namespace {

std::vector<Finding> of_rule(const std::vector<Finding>& all, const std::string& rule) {
    std::vector<Finding> out;
    std::copy_if(all.begin(), all.end(), std::back_inserter(out), [&](const Finding& f) { return f.rule == rule; });
    return out;
}

// A copy, so that find(evaluate_rules(...), ...) does not point into a dead temporary.
std::optional<Finding> find(const std::vector<Finding>& all, const std::string& rule, const std::string& object) {
    for (const auto& f : all)
        if (f.rule == rule && f.object == object) return f;
    return std::nullopt;
}

std::string dump(const std::vector<Finding>& all) {
    std::string s;
    for (const auto& f : all) s += "\n  " + f.rule + " " + f.object + ": " + f.summary;
    return s;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// ---------------------------------------------------------------- table and config

// The catalog is the one list of rules (the config and the docs derive theirs): ids unique,
// each described.
TEST(Rules, CatalogIdsAreUniqueDescribedAndConfigurable) {
    const auto& cat = rule_catalog();
    ASSERT_EQ(cat.size(), all_rule_ids().size());
    std::set<std::string> seen;
    for (size_t i = 0; i < cat.size(); ++i) {
        EXPECT_EQ(cat[i].id, all_rule_ids()[i]);
        EXPECT_TRUE(seen.insert(cat[i].id).second) << cat[i].id << " twice";
        EXPECT_FALSE(cat[i].description.empty()) << cat[i].id;
    }
}

TEST(Rules, HealthySparkNodeIsSilent) {
    const auto f = evaluate_rules(healthy_spark(), spark_config());
    EXPECT_TRUE(f.empty()) << dump(f);
}

TEST(Rules, EveryFindingSaysWhatWhereAndWhatToDo) {
    // Break everything at once; every finding must carry its words and figures.
    Snapshot s = bonded_spark();
    link_of(s, "bond0").bond->mode = "balance-rr";
    link_of(s, "enp1s0f1np1").slave->mii_status = "down";
    link_of(s, "enp1s0f1np1").slave->link_failure_increase = 1;
    link_of(s, "enp1s0f0np0").mtu = 1500;
    port_of(s, "rocep1s0f0").active_mtu = 1024;
    port_of(s, "rocep1s0f0").window_increase["link_downed"] = 1;
    port_of(s, "rocep1s0f0").rates["np_cnp_sent"] = 1e6;
    link_of(s, "enP2p1s0f0np0").addresses = {v4("192.168.100.15", 24)};
    s.host.nvidia_peermem_loaded = false;
    const auto all = evaluate_rules(s, spark_config());
    std::set<std::string> rules;
    for (const auto& f : all) {
        rules.insert(f.rule);
        EXPECT_FALSE(f.object.empty()) << f.rule;
        EXPECT_FALSE(f.summary.empty()) << f.rule;
        EXPECT_FALSE(f.action.empty()) << f.rule;
        EXPECT_FALSE(f.details.empty()) << f.rule;
    }
    EXPECT_GE(rules.size(), 10u) << dump(all);
}

TEST(Rules, DisabledRuleIsSilent) {
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f0np0").mtu = 1500;
    Config c = spark_config();
    ASSERT_EQ(of_rule(evaluate_rules(s, c), "mtu_low").size(), 1u);
    c.rules["mtu_low"].enabled = false;
    EXPECT_TRUE(of_rule(evaluate_rules(s, c), "mtu_low").empty());
}

TEST(Rules, SeverityOverrideReplacesTheRulesOwn) {
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f0np0").mtu = 1500;
    Config c = spark_config();
    ASSERT_EQ(of_rule(evaluate_rules(s, c), "mtu_low").at(0).severity, Severity::warning);
    c.rules["mtu_low"].severity = Severity::critical;
    EXPECT_EQ(of_rule(evaluate_rules(s, c), "mtu_low").at(0).severity, Severity::critical);

    // Also over severities a rule picks per finding.
    port_of(s, "rocep1s0f0").rates["local_ack_timeout_err"] = 5;
    c.rules["error_counters"].severity = Severity::info;
    const auto f = find(evaluate_rules(s, c), "error_counters", "rocep1s0f0/1:local_ack_timeout_err");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::info);
}

TEST(Rules, IgnoredDeviceIsNotJudged) {
    Snapshot s = healthy_spark();
    port_of(s, "roceP2p1s0f0").state = 1;
    port_of(s, "roceP2p1s0f0").state_name = "DOWN";
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "port_down", "roceP2p1s0f0/1"));
    Config c;  // no ignore list: every device is judged
    EXPECT_TRUE(find(evaluate_rules(s, c), "port_down", "roceP2p1s0f0/1"));
}

TEST(Rules, RailsListLimitsJudgedDevices) {
    Snapshot s = healthy_spark();
    port_of(s, "roceP2p1s0f0").state = 1;
    Config c;
    c.expect.rails = {"rocep1s0f0", "rocep1s0f1"};
    EXPECT_TRUE(evaluate_rules(s, c).empty()) << dump(evaluate_rules(s, c));
}

// ---------------------------------------------------------------- no_rdma_device

// A node whose sysfs lists no RDMA device (driver not loaded, a wrong --sysfs-root) has no
// port for any other rule to judge: without this rule it would pass as healthy.
TEST(NoRdmaDevice, ANodeWithoutDevicesIsCriticalNotHealthy) {
    Snapshot s = healthy_spark();
    s.devices.clear();
    Config c = spark_config();
    c.daemon.sysfs_root = "/srv/wrong";
    const auto all = evaluate_rules(s, c);
    const auto f = find(all, "no_rdma_device", "class/infiniband");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_TRUE(has(f->summary, "/srv/wrong/class/infiniband")) << f->summary;
    EXPECT_TRUE(has(f->action, "rdma link show")) << f->action;
    EXPECT_TRUE(has(f->action, "--sysfs-root")) << f->action;
    EXPECT_TRUE(has(f->action, "[rules.no_rdma_device] enabled = false")) << f->action;

    // Silent while a device is there, also one every rule ignores (left out on purpose).
    EXPECT_TRUE(of_rule(evaluate_rules(healthy_spark(), c), "no_rdma_device").empty());
    Snapshot one = healthy_spark();
    Config ignoring;
    for (const auto& d : one.devices) ignoring.expect.ignore_devices.push_back(d.name);
    EXPECT_TRUE(of_rule(evaluate_rules(one, ignoring), "no_rdma_device").empty());

    // With expect.rails, port_down names each missing device; this rule does not repeat it.
    Config rails = c;
    rails.expect.rails = {"rocep1s0f0"};
    const auto with_rails = evaluate_rules(s, rails);
    EXPECT_TRUE(of_rule(with_rails, "no_rdma_device").empty()) << dump(with_rails);
    EXPECT_TRUE(find(with_rails, "port_down", "rocep1s0f0")) << dump(with_rails);

    // A sysfs read that failed or never returned found nothing either: not this rule's to say.
    Snapshot failed = s;
    failed.collectors.push_back({.name = "sysfs", .success = false, .last_error = "gave up"});
    EXPECT_TRUE(of_rule(evaluate_rules(failed, c), "no_rdma_device").empty());
    failed.collectors.back().success = true;
    EXPECT_EQ(of_rule(evaluate_rules(failed, c), "no_rdma_device").size(), 1u);

    // Off in the config: a node without RDMA on purpose.
    c.rules["no_rdma_device"].enabled = false;
    EXPECT_TRUE(of_rule(evaluate_rules(s, c), "no_rdma_device").empty());
}

// ---------------------------------------------------------------- collector_errors

// Files the sysfs collector could not read leave the rules that need them silent: the node
// must not pass as healthy (and `--once` exit 0) on what was never read.
TEST(CollectorErrors, UnreadableFilesAndFailedCollectorsAreAWarningNotHealthy) {
    const Config c = spark_config();
    Snapshot s = healthy_spark();
    s.collectors = {{.name = "sysfs", .success = true}, {.name = "netlink", .success = true}};
    EXPECT_TRUE(of_rule(evaluate_rules(s, c), "collector_errors").empty()) << "every read went through";

    s.collectors[0].read_errors = 3;
    s.collectors[0].errors = {"/sys/class/infiniband/rocep1s0f0/ports/1/counters/port_rcv_data: Input/output error",
                              "b: x", "c: y"};
    auto all = evaluate_rules(s, c);
    auto f = find(all, "collector_errors", "sysfs");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "3 files")) << f->summary;
    EXPECT_TRUE(has(f->summary, "port_rcv_data: Input/output error, and more")) << f->summary;
    EXPECT_EQ(f->details.at("read_errors"), "3");
    EXPECT_TRUE(has(f->action, "[rules.collector_errors]")) << f->action;

    // A collector that failed outright (a read that never returned, netlink refused) says why.
    s.collectors[0] = {.name = "sysfs", .success = false, .last_error = "reading x did not return within 2000 ms"};
    s.collectors[1] = {.name = "netlink", .success = false, .last_error = "Operation not permitted"};
    all = evaluate_rules(s, c);
    f = find(all, "collector_errors", "sysfs");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_TRUE(has(f->summary, "failed this round (reading x did not return within 2000 ms)")) << f->summary;
    f = find(all, "collector_errors", "netlink");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_TRUE(has(f->summary, "links, addresses and bonds")) << f->summary;

    // Other collectors (verbs, lldp) are not this rule's: lldpd is optional, verbs adds detail.
    s.collectors = {{.name = "lldp", .success = false, .last_error = "no lldpd"},
                    {.name = "verbs", .success = false, .read_errors = 2}};
    EXPECT_TRUE(of_rule(evaluate_rules(s, c), "collector_errors").empty());
}

// ---------------------------------------------------------------- port_down, netdev_down

TEST(PortDown, DisabledPortSaysBringTheNetdevUp) {
    // ibdev2netdev: "rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)"
    Snapshot s = healthy_spark();
    auto& p = port_of(s, "rocep1s0f1");
    p.state = 1;
    p.state_name = "DOWN";
    p.phys_state = 3;
    p.phys_state_name = "Disabled";
    const auto all = evaluate_rules(s, spark_config());
    const auto f = find(all, "port_down", "rocep1s0f1/1");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_TRUE(has(f->summary, "rocep1s0f1/1")) << f->summary;
    EXPECT_TRUE(has(f->summary, "enp1s0f1np1")) << f->summary;
    EXPECT_TRUE(has(f->action, "ip link set enp1s0f1np1 up")) << f->action;
    EXPECT_EQ(f->details.at("state"), "state 1: DOWN");
    EXPECT_EQ(f->details.at("phys_state"), "phys_state 3: Disabled");
    EXPECT_EQ(of_rule(all, "port_down").size(), 1u);
}

TEST(PortDown, PollingPortSaysCheckTheCable) {
    Snapshot s = healthy_spark();
    auto& p = port_of(s, "rocep1s0f0");
    p.state = 1;
    p.state_name = "DOWN";
    p.phys_state = 2;
    p.phys_state_name = "Polling";
    const auto f = find(evaluate_rules(s, spark_config()), "port_down", "rocep1s0f0/1");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->action, "cable")) << f->action;
}

TEST(PortDown, UnreadableStateIsNotDown) {
    Snapshot s = healthy_spark();
    auto& p = port_of(s, "rocep1s0f0");
    p.state.reset();
    p.state_name.clear();
    p.phys_state.reset();
    p.phys_state_name.clear();
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "port_down").empty());
}

TEST(PortDown, MissingRailIsReported) {
    Snapshot s = healthy_spark();
    s.devices.erase(s.devices.begin() + 1);  // rocep1s0f1 gone (driver did not bind)
    Config c = spark_config();
    c.expect.rails = {"rocep1s0f0", "rocep1s0f1"};
    const auto f = find(evaluate_rules(s, c), "port_down", "rocep1s0f1");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "not present")) << f->summary;
    EXPECT_TRUE(of_rule(evaluate_rules(healthy_spark(), c), "port_down").empty());
}

TEST(NetdevDown, SaysWhichKindOfDown) {
    Config c = spark_config();
    {
        Snapshot s = healthy_spark();
        auto& l = link_of(s, "enp1s0f1np1");
        l.admin_up = false;
        l.carrier = false;
        l.operstate = "down";
        const auto f = find(evaluate_rules(s, c), "netdev_down", "enp1s0f1np1");
        ASSERT_TRUE(f);
        EXPECT_EQ(f->severity, Severity::critical);
        EXPECT_TRUE(has(f->summary, "administratively down")) << f->summary;
        EXPECT_TRUE(has(f->action, "ip link set enp1s0f1np1 up")) << f->action;
    }
    {
        Snapshot s = healthy_spark();
        auto& l = link_of(s, "enp1s0f1np1");
        l.carrier = false;
        l.operstate = "down";
        const auto f = find(evaluate_rules(s, c), "netdev_down", "enp1s0f1np1");
        ASSERT_TRUE(f);
        EXPECT_TRUE(has(f->summary, "no carrier")) << f->summary;
        EXPECT_TRUE(has(f->action, "ethtool")) << f->action;
    }
    {
        Snapshot s = healthy_spark();
        link_of(s, "enp1s0f1np1").operstate = "lowerlayerdown";
        const auto f = find(evaluate_rules(s, c), "netdev_down", "enp1s0f1np1");
        ASSERT_TRUE(f);
        EXPECT_TRUE(has(f->summary, "lowerlayerdown")) << f->summary;
    }
}

// An alert about a link, or about the RDMA port on it, names the switch and port lldpd hears there
// (a MAC port ID gives way to the port's description); without LLDP the words are as before.
TEST(NetdevDown, NamesTheSwitchPortLldpHearsOnTheLink) {
    Config c = spark_config();
    Snapshot s = healthy_spark();
    auto& l = link_of(s, "enp1s0f1np1");
    l.carrier = false;
    l.operstate = "down";
    const auto before = find(evaluate_rules(s, c), "netdev_down", "enp1s0f1np1");
    ASSERT_TRUE(before);
    EXPECT_EQ(before->details.count("switch"), 0u);
    l.lldp = LldpNeighbor{.chassis_id = "0c:42:a1:00:00:01",
                          .port_id = "0c:42:a1:00:00:0d",
                          .port_id_subtype = "mac",
                          .port_description = "swp13"};
    const auto after = find(evaluate_rules(s, c), "netdev_down", "enp1s0f1np1");
    ASSERT_TRUE(after);
    EXPECT_EQ(after->summary,
              before->summary + " (enp1s0f1np1 is cabled to 0c:42:a1:00:00:01 port swp13, as LLDP says)");
    EXPECT_EQ(after->details.at("switch"), "0c:42:a1:00:00:01");
    EXPECT_EQ(after->details.at("switch_port"), "swp13");
    // The port_down verdict of the RDMA port bound to that netdev names them too.
    for (auto& d : s.devices)
        for (auto& p : d.ports)
            if (p.netdev == "enp1s0f1np1") {
                p.state = 1;
                p.state_name = "DOWN";
                p.phys_state = 3;
                p.phys_state_name = "Disabled";
            }
    bool seen = false;
    for (const auto& f : evaluate_rules(s, c))
        if (f.rule == "port_down") {
            seen = true;
            EXPECT_EQ(f.details.at("switch_port"), "swp13") << f.object;
        }
    EXPECT_TRUE(seen);
    // A counter verdict on that port ("dev/port:counter") names them too.
    port_of(s, "rocep1s0f1").rates["local_ack_timeout_err"] = 5;
    const auto counters = find(evaluate_rules(s, c), "error_counters", "rocep1s0f1/1:local_ack_timeout_err");
    ASSERT_TRUE(counters);
    EXPECT_EQ(counters->details.at("switch_port"), "swp13");
}

TEST(NetdevDown, ExpectedInterfacesAreHeldToo) {
    Config c = spark_config();
    c.expect.interfaces = {"enP7s7", "bond9"};
    Snapshot s = healthy_spark();
    const auto all = evaluate_rules(s, c);
    EXPECT_FALSE(find(all, "netdev_down", "enP7s7"));
    const auto missing = find(all, "netdev_down", "bond9");
    ASSERT_TRUE(missing) << dump(all);
    EXPECT_TRUE(has(missing->summary, "does not exist"));
    link_of(s, "enP7s7").admin_up = false;
    EXPECT_TRUE(find(evaluate_rules(s, c), "netdev_down", "enP7s7"));
}

// ---------------------------------------------------------------- rates and MTUs

TEST(PortRateLow, FiresBelowExpectation) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f1").rate_gbps = 25;
    const auto f = find(evaluate_rules(s, spark_config()), "port_rate_low", "rocep1s0f1/1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    // Bytes per second, the unit /metrics uses for the same quantity.
    EXPECT_EQ(f->details.at("expected_rate_bytes_per_second"), "12500000000");
    EXPECT_EQ(f->details.at("actual_rate_bytes_per_second"), "3125000000");
    EXPECT_TRUE(of_rule(evaluate_rules(s, Config{}), "port_rate_low").empty()) << "no expectation, no verdict";
    port_of(s, "rocep1s0f1").state = 1;
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "port_rate_low").empty()) << "port_down speaks for it";
}

TEST(FieldNotes, Mtu1500OnA100GRail) {
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f0np0").mtu = 1500;
    const auto all = evaluate_rules(s, spark_config());
    const auto f = find(all, "mtu_low", "enp1s0f0np0");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "1500")) << f->summary;
    EXPECT_TRUE(has(f->summary, "9000")) << f->summary;
    EXPECT_TRUE(has(f->action, "ip link set enp1s0f0np0 mtu 9000")) << f->action;
    EXPECT_TRUE(has(f->action, "both ends")) << f->action;
    EXPECT_EQ(f->details.at("actual_mtu"), "1500");
    EXPECT_EQ(f->details.at("roce_mtu_allowed"), "1024");
    EXPECT_EQ(of_rule(all, "mtu_low").size(), 1u) << "enP7s7 is not an RDMA netdev";
}

TEST(MtuLow, BondSlaveIsFixedOnTheBond) {
    Snapshot s = bonded_spark();
    for (auto& l : s.links)
        if (l.name == "bond0" || l.master == "bond0") l.mtu = 1500;
    const auto f = find(evaluate_rules(s, spark_config()), "mtu_low", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->action, "ip link set bond0 mtu 9000")) << f->action;
}

TEST(MtuLow, ExpectedInterfacesAreHeldToo) {
    Config c = spark_config();
    c.expect.interfaces = {"enP7s7"};
    const auto f = find(evaluate_rules(healthy_spark(), c), "mtu_low", "enP7s7");
    ASSERT_TRUE(f);
    // enP7s7 carries no RoCE port: nothing is said of RoCE packets.
    EXPECT_FALSE(has(f->summary, "RoCE")) << f->summary;
    EXPECT_FALSE(f->details.contains("roce_mtu_allowed"));
}

TEST(FieldNotes, ActiveMtu1024WhileMax4096) {
    // ibv_devinfo in the notebook: max_mtu 4096 (5), active_mtu 1024 (3), netdev MTU 1500.
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f0np0").mtu = 1500;
    port_of(s, "rocep1s0f0").active_mtu = 1024;
    const auto f = find(evaluate_rules(s, spark_config()), "roce_mtu_low", "rocep1s0f0/1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_EQ(f->details.at("active_mtu"), "1024");
    EXPECT_EQ(f->details.at("expected_active_mtu"), "4096");
    EXPECT_EQ(f->details.at("netdev_mtu"), "1500");
    EXPECT_TRUE(has(f->action, "follows the netdev MTU")) << f->action;
    EXPECT_TRUE(has(f->action, "4192")) << f->action;
    EXPECT_TRUE(has(f->action, "ip link set enp1s0f0np0 mtu 9000")) << f->action;
}

TEST(RoceMtuLow, NetdevAlreadyLargeEnough) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f0").active_mtu = 1024;
    const auto f = find(evaluate_rules(s, spark_config()), "roce_mtu_low", "rocep1s0f0/1");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->action, "already has MTU 9000")) << f->action;
}

TEST(RoceMtuLow, ConfiguredTargetWins) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f0").active_mtu = 2048;
    Config c = spark_config();
    c.expect.roce_active_mtu = 2048;
    EXPECT_TRUE(of_rule(evaluate_rules(s, c), "roce_mtu_low").empty());
    c.expect.roce_active_mtu.reset();
    EXPECT_EQ(of_rule(evaluate_rules(s, c), "roce_mtu_low").size(), 1u);
    port_of(s, "rocep1s0f0").active_mtu.reset();
    EXPECT_TRUE(of_rule(evaluate_rules(s, c), "roce_mtu_low").empty()) << "unknown is not low";
}

// ---------------------------------------------------------------- GIDs and bonds

TEST(NoRoceV2Gid, IPv4WithoutV2EntryIsCritical) {
    Snapshot s = healthy_spark();
    auto& p = port_of(s, "rocep1s0f0");
    p.gids.resize(3);  // index 3 (RoCE v2, 192.168.100.11) gone
    p.roce_v2_ipv4_gid_index.reset();
    const auto all = evaluate_rules(s, spark_config());
    const auto f = find(all, "no_roce_v2_gid", "rocep1s0f0/1");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_TRUE(has(f->summary, "192.168.100.11/24")) << f->summary;
    EXPECT_TRUE(has(f->action, "-x <index>")) << f->action;
    EXPECT_EQ(f->details.at("roce_v2_ipv4_gid_index"), "unset");
    EXPECT_EQ(of_rule(all, "no_roce_v2_gid").size(), 1u);
}

TEST(NoRoceV2Gid, IndexUnsetAloneFires) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f0").roce_v2_ipv4_gid_index.reset();
    EXPECT_TRUE(find(evaluate_rules(s, spark_config()), "no_roce_v2_gid", "rocep1s0f0/1"));
}

TEST(NoRoceV2Gid, SecondaryAddressWithoutEntryFires) {
    // The dual-rail experiment added 192.168.100.12/24 to enp1s0f1np1.
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f1np1").addresses.push_back(v4("192.168.100.12", 24));
    const auto f = find(evaluate_rules(s, spark_config()), "no_roce_v2_gid", "rocep1s0f1/1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->details.at("ipv4_without_gid"), "192.168.100.12/24");
}

TEST(NoRoceV2Gid, NoAddressNoVerdict) {
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f0np0").addresses.clear();
    port_of(s, "rocep1s0f0").gids.resize(2);
    port_of(s, "rocep1s0f0").roce_v2_ipv4_gid_index.reset();
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "no_roce_v2_gid").empty())
        << "a device nobody named as a rail may legitimately have no address";
}

TEST(NoRoceV2Gid, ANamedRailWithoutAddressIsUnreachableByIp) {
    // The VM test bed's rxe2: a configured rail whose only GID is link-local.
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f0np0").addresses.clear();
    port_of(s, "rocep1s0f0").gids.resize(2);
    port_of(s, "rocep1s0f0").roce_v2_ipv4_gid_index.reset();
    Config c = spark_config();
    c.expect.rails = {"rocep1s0f0", "rocep1s0f1"};
    const auto all = evaluate_rules(s, c);
    const auto f = find(all, "no_roce_v2_gid", "rocep1s0f0/1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_NE(f->summary.find("enp1s0f0np0"), std::string::npos);
    EXPECT_NE(f->action.find("ip addr add"), std::string::npos);
    EXPECT_EQ(of_rule(all, "no_roce_v2_gid").size(), 1u) << "rail 1 has its address";
}

TEST(FieldNotes, Bond0HoldsTheGids) {
    const auto all = evaluate_rules(bonded_spark(), spark_config());
    for (const char* port : {"rocep1s0f0/1", "rocep1s0f1/1"}) {
        const auto f = find(all, "gid_on_bond", port);
        ASSERT_TRUE(f) << port << dump(all);
        EXPECT_EQ(f->severity, Severity::critical);
        EXPECT_TRUE(has(f->summary, "bond0")) << f->summary;
        EXPECT_EQ(f->details.at("bond"), "bond0");
        EXPECT_EQ(f->details.at("gid_indices_on_bond"), "0, 1, 2, 3");
        EXPECT_TRUE(has(f->action, "RoCE LAG")) << f->action;
    }
    EXPECT_TRUE(has(find(all, "gid_on_bond", "rocep1s0f0/1")->action, "ip link set enp1s0f0np0 nomaster"));
    EXPECT_TRUE(has(find(all, "gid_on_bond", "rocep1s0f0/1")->action, "ip addr add 192.168.100.11/24 dev enp1s0f0np0"));
    // The bond's one address can go back to one rail only.
    EXPECT_TRUE(has(find(all, "gid_on_bond", "rocep1s0f1/1")->action, "ip addr add <ip>/<prefix> dev enp1s0f1np1"));
    // The slaves have no address of their own, so this is not also a missing-GID case,
    // and bond0's address is the same path, not an overlapping subnet.
    EXPECT_TRUE(of_rule(all, "no_roce_v2_gid").empty()) << dump(all);
    EXPECT_TRUE(of_rule(all, "subnet_overlap").empty()) << dump(all);
    EXPECT_TRUE(of_rule(all, "bond_mode_reorders").empty()) << "balance-xor is the documented mode";
}

TEST(GidOnBond, EnslavedWithoutGidsStillFires) {
    Snapshot s = bonded_spark();
    port_of(s, "rocep1s0f0").gids.clear();
    const auto f = find(evaluate_rules(s, spark_config()), "gid_on_bond", "rocep1s0f0/1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->details.at("gid_indices_on_bond"), "none");
}

TEST(GidOnBond, RoceLagDeviceIsFine) {
    // mlx5 RoCE LAG: one RDMA device on the bond itself, its GIDs rightly on bond0.
    Snapshot s = bonded_spark();
    s.devices.erase(s.devices.begin(), s.devices.begin() + 2);
    RdmaDevice lag = rail(0, "192.168.100.11", "c0a8:640b");
    lag.name = "mlx5_bond_0";
    lag.netdevs = {"bond0"};
    lag.ports[0].netdev = "bond0";
    for (auto& g : lag.ports[0].gids) g.netdev = "bond0";
    s.devices.insert(s.devices.begin(), lag);
    const auto all = evaluate_rules(s, spark_config());
    EXPECT_TRUE(all.empty()) << dump(all);
}

TEST(BondSlaveDown, WarningWhileAnotherSlaveCarries) {
    Snapshot s = bonded_spark();
    link_of(s, "enp1s0f1np1").slave->mii_status = "down";
    const auto all = evaluate_rules(s, spark_config());
    const auto f = find(all, "bond_slave_down", "enp1s0f1np1");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "1 of 2")) << f->summary;
    const auto d = find(all, "bond_degraded", "bond0");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->severity, Severity::warning);
    EXPECT_EQ(d->details.at("down"), "enp1s0f1np1");
    EXPECT_EQ(d->details.at("slaves_up"), "1");
}

TEST(BondSlaveDown, CriticalWhenNoSlaveIsLeft) {
    Snapshot s = bonded_spark();
    link_of(s, "enp1s0f0np0").slave->mii_status = "down";
    link_of(s, "enp1s0f1np1").slave->mii_status = "down";
    const auto all = evaluate_rules(s, spark_config());
    ASSERT_EQ(of_rule(all, "bond_slave_down").size(), 2u);
    for (const auto& f : of_rule(all, "bond_slave_down")) EXPECT_EQ(f.severity, Severity::critical);
    EXPECT_TRUE(has(find(all, "bond_slave_down", "enp1s0f0np0")->summary, "no working link"));
}

TEST(BondSlaveDown, HealthyBondIsSilent) {
    const auto all = evaluate_rules(bonded_spark(), spark_config());
    EXPECT_TRUE(of_rule(all, "bond_slave_down").empty());
    EXPECT_TRUE(of_rule(all, "bond_degraded").empty());
    EXPECT_TRUE(of_rule(all, "bond_link_failures").empty());
}

TEST(BondLinkFailures, FiresOnIncreaseInWindow) {
    Snapshot s = bonded_spark();
    link_of(s, "enp1s0f0np0").slave->link_failure_increase = 0;
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "bond_link_failures").empty());
    link_of(s, "enp1s0f0np0").slave->link_failure_increase = 2;
    const auto f = find(evaluate_rules(s, spark_config()), "bond_link_failures", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "2 times in the last 5 minutes")) << f->summary;
}

TEST(BondModeReorders, BalanceRrIsFlagged) {
    Snapshot s = bonded_spark();
    link_of(s, "bond0").bond->mode = "balance-rr";
    const auto f = find(evaluate_rules(s, spark_config()), "bond_mode_reorders", "bond0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "out of order")) << f->summary;
    EXPECT_TRUE(has(f->action, "mode balance-xor xmit_hash_policy layer3+4")) << f->action;
    EXPECT_TRUE(has(f->action, "ip link set enp1s0f0np0 nomaster")) << f->action;
    EXPECT_TRUE(has(f->action, "One TCP stream still uses one link")) << f->action;
}

// ---------------------------------------------------------------- subnets

TEST(FieldNotes, P2PInterfaceInTheRoceSubnet) {
    Snapshot s = healthy_spark();
    link_of(s, "enP2p1s0f0np0").addresses = {v4("192.168.100.15", 24)};
    const auto all = evaluate_rules(s, spark_config());
    const auto f = find(all, "subnet_overlap", "enp1s0f0np0");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "enP2p1s0f0np0 192.168.100.15/24")) << f->summary;
    EXPECT_TRUE(has(f->action, "ip addr del 192.168.100.15/24 dev enP2p1s0f0np0")) << f->action;
    EXPECT_TRUE(has(f->action, "UCX_NET_DEVICES=rocep1s0f0:1")) << f->action;
    EXPECT_EQ(of_rule(all, "subnet_overlap").size(), 1u) << "rail 2 is in 192.168.200.0/24";
}

TEST(SubnetOverlap, OtherSubnetsAndLoopbackAreFine) {
    Snapshot s = healthy_spark();
    link_of(s, "enP2p1s0f0np0").addresses = {v4("192.168.101.15", 24), v4("169.254.3.4", 16)};
    link_of(s, "enp1s0f0np0").addresses.push_back(v4("169.254.9.9", 16));
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "subnet_overlap").empty());
}

TEST(SubnetOverlap, TwoRailsInOneSubnet) {
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f1np1").addresses = {v4("192.168.100.12", 32)};
    const auto all = evaluate_rules(s, spark_config());
    const auto f = find(all, "subnet_overlap", "enp1s0f0np0");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_TRUE(has(f->action, "own subnet")) << f->action;
}

// ---------------------------------------------------------------- counters

TEST(ErrorCounters, AnyIncreaseOfAFatalCounter) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f0").window_increase = {{"link_downed", 0}, {"symbol_error", 0}};
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "error_counters").empty());
    port_of(s, "rocep1s0f0").window_increase["link_downed"] = 1;
    port_of(s, "rocep1s0f1").window_increase["req_transport_retries_exceeded"] = 3;
    const auto all = evaluate_rules(s, spark_config());
    const auto f = find(all, "error_counters", "rocep1s0f0/1:link_downed");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_TRUE(has(f->summary, "rose by 1 in the last 5 minutes")) << f->summary;
    EXPECT_TRUE(has(f->action, "ethtool -m enp1s0f0np0")) << f->action;
    EXPECT_TRUE(find(all, "error_counters", "rocep1s0f1/1:req_transport_retries_exceeded"));
}

TEST(ErrorCounters, SoftRoceNames) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f0").window_increase["retry_exceeded_err"] = 1;
    port_of(s, "rocep1s0f0").window_increase["retry_rnr_exceeded_err"] = 1;
    const auto all = evaluate_rules(s, spark_config());
    EXPECT_TRUE(find(all, "error_counters", "rocep1s0f0/1:retry_exceeded_err"));
    EXPECT_TRUE(find(all, "error_counters", "rocep1s0f0/1:retry_rnr_exceeded_err"));
}

TEST(ErrorCounters, SymbolErrorsPerHourOverTheWindow) {
    // 5-minute window, 120/hour threshold: 10 in 5 min is 120/h (not above), 11 is 132/h.
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f0").window_increase["symbol_error"] = 10;
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "error_counters").empty());
    port_of(s, "rocep1s0f0").window_increase["symbol_error"] = 11;
    const auto f = find(evaluate_rules(s, spark_config()), "error_counters", "rocep1s0f0/1:symbol_error");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_EQ(f->details.at("per_hour"), "132");
}

TEST(ErrorCounters, AckTimeoutsAboveOnePerSecondAreAWarning) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f0").rates["local_ack_timeout_err"] = 1.0;
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "error_counters").empty());
    port_of(s, "rocep1s0f0").rates["local_ack_timeout_err"] = 2.5;
    const auto f = find(evaluate_rules(s, spark_config()), "error_counters", "rocep1s0f0/1:local_ack_timeout_err");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_EQ(f->details.at("per_second"), "2.50");
}

TEST(ErrorCounters, RisingReceiveErrorsAndDiscardsAreWarnings) {
    Snapshot s = healthy_spark();
    port_of(s, "rocep1s0f1").window_increase["port_rcv_errors"] = 4;
    port_of(s, "rocep1s0f1").window_increase["port_xmit_discards"] = 7;
    const auto all = evaluate_rules(s, spark_config());
    for (const char* obj : {"rocep1s0f1/1:port_rcv_errors", "rocep1s0f1/1:port_xmit_discards"}) {
        const auto f = find(all, "error_counters", obj);
        ASSERT_TRUE(f) << obj;
        EXPECT_EQ(f->severity, Severity::warning);
    }
}

TEST(Congestion, CnpAndEcnRatesAboveThreshold) {
    Snapshot s = healthy_spark();
    auto& p = port_of(s, "rocep1s0f0");
    p.rates = {{"np_cnp_sent", 500}, {"rp_cnp_handled", 999}, {"np_ecn_marked_roce_packets", 1000}};
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "congestion").empty());
    p.rates["rp_cnp_handled"] = 5000;
    p.rates["np_ecn_marked_roce_packets"] = 2000;
    const auto f = find(evaluate_rules(s, spark_config()), "congestion", "rocep1s0f0/1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_EQ(f->details.at("rp_cnp_handled_per_second"), "5000");
    EXPECT_EQ(f->details.at("np_ecn_marked_roce_packets_per_second"), "2000");
    EXPECT_EQ(f->details.count("np_cnp_sent_per_second"), 0u);
}

TEST(LinkFlapping, AtThresholdInWindow) {
    Snapshot s = healthy_spark();
    link_of(s, "enp1s0f0np0").transitions_in_window = 5;
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "link_flapping").empty());
    link_of(s, "enp1s0f0np0").transitions_in_window = 6;
    const auto f = find(evaluate_rules(s, spark_config()), "link_flapping", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "6 carrier changes in the last 10 minutes")) << f->summary;
    link_of(s, "enP7s7").transitions_in_window = 10;
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "link_flapping", "enP7s7")) << "not an RDMA netdev";
    Config c = spark_config();
    c.cluster.rails = {"enP7s7"};
    EXPECT_TRUE(find(evaluate_rules(s, c), "link_flapping", "enP7s7")) << "a rail of [cluster] rails is held to it";
}

TEST(LinkFlapping, AnyBondSlaveIsWatched) {
    Snapshot s = bonded_spark();
    Link extra = netdev(20, "eno1", 1500);
    extra.master = "bond0";
    extra.slave = BondSlaveInfo{.state = "backup", .mii_status = "up"};
    extra.transitions_in_window = 8;
    s.links.push_back(extra);
    EXPECT_TRUE(find(evaluate_rules(s, spark_config()), "link_flapping", "eno1"));
}

// ---------------------------------------------------------------- host

TEST(FieldNotes, PeermemMissing) {
    Snapshot s = healthy_spark();
    s.host.nvidia_peermem_loaded = false;
    const auto f = find(evaluate_rules(s, spark_config()), "peermem_missing", "nvidia_peermem");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "3.5-4.9 Gbps")) << f->summary;
    EXPECT_TRUE(has(f->action, "modprobe nvidia_peermem")) << f->action;
    s.host.nvidia_gpu_present = false;
    EXPECT_TRUE(of_rule(evaluate_rules(s, spark_config()), "peermem_missing").empty());
}

// ---------------------------------------------------------------- what the netlink history knows

// `ip link set enp1s0f0np0 down` (to enslave it, to change its MTU) downs the port once: the
// link_downed it leaves behind is not a fault.
TEST(ErrorCounters, LinkDownedFromAnAdminDownIsNotAFault) {
    Snapshot s = healthy_spark();
    s.collected_at = TimePoint{} + std::chrono::hours(1);
    port_of(s, "rocep1s0f0").window_increase["link_downed"] = 1;
    s.link_events.push_back(
        {.at = s.collected_at - std::chrono::minutes(2), .link = "enp1s0f0np0", .what = "admin_down"});
    s.link_events.push_back(
        {.at = s.collected_at - std::chrono::minutes(1), .link = "enp1s0f0np0", .what = "admin_up"});
    auto all = evaluate_rules(s, spark_config());
    EXPECT_FALSE(find(all, "error_counters", "rocep1s0f0/1:link_downed")) << dump(all);

    // Another netdev's admin-down says nothing about this one.
    s.link_events[0].link = "enp1s0f1np1";
    EXPECT_TRUE(find(evaluate_rules(s, spark_config()), "error_counters", "rocep1s0f0/1:link_downed"));
    // Nor does one older than the counter window (5 minutes).
    s.link_events[0] = {.at = s.collected_at - std::chrono::minutes(6), .link = "enp1s0f0np0", .what = "admin_down"};
    EXPECT_TRUE(find(evaluate_rules(s, spark_config()), "error_counters", "rocep1s0f0/1:link_downed"));
    // A carrier loss is a fault.
    s.link_events[0] = {.at = s.collected_at - std::chrono::minutes(2), .link = "enp1s0f0np0", .what = "carrier_down"};
    EXPECT_TRUE(find(evaluate_rules(s, spark_config()), "error_counters", "rocep1s0f0/1:link_downed"));

    // Two downs, one of them planned: one is left to explain.
    s.link_events[0] = {.at = s.collected_at - std::chrono::minutes(2), .link = "enp1s0f0np0", .what = "admin_down"};
    port_of(s, "rocep1s0f0").window_increase["link_downed"] = 2;
    all = evaluate_rules(s, spark_config());
    const auto f = find(all, "error_counters", "rocep1s0f0/1:link_downed");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_EQ(f->details.at("increase"), "1");
    EXPECT_EQ(f->details.at("admin_downs"), "1");
    EXPECT_TRUE(has(f->summary, "not counting 1 admin-down of enp1s0f0np0")) << f->summary;
}

// Enslaving a rail to a bond takes its address: the advice gives back the rail's own former
// address, not the bond's.
TEST(GidOnBond, SuggestsTheRailsOwnFormerAddress) {
    Snapshot s = bonded_spark();
    s.link_events.push_back({.link = "enp1s0f1np1", .what = "address_removed", .address = "192.168.200.11/24"});
    s.link_events.push_back({.link = "enp1s0f0np0", .what = "address_removed", .address = "192.168.100.11/24"});
    const auto all = evaluate_rules(s, spark_config());
    auto f = find(all, "gid_on_bond", "rocep1s0f1/1");
    ASSERT_TRUE(f) << dump(all);
    EXPECT_TRUE(has(f->action, "ip addr add 192.168.200.11/24 dev enp1s0f1np1")) << f->action;
    EXPECT_EQ(f->details.at("former_address"), "192.168.200.11/24");
    f = find(all, "gid_on_bond", "rocep1s0f0/1");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->action, "ip addr add 192.168.100.11/24 dev enp1s0f0np0")) << f->action;
}

// ---------------------------------------------------------------- DCB: PFC on RoCE's priority

namespace {

Link* link_named(Snapshot& s, const std::string& name) {
    for (auto& l : s.links)
        if (l.name == name) return &l;
    return nullptr;
}

}  // namespace

TEST(Rules, PfcOffOnRocesPriorityIsNamedWithThePriorityAndWhy) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    // Trust DSCP with DSCP 0 (rdma_cm's default ToS) mapped nowhere: RoCE at priority 0,
    // while PFC protects priority 3 only.
    l->dcb = DcbState{.error = 0,
                      .ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 5, .protocol = 26, .priority = 3}}}};
    auto f = find(evaluate_rules(s, spark_config()), "pfc_off_roce_priority", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "PFC is on for priorities 3 of enp1s0f0np0 but RoCE v2 traffic goes out at priority 0"))
        << f->summary;
    EXPECT_TRUE(has(f->action, "dcb pfc set dev enp1s0f0np0")) << f->action;
    EXPECT_EQ(f->details.at("roce_priority"), "0");

    // PFC on nowhere: lossy RoCE, said so.
    l->dcb->ieee.pfc_enabled = 0;
    f = find(evaluate_rules(s, spark_config()), "pfc_off_roce_priority", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "PFC is off on every priority")) << f->summary;

    // RoCE's priority (UDP port 4791 in the APP table) is PFC-protected: silent.
    l->dcb->ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 3, .protocol = 4791, .priority = 3}}};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "pfc_off_roce_priority", "enp1s0f0np0"));

    // rdma_cm's configfs default_roce_tos 106 (DSCP 26): RoCE at priority 3, PFC-protected.
    l->dcb->ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 5, .protocol = 26, .priority = 3}}};
    for (auto& d : s.devices)
        for (auto& p : d.ports)
            if (p.netdev == "enp1s0f0np0") p.rdma_cm_default_tos = 106;
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "pfc_off_roce_priority", "enp1s0f0np0"));

    // A driver without DCB (EOPNOTSUPP) is not judged.
    l->dcb = DcbState{.error = 95};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "pfc_off_roce_priority", "enp1s0f0np0"));
}

// ECN off at RoCE's priority while PFC is on there: named with the point and the command.
TEST(Rules, EcnOffWithPfcOnNamesThePointAndThePriority) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    l->dcb = DcbState{.error = 0,
                      .ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 3, .protocol = 4791, .priority = 3}}}};
    RdmaPort* port = nullptr;
    for (auto& d : s.devices)
        for (auto& p : d.ports)
            if (p.netdev == "enp1s0f0np0") port = &p;
    ASSERT_NE(port, nullptr);

    // The driver has no ECN files: not judged.
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "ecn_off_pfc_on", "enp1s0f0np0"));

    // Reaction point on for 3, notification point on for 5 only.
    port->ecn_rp_enabled = 0x08;
    port->ecn_np_enabled = 0x20;
    auto f = find(evaluate_rules(s, spark_config()), "ecn_off_pfc_on", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "ECN is off at the notification point")) << f->summary;
    EXPECT_TRUE(has(f->summary, "for priority 3 of enp1s0f0np0, while PFC is on for it")) << f->summary;
    EXPECT_TRUE(has(f->action, "`echo 1 > /sys/class/net/enp1s0f0np0/ecn/roce_np/enable/3`")) << f->action;
    EXPECT_FALSE(has(f->action, "roce_rp")) << f->action;
    EXPECT_EQ(f->details.at("ecn_rp"), "on");
    EXPECT_EQ(f->details.at("ecn_np"), "off");

    // Both off.
    port->ecn_rp_enabled = 0;
    f = find(evaluate_rules(s, spark_config()), "ecn_off_pfc_on", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "the reaction and notification points")) << f->summary;

    // ECN on at both points for RoCE's priority: silent.
    port->ecn_rp_enabled = 0x08;
    port->ecn_np_enabled = 0x08;
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "ecn_off_pfc_on", "enp1s0f0np0"));

    // PFC off on RoCE's priority: that is pfc_off_roce_priority's finding, not this one.
    port->ecn_np_enabled = 0;
    l->dcb->ieee.pfc_enabled = 0x10;
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "ecn_off_pfc_on", "enp1s0f0np0"));
    EXPECT_TRUE(find(evaluate_rules(s, spark_config()), "pfc_off_roce_priority", "enp1s0f0np0"));
}

// ---------------------------------------------------------------- pause frames, storms, discards

// Pause storm events inside the counter window: critical, with the counts and the watchdog.
TEST(Rules, PauseStormFromTheDriversEvents) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    l->driver_stat_increase = {{"tx_pause_storm_warning_events", 0}, {"tx_pause_storm_error_events", 0}};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "pause_storm", "enp1s0f0np0"));
    l->driver_stat_increase["tx_pause_storm_warning_events"] = 2;
    auto f = find(evaluate_rules(s, spark_config()), "pause_storm", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_TRUE(has(f->summary, "2 warning and 0 error events")) << f->summary;
    EXPECT_FALSE(has(f->summary, "stopped sending pause frames")) << f->summary;
    EXPECT_TRUE(has(f->action, "pfc-prevention-tout")) << f->action;
    l->driver_stat_increase["tx_pause_storm_error_events"] = 1;
    f = find(evaluate_rules(s, spark_config()), "pause_storm", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "stopped sending pause frames")) << f->summary;
}

// Pause frames faster than the threshold: per priority where the driver counts priorities
// (the port-wide counter of that direction is then not judged), named with the direction.
TEST(Rules, PauseFramesHighPerPriorityAndDirection) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    l->dcb = DcbState{.ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 3, .protocol = 4791, .priority = 3}}}};
    l->driver_stat_rates = {{"rx_prio3_pause", 40.0}, {"rx_pause_ctrl_phy", 5000.0}, {"tx_prio3_pause", 10.0}};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "pause_frames_high", "enp1s0f0np0"))
        << "the port-wide counter is not judged where the driver counts per priority";
    l->driver_stat_rates["rx_prio3_pause"] = 2500.0;
    auto f = find(evaluate_rules(s, spark_config()), "pause_frames_high", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "enp1s0f0np0 receives 2500 pause frames/s at priority 3 (rx_prio3_pause)"))
        << f->summary;
    EXPECT_TRUE(has(f->action, "ECN")) << f->action;
    EXPECT_EQ(f->details.at("direction"), "rx");

    // Sent pauses: this host cannot take in what arrives; a driver without priorities.
    l->driver_stat_rates = {{"tx_pause_frames", 3000.0}};
    f = find(evaluate_rules(s, spark_config()), "pause_frames_high", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "sends 3000 pause frames/s (tx_pause_frames)")) << f->summary;
    EXPECT_TRUE(has(f->action, "lspci -vv")) << f->action;

    // The threshold is the operator's.
    auto c = spark_config();
    c.thresholds.pause_frames_per_second = 5000;
    EXPECT_FALSE(find(evaluate_rules(s, c), "pause_frames_high", "enp1s0f0np0"));
}

// Discards at the port with PFC on for RoCE's priority: at that priority where counted so.
TEST(Rules, DiscardsWithPfcOnAtRocesPriority) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    l->driver_stat_increase = {{"rx_discards_phy", 120}};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "discards_with_pfc", "enp1s0f0np0"))
        << "no DCB reported: lossy by design or unknown, not judged";
    l->dcb = DcbState{.ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 3, .protocol = 4791, .priority = 3}}}};
    auto f = find(evaluate_rules(s, spark_config()), "discards_with_pfc", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "dropped 120 received packets")) << f->summary;
    EXPECT_TRUE(has(f->summary, "although PFC is on for RoCE's priority 3")) << f->summary;
    EXPECT_TRUE(has(f->action, "cable length")) << f->action;

    // Counted per priority, and none at RoCE's: the drops were elsewhere.
    l->driver_stat_increase = {{"rx_discards_phy", 120}, {"rx_prio3_discards", 0}, {"rx_prio0_discards", 120}};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "discards_with_pfc", "enp1s0f0np0"));
    l->driver_stat_increase["rx_prio3_discards"] = 4;
    f = find(evaluate_rules(s, spark_config()), "discards_with_pfc", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->details.at("counter"), "rx_prio3_discards");
}

// rdma_cm's configfs default RoCE mode: v1 on a RoCE port is a warning with the file to write;
// v2, or no configfs directory, is silent.
TEST(Rules, RdmaCmDefaultRoceModeV1) {
    auto s = healthy_spark();
    RdmaPort* port = nullptr;
    std::string dev;
    for (auto& d : s.devices)
        for (auto& p : d.ports)
            if (p.netdev == "enp1s0f0np0") {
                port = &p;
                dev = d.name;
            }
    ASSERT_NE(port, nullptr);
    const std::string object = dev + "/1";
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "rdma_cm_roce_v1", object));
    port->rdma_cm_default_mode = "RoCE v2";
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "rdma_cm_roce_v1", object));
    port->rdma_cm_default_mode = "IB/RoCE v1";
    auto f = find(evaluate_rules(s, spark_config()), "rdma_cm_roce_v1", object);
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "rdma_cm connects over " + object + " with RoCE v1")) << f->summary;
    EXPECT_TRUE(has(f->action, "`echo \"RoCE v2\" > /sys/kernel/config/rdma_cm/" + dev + "/ports/1/default_roce_mode`"))
        << f->action;
}

// Uncorrectable FEC codewords inside the counter window: critical, with the lanes that count
// them (ethtool netlink's per-lane statistics) and the module and FEC checks.
TEST(Rules, FecUncorrectableNamesTheLanes) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    l->driver_stat_increase = {{"fec_uncorrectable_blocks", 0}, {"fec_corrected_blocks", 900}};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "fec_uncorrectable", "enp1s0f0np0"));
    l->driver_stat_increase["fec_uncorrectable_blocks"] = 12;
    l->phy = PhyLink{.fec_active = "RS",
                     .fec_uncorrectable_blocks = 40,
                     .fec_uncorrectable_blocks_lanes = {0, 40, 0, 0}};
    auto f = find(evaluate_rules(s, spark_config()), "fec_uncorrectable", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_TRUE(has(f->summary, "enp1s0f0np0 had 12 FEC codewords it could not correct")) << f->summary;
    EXPECT_TRUE(has(f->summary, "(uncorrectable per lane since start: 0=0,1=40,2=0,3=0)")) << f->summary;
    EXPECT_TRUE(has(f->action, "ethtool -m enp1s0f0np0")) << f->action;
    EXPECT_EQ(f->details.at("fec_mode"), "RS");
    EXPECT_EQ(f->details.at("corrected_increase"), "900");
}

namespace {

// A QSFP28 optic as decoded from its EEPROM, healthy: every lane well inside its levels.
Transceiver healthy_optic() {
    Transceiver t{.spec = "SFF-8636",
                  .identifier = 0x11,
                  .type = "QSFP28",
                  .vendor = "NVIDIA",
                  .part_number = "MMA1B00-C100D",
                  .serial = "MT2233FT01234",
                  .diagnostics = true,
                  .temperature_c = 41.5,
                  .voltage_v = 3.3};
    t.lanes.assign(4, ModuleLane{.rx_power_mw = 0.8, .tx_power_mw = 0.7, .tx_bias_ma = 7.5});
    t.temperature_thresholds = {.high_alarm = 75, .low_alarm = -5, .high_warning = 70, .low_warning = 0};
    t.rx_power_thresholds = {.high_alarm = 3.4674, .low_alarm = 0.0363, .high_warning = 2.1878, .low_warning = 0.0724};
    return t;
}

}  // namespace

// Receive power under the module's own levels: a warning under the low warning level, critical
// under the low alarm, naming the lanes in dBm; lanes the link does not use are not judged.
TEST(Rules, ModuleRxPowerLowUsesTheModulesOwnLevels) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    l->module = healthy_optic();
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "module_rx_power_low", "enp1s0f0np0"));

    l->module->lanes[2].rx_power_mw = 0.05;  // -13.01 dBm: under the warning (0.0724), over the alarm
    auto f = find(evaluate_rules(s, spark_config()), "module_rx_power_low", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "lane 3 -13.01 dBm, under the module's low warning level of -11.40 dBm")) << f->summary;
    EXPECT_TRUE(has(f->summary, "QSFP28 module NVIDIA MMA1B00-C100D")) << f->summary;
    EXPECT_TRUE(has(f->action, "`ethtool -m enp1s0f0np0`")) << f->action;
    EXPECT_EQ(f->details.at("serial"), "MT2233FT01234");

    l->module->lanes[0].rx_power_mw = 0.0;  // dark lane: under the alarm
    f = find(evaluate_rules(s, spark_config()), "module_rx_power_low", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_TRUE(has(f->summary, "lane 1 no light, lane 3 -13.01 dBm")) << f->summary;
    EXPECT_EQ(f->details.at("level"), "low_alarm");

    // The link runs on 2 of the 4 lanes (ethtool's lanes): only lanes 1 and 2 are judged.
    l->module->lanes[0].rx_power_mw = 0.8;
    l->phy = PhyLink{.speed_mbps = 50000, .lanes = 2};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "module_rx_power_low", "enp1s0f0np0"));

    // A module without diagnostics (passive copper), or one that could not be read: no verdict.
    l->phy.reset();
    l->module->diagnostics = false;
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "module_rx_power_low", "enp1s0f0np0"));
    l->module = Transceiver{.error = EOPNOTSUPP};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "module_rx_power_low", "enp1s0f0np0"));
}

TEST(Rules, ModuleTemperatureHighAtTheModulesLevels) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f1np1");
    ASSERT_NE(l, nullptr);
    l->module = healthy_optic();
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "module_temperature_high", "enp1s0f1np1"));
    l->module->temperature_c = 71.25;
    auto f = find(evaluate_rules(s, spark_config()), "module_temperature_high", "enp1s0f1np1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "is at 71.25 °C, at or over its high warning level of 70 °C")) << f->summary;
    l->module->temperature_c = 75;
    f = find(evaluate_rules(s, spark_config()), "module_temperature_high", "enp1s0f1np1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::critical);
    EXPECT_EQ(f->details.at("level"), "high_alarm");
    // Without levels in the module (no page 3), nothing to judge against.
    l->module->temperature_thresholds = {};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "module_temperature_high", "enp1s0f1np1"));
}

// The bit error rate before FEC over the counter window (5 minutes here): from corrected bits
// where counted, else from corrected codewords as a lower bound, over the negotiated speed.
TEST(Rules, FecCorrectedHighIsTheBitErrorRateBeforeFec) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    auto c = spark_config();
    c.thresholds.counter_window = std::chrono::minutes(5);
    l->phy = PhyLink{.speed_mbps = 100000, .fec_active = "RS", .fec_corrected_blocks_lanes = {10, 9000000, 12, 8}};
    // 100 Gb/s for 300 s is 3e13 bits: 2.9e7 corrected bits is 9.7e-7, under 1e-6.
    l->driver_stat_increase = {{"fec_corrected_bits", 29'000'000}, {"fec_corrected_blocks", 9'000'030}};
    EXPECT_FALSE(find(evaluate_rules(s, c), "fec_corrected_high", "enp1s0f0np0"));
    l->driver_stat_increase["fec_corrected_bits"] = 31'000'000;  // 1.03e-6
    auto f = find(evaluate_rules(s, c), "fec_corrected_high", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "corrected 31000000 bit errors in the last 5 minutes: a bit error rate before FEC of "
                                "1.0e-06, over 1.0e-06"))
        << f->summary;
    EXPECT_EQ(f->details.at("counted"), "corrected_bits");
    EXPECT_EQ(f->details.at("corrected_per_lane"), "0=10,1=9000000,2=12,3=8");
    EXPECT_TRUE(has(f->action, "`ethtool -m enp1s0f0np0`")) << f->action;

    // Without a bit count, codewords give a lower bound and say so.
    l->driver_stat_increase = {{"fec_corrected_blocks", 60'000'000}};  // 2.0e-6 at least
    f = find(evaluate_rules(s, c), "fec_corrected_high", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "60000000 codewords in the last 5 minutes: a bit error rate before FEC of at least "
                                "2.0e-06"))
        << f->summary;
    // The threshold is the operator's; no speed (link down), no rate.
    c.thresholds.pre_fec_ber = 1e-5;
    EXPECT_FALSE(find(evaluate_rules(s, c), "fec_corrected_high", "enp1s0f0np0"));
    c.thresholds.pre_fec_ber = 1e-6;
    l->phy->speed_mbps.reset();
    EXPECT_FALSE(find(evaluate_rules(s, c), "fec_corrected_high", "enp1s0f0np0"));
}

// A 100G QSFP28 (4 lanes at 25.78 Gb/s) that negotiated 40G on 4 lanes, or 50G on 2: the
// module's rate per lane is taken at the Ethernet lane speed under it (25G), so 100G is fine.
TEST(Rules, LinkSpeedBelowModule) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f1np1");
    ASSERT_NE(l, nullptr);
    l->module = Transceiver{.spec = "SFF-8636",
                            .type = "QSFP28",
                            .vendor = "NVIDIA",
                            .part_number = "MCP1600-C003",
                            .nominal_lane_gbps = 25.75,
                            .media_lanes = 4};
    l->phy = PhyLink{.speed_mbps = 100000, .lanes = 4};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "link_speed_below_module", "enp1s0f1np1"));
    l->phy->speed_mbps = 50000;
    l->phy->lanes = 2;
    auto f = find(evaluate_rules(s, spark_config()), "link_speed_below_module", "enp1s0f1np1");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "enp1s0f1np1 negotiated 50 Gb/s on 2 lanes while its QSFP28 module NVIDIA "
                                "MCP1600-C003 is made for 100 Gb/s (4 lanes of 25 Gb/s)"))
        << f->summary;
    EXPECT_TRUE(has(f->action, "`ethtool enp1s0f1np1`")) << f->action;
    // CMIS modules state applications, not a rate per lane: the fastest one is what the module
    // is made for; without a known one there is nothing to judge. Nor a link without speed.
    l->module->nominal_lane_gbps.reset();
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "link_speed_below_module", "enp1s0f1np1"));
    l->module->spec = "CMIS";
    l->module->type = "QSFP112";
    l->module->fastest_application = "200GAUI-4 C2M";
    l->module->fastest_application_gbps = 200;
    l->phy->speed_mbps = 100000;
    f = find(evaluate_rules(s, spark_config()), "link_speed_below_module", "enp1s0f1np1");
    ASSERT_TRUE(f);
    EXPECT_TRUE(has(f->summary, "negotiated 100 Gb/s on 2 lanes while its QSFP112 module NVIDIA MCP1600-C003 is "
                                "made for 200 Gb/s (its fastest application, 200GAUI-4 C2M)"))
        << f->summary;
    EXPECT_EQ(f->details.at("module_application"), "200GAUI-4 C2M");
    l->phy->speed_mbps = 200000;
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "link_speed_below_module", "enp1s0f1np1"));
    l->module->nominal_lane_gbps = 25.75;
    l->phy->speed_mbps.reset();
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "link_speed_below_module", "enp1s0f1np1"));
}

// Frames with a bad FCS inside the counter window (the eth-mac group's counter, joined into the
// driver's statistics by its group/name): a warning naming how many, with the symbol errors.
TEST(Rules, FcsErrorsFromTheStandardGroups) {
    auto s = healthy_spark();
    Link* l = link_named(s, "enp1s0f0np0");
    ASSERT_NE(l, nullptr);
    l->driver_stat_increase = {{"eth-mac/FrameCheckSequenceErrors", 0}, {"eth-phy/SymbolErrorDuringCarrier", 0}};
    EXPECT_FALSE(find(evaluate_rules(s, spark_config()), "fcs_errors", "enp1s0f0np0"));
    l->driver_stat_increase["eth-mac/FrameCheckSequenceErrors"] = 7;
    l->driver_stat_increase["eth-phy/SymbolErrorDuringCarrier"] = 40;
    auto f = find(evaluate_rules(s, spark_config()), "fcs_errors", "enp1s0f0np0");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_TRUE(has(f->summary, "enp1s0f0np0 received 7 frames with a bad checksum (FCS) in the last")) << f->summary;
    EXPECT_EQ(f->details.at("symbol_errors_increase"), "40");
}
