// The --once text report: verdict from node alerts only, every alert with its action, colour on request.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>

#include "api/text_view.hpp"

using namespace rocewatch;

namespace {

Snapshot sample() {
    Snapshot s;
    s.host.hostname = "spark-a";
    s.alerts.push_back({.rule = "port_down",
                        .object = "rocep1s0f0/1",
                        .severity = Severity::critical,
                        .state = AlertState::firing,
                        .scope = Scope::node,
                        .summary = "RDMA port rocep1s0f0/1 is DOWN",
                        .action = "Check the cable."});
    s.alerts.push_back({.rule = "peer_unreachable",
                        .object = "spark-b",
                        .severity = Severity::critical,
                        .state = AlertState::firing,
                        .scope = Scope::peer,
                        .summary = "spark-b does not answer",
                        .action = "Check spark-b."});
    return s;
}

}  // namespace

TEST(TextView, AlertsWithTheirActionsAndTheNodeVerdict) {
    const auto text = api::once_text(sample(), false);
    EXPECT_EQ(text,
              "rocewatch spark-a: CRITICAL (1 node alert, 1 about peers or paths, not counted)\n"
              "\nCRITICAL  port_down  rocep1s0f0/1\n  RDMA port rocep1s0f0/1 is DOWN\n  action: Check the cable.\n"
              "\nCRITICAL  peer_unreachable  spark-b  [peer]\n  spark-b does not answer\n  action: Check spark-b.\n");
    EXPECT_EQ(text.find('\033'), std::string::npos) << "no escape codes without colour";
}

// A netdev may be named with an ESC in it, and a summary quotes what a sysfs file held: neither
// reaches the terminal as a command. The rules' own UTF-8 (a degree sign) stays.
TEST(TextView, ControlBytesInNamesAndSummariesAreShownNotSentToTheTerminal) {
    auto s = sample();
    s.host.hostname = "node\033]0;pwned\007";
    s.alerts[0].object = "eth\033[2J0";
    s.alerts[0].summary = "module at 71 \u00b0C, value \xc2\x9b"
                          "6n and \xff";
    s.alerts[0].action = "line\rforged";
    const auto text = api::once_text(s, false);
    EXPECT_EQ(text.find('\033'), std::string::npos) << text;
    EXPECT_EQ(text.find('\r'), std::string::npos) << text;
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
    EXPECT_NE(text.find("rocewatch node\\x1b]0;pwned\\x07: CRITICAL"), std::string::npos) << text;
    EXPECT_NE(text.find("port_down  eth\\x1b[2J0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("module at 71 \u00b0C, value \\x9b6n and \\xff\n"), std::string::npos) << text;
    EXPECT_NE(text.find("action: line\\x0dforged\n"), std::string::npos) << text;
}

TEST(TextView, PeerAlertsAloneLeaveTheNodeHealthy) {
    auto s = sample();
    s.alerts.erase(s.alerts.begin());
    const auto text = api::once_text(s, false);
    EXPECT_EQ(text.substr(0, text.find('\n')),
              "rocewatch spark-a: HEALTHY (0 node alerts, 1 about peers or paths, not counted)");
}

TEST(TextView, ColourBySeverity) {
    const auto text = api::once_text(sample(), true);
    EXPECT_NE(text.find("\033[1;31mCRITICAL\033[0m  port_down"), std::string::npos) << text;
}

TEST(TextView, NoColourUnlessATerminalAndNoColorUnset) {
    ::setenv("NO_COLOR", "1", 1);
    EXPECT_FALSE(api::want_color(0));
    ::unsetenv("NO_COLOR");
    // A pipe is not a terminal.
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    EXPECT_FALSE(api::want_color(fds[1]));
    ::close(fds[0]);
    ::close(fds[1]);
}
