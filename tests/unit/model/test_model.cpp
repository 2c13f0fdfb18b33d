// Model helpers: health roll-up and string forms.
#include <gtest/gtest.h>

#include "model/config.hpp"
#include "model/snapshot.hpp"

using namespace rocewatch;

TEST(Model, HealthIsWorstFiringAlert) {
    Snapshot s;
    EXPECT_EQ(overall_health(s), Health::healthy);
    s.alerts.push_back({.rule = "mtu_low", .severity = Severity::warning, .state = AlertState::firing});
    EXPECT_EQ(overall_health(s), Health::warning);
    s.alerts.push_back({.rule = "port_down", .severity = Severity::critical, .state = AlertState::pending});
    EXPECT_EQ(overall_health(s), Health::warning) << "pending alerts do not count yet";
    s.alerts.back().state = AlertState::firing;
    EXPECT_EQ(overall_health(s), Health::critical);
}

TEST(Model, SeverityRoundTrip) {
    for (auto sev : {Severity::info, Severity::warning, Severity::critical})
        EXPECT_EQ(severity_from_string(to_string(sev)), sev);
    EXPECT_FALSE(severity_from_string("fatal"));
}

TEST(Model, RuleSettingsDefaultWhenAbsent) {
    Config c;
    c.rules["mtu_low"].enabled = false;
    EXPECT_FALSE(rule_settings(c, "mtu_low").enabled);
    EXPECT_TRUE(rule_settings(c, "port_down").enabled);
    EXPECT_EQ(all_rule_ids().size(), 23u);
}
