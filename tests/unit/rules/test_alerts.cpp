// The alert state machine: for durations, self-clearing, come-backs, history bound, persistence.
#include <gtest/gtest.h>

#include "daemon/rules/alerts.hpp"

using namespace rocewatch;
using std::chrono::seconds;

namespace {

const TimePoint t0 = TimePoint{} + std::chrono::hours(24 * 365 * 50);

Finding finding(const std::string& rule, const std::string& object, Severity sev = Severity::warning,
                const std::string& summary = "something is wrong") {
    return {.rule = rule,
            .object = object,
            .severity = sev,
            .summary = summary,
            .action = "fix it",
            .details = {{"actual", "1"}}};
}

Config with(const std::string& rule, seconds for_duration, seconds clear_after) {
    Config c;
    c.rules[rule].for_duration = for_duration;
    c.rules[rule].clear_after = clear_after;
    return c;
}

std::vector<std::string> transitions(const AlertTracker& t) {
    std::vector<std::string> out;
    for (const auto& h : *t.history()) out.push_back(h.object + ":" + to_string(h.from) + "->" + to_string(h.to));
    return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST(Alerts, ForZeroFiresAtOnce) {
    AlertTracker t;
    t.update({finding("mtu_low", "enp1s0f0np0")}, Config{}, t0);
    auto a = t.active();
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].state, AlertState::firing);
    EXPECT_EQ(a[0].since, t0);
    EXPECT_EQ(a[0].first_seen, t0);
    EXPECT_EQ(transitions(t), V{"enp1s0f0np0:inactive->firing"});
}

TEST(Alerts, PendingThenFiringAfterFor) {
    AlertTracker t;
    const Config c = with("port_down", seconds(30), seconds(30));
    const auto f = finding("port_down", "rocep1s0f1/1", Severity::critical);
    t.update({f}, c, t0);
    EXPECT_EQ(t.active().at(0).state, AlertState::pending);
    t.update({f}, c, t0 + seconds(25));
    EXPECT_EQ(t.active().at(0).state, AlertState::pending);
    t.update({f}, c, t0 + seconds(30));
    const auto a = t.active().at(0);
    EXPECT_EQ(a.state, AlertState::firing);
    EXPECT_EQ(a.since, t0 + seconds(30));
    EXPECT_EQ(a.first_seen, t0);
    EXPECT_EQ(a.last_seen, t0 + seconds(30));
    EXPECT_EQ(transitions(t), (V{"rocep1s0f1/1:inactive->pending", "rocep1s0f1/1:pending->firing"}));
}

TEST(Alerts, ClearsItselfAfterStableRecovery) {
    AlertTracker t;
    const Config c = with("link_flapping", seconds(0), seconds(30));
    t.update({finding("link_flapping", "enp1s0f1np1")}, c, t0);
    // First seen missing 10 s later: absence counts from there, since nothing was known between.
    t.update({}, c, t0 + seconds(10));
    ASSERT_EQ(t.active().size(), 1u) << "absent 0 s of the 30 s needed";
    EXPECT_EQ(t.active()[0].state, AlertState::firing);
    t.update({}, c, t0 + seconds(39));
    EXPECT_EQ(t.active().size(), 1u) << "absent 29 s of the 30 s needed";
    t.update({}, c, t0 + seconds(40));
    EXPECT_TRUE(t.active().empty());
    EXPECT_EQ(transitions(t), (V{"enp1s0f1np1:inactive->firing", "enp1s0f1np1:firing->resolved"}));
    EXPECT_EQ(t.history()->back().at, t0 + seconds(40));
}

TEST(Alerts, AbsenceCountsFromTheFirstCollectionThatMissesIt) {
    // A condition that lasted a long quiet time and was then fixed still gets its full
    // clear_after after the fix, however long ago it was last observed.
    AlertTracker t;
    const Config c = with("mtu_low", seconds(0), seconds(1));
    t.update({finding("mtu_low", "enp1s0f1np1")}, c, t0);
    t.update({}, c, t0 + seconds(60));
    EXPECT_EQ(t.active().size(), 1u);
    t.update({}, c, t0 + seconds(61));
    EXPECT_TRUE(t.active().empty());
}

TEST(Alerts, ComingBackInsideClearAfterKeepsTheAlert) {
    AlertTracker t;
    const Config c = with("link_flapping", seconds(0), seconds(30));
    const auto f = finding("link_flapping", "enp1s0f1np1");
    t.update({f}, c, t0);
    for (int i = 1; i <= 20; ++i)  // present, absent, present, ... for 200 s
        t.update(i % 2 ? std::vector<Finding>{} : std::vector<Finding>{f}, c, t0 + seconds(10 * i));
    const auto a = t.active();
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].state, AlertState::firing);
    EXPECT_EQ(a[0].since, t0);
    EXPECT_EQ(t.history()->size(), 1u) << "no flapping alert";
}

TEST(Alerts, FlickeringPendingStillFires) {
    AlertTracker t;
    const Config c = with("congestion", seconds(60), seconds(30));
    const auto f = finding("congestion", "rocep1s0f0/1");
    for (int i = 0; i <= 6; ++i)
        t.update(i % 2 ? std::vector<Finding>{} : std::vector<Finding>{f}, c, t0 + seconds(10 * i));
    // present at 0, 20, 40, 60: first_seen stays t0, so it fires at 60.
    ASSERT_EQ(t.active().size(), 1u);
    EXPECT_EQ(t.active()[0].state, AlertState::firing);
    EXPECT_EQ(t.active()[0].since, t0 + seconds(60));
}

TEST(Alerts, PendingThatGoesAwayIsDroppedAndRecorded) {
    AlertTracker t;
    const Config c = with("congestion", seconds(60), seconds(30));
    t.update({finding("congestion", "rocep1s0f0/1")}, c, t0);
    t.update({}, c, t0 + seconds(10));
    EXPECT_EQ(t.active().size(), 1u) << "a pending alert gets the clear_after grace too";
    t.update({}, c, t0 + seconds(40));
    EXPECT_TRUE(t.active().empty());
    EXPECT_EQ(transitions(t), (V{"rocep1s0f0/1:inactive->pending", "rocep1s0f0/1:pending->inactive"}));
}

TEST(Alerts, LatestFindingWinsAndEscalationIsRecorded) {
    AlertTracker t;
    const Config c;
    t.update({finding("bond_slave_down", "enp1s0f1np1", Severity::warning, "1 of 2 up")}, c, t0);
    t.update({finding("bond_slave_down", "enp1s0f1np1", Severity::critical, "no link left")}, c, t0 + seconds(5));
    const auto a = t.active().at(0);
    EXPECT_EQ(a.severity, Severity::critical);
    EXPECT_EQ(a.summary, "no link left");
    EXPECT_EQ(a.since, t0);
    ASSERT_EQ(t.history()->size(), 2u);
    EXPECT_EQ(t.history()->back().from, AlertState::firing);
    EXPECT_EQ(t.history()->back().to, AlertState::firing);
    EXPECT_EQ(t.history()->back().severity, Severity::critical);
}

TEST(Alerts, ActiveSortedBySeverityThenRuleThenObject) {
    AlertTracker t;
    t.update({finding("mtu_low", "b"), finding("port_down", "z", Severity::critical), finding("mtu_low", "a"),
              finding("congestion", "x"), finding("gid_on_bond", "y", Severity::critical)},
             Config{}, t0);
    std::vector<std::string> order;
    for (const auto& a : t.active()) order.push_back(a.rule + "/" + a.object);
    EXPECT_EQ(order, (V{"gid_on_bond/y", "port_down/z", "congestion/x", "mtu_low/a", "mtu_low/b"}));
}

TEST(Alerts, DisabledRuleDropsItsAlertsAtOnce) {
    AlertTracker t;
    Config c;
    t.update({finding("peermem_missing", "nvidia_peermem")}, c, t0);
    c.rules["peermem_missing"].enabled = false;
    t.update({}, c, t0 + seconds(1));
    EXPECT_TRUE(t.active().empty());
    EXPECT_EQ(t.history()->back().to, AlertState::resolved);
}

TEST(Alerts, HistoryIsBoundedOldestFirst) {
    AlertTracker t;
    Config c = with("mtu_low", seconds(0), seconds(0));
    c.daemon.history_limit = 3;
    for (int i = 0; i < 5; ++i) {
        t.update({finding("mtu_low", "if" + std::to_string(i))}, c, t0 + seconds(2 * i));
        t.update({}, c, t0 + seconds(2 * i + 1));
    }
    EXPECT_EQ(transitions(t), (V{"if3:firing->resolved", "if4:inactive->firing", "if4:firing->resolved"}));
}

TEST(Alerts, HistorySnapshotsAreImmutable) {
    AlertTracker t;
    t.update({finding("mtu_low", "a")}, Config{}, t0);
    auto before = t.history();
    t.update({finding("mtu_low", "b")}, Config{}, t0 + seconds(1));
    EXPECT_EQ(before->size(), 1u);
    EXPECT_EQ(t.history()->size(), 2u);
}

TEST(Alerts, JsonRoundTrip) {
    AlertTracker t;
    const Config c = with("port_down", seconds(30), seconds(30));
    t.update({finding("port_down", "rocep1s0f1/1", Severity::critical), finding("mtu_low", "enp1s0f0np0")}, c, t0);
    t.update({finding("mtu_low", "enp1s0f0np0")}, c, t0 + seconds(5));

    const auto j = t.to_json();
    const AlertTracker back = AlertTracker::from_json(nlohmann::json::parse(j.dump()), 1000);
    const auto a = t.active();
    const auto b = back.active();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].rule, b[i].rule);
        EXPECT_EQ(a[i].object, b[i].object);
        EXPECT_EQ(a[i].severity, b[i].severity);
        EXPECT_EQ(a[i].state, b[i].state);
        EXPECT_EQ(a[i].summary, b[i].summary);
        EXPECT_EQ(a[i].action, b[i].action);
        EXPECT_EQ(a[i].details, b[i].details);
        EXPECT_EQ(a[i].since, b[i].since);
        EXPECT_EQ(a[i].first_seen, b[i].first_seen);
        EXPECT_EQ(a[i].last_seen, b[i].last_seen);
    }
    EXPECT_EQ(transitions(t), transitions(back));
    EXPECT_EQ(back.to_json(), j);

    // The restored tracker carries on: the pending port_down fires once its 30 s are up.
    AlertTracker cont = back;
    cont.update({finding("port_down", "rocep1s0f1/1", Severity::critical)}, c, t0 + seconds(30));
    EXPECT_EQ(cont.active().at(0).state, AlertState::firing);
}

TEST(Alerts, FromJsonBoundsHistoryByTheGivenLimit) {
    AlertTracker t;
    const Config c = with("mtu_low", seconds(0), seconds(0));
    for (int i = 0; i < 4; ++i) t.update({finding("mtu_low", "if" + std::to_string(i))}, c, t0 + seconds(i));
    EXPECT_EQ(AlertTracker::from_json(t.to_json(), 2).history()->size(), 2u);
}

TEST(Alerts, FromJsonRejectsWhatItDoesNotUnderstand) {
    EXPECT_THROW(AlertTracker::from_json(nlohmann::json::array(), 10), std::runtime_error);
    EXPECT_THROW(AlertTracker::from_json(
                     {{"version", 99}, {"alerts", nlohmann::json::array()}, {"history", nlohmann::json::array()}}, 10),
                 std::runtime_error);
    auto j = AlertTracker().to_json();
    j["alerts"].push_back({{"rule", "mtu_low"}});  // missing fields
    EXPECT_THROW(AlertTracker::from_json(j, 10), std::runtime_error);
    j = AlertTracker().to_json();
    j["alerts"].push_back({{"rule", "mtu_low"},
                           {"object", "x"},
                           {"severity", "fatal"},
                           {"state", "firing"},
                           {"since_ms", 0},
                           {"first_seen_ms", 0},
                           {"last_seen_ms", 0}});
    EXPECT_THROW(AlertTracker::from_json(j, 10), std::runtime_error);
    // Numbers with no int (converting them would be undefined) are refused like the rest.
    for (const auto& bad : {nlohmann::json(1e300), nlohmann::json(1.0), nlohmann::json(uint64_t{1} << 63)}) {
        j = AlertTracker().to_json();
        j["version"] = bad;
        EXPECT_THROW(AlertTracker::from_json(j, 10), std::runtime_error) << bad.dump();
    }
    for (const auto& bad :
         {nlohmann::json(2.5e120), nlohmann::json(int64_t{1} << 62), nlohmann::json(-(int64_t{1} << 62))}) {
        j = AlertTracker().to_json();
        j["alerts"].push_back({{"rule", "mtu_low"},
                               {"object", "x"},
                               {"severity", "warning"},
                               {"state", "firing"},
                               {"since_ms", bad},
                               {"first_seen_ms", 0},
                               {"last_seen_ms", 0}});
        EXPECT_THROW(AlertTracker::from_json(j, 10), std::runtime_error) << bad.dump();
    }
}

// The scope travels with the alert into history and the state file; a file written before
// alerts had a scope gets the rule's.
TEST(Alerts, ScopeIsKeptAndOldStateFilesTakeTheRulesScope) {
    AlertTracker t;
    auto f = finding("peer_unreachable", "spark-b", Severity::critical);
    f.scope = Scope::peer;
    t.update({f}, Config{}, t0);
    EXPECT_EQ(t.active().at(0).scope, Scope::peer);
    EXPECT_EQ(t.history()->at(0).scope, Scope::peer);
    auto j = t.to_json();
    EXPECT_EQ(j["alerts"][0]["scope"], "peer");
    EXPECT_EQ(AlertTracker::from_json(j, 10).active().at(0).scope, Scope::peer);
    j["alerts"][0].erase("scope");
    j["history"][0].erase("scope");
    const auto old = AlertTracker::from_json(j, 10);
    EXPECT_EQ(old.active().at(0).scope, Scope::peer) << "peer_unreachable's own scope";
    EXPECT_EQ(old.history()->at(0).scope, Scope::peer);
    j["alerts"][0]["scope"] = "galaxy";
    EXPECT_THROW(AlertTracker::from_json(j, 10), std::runtime_error);
}
