// Journal priorities, alert transition lines, the stderr "<N>" form and the once-per-key limiter.
#include <gtest/gtest.h>

#include <spdlog/logger.h>

#include <string>

#include "daemon/logging/journal.hpp"

using namespace rocewatch;
using namespace rocewatch::logging;

namespace {

AlertTransition transition(Severity sev, AlertState from, AlertState to) {
    return {.rule = "port_down",
            .object = "rocep1s0f0/1",
            .severity = sev,
            .from = from,
            .to = to,
            .summary = "RDMA port rocep1s0f0/1 is DOWN",
            .scope = Scope::node};
}

}  // namespace

TEST(Journal, SpdlogLevelsMapToSyslogPriorities) {
    EXPECT_EQ(priority_of(spdlog::level::trace), 7);
    EXPECT_EQ(priority_of(spdlog::level::debug), 7);
    EXPECT_EQ(priority_of(spdlog::level::info), 6);
    EXPECT_EQ(priority_of(spdlog::level::warn), 4);
    EXPECT_EQ(priority_of(spdlog::level::err), 3);
    EXPECT_EQ(priority_of(spdlog::level::critical), 2);
}

TEST(Journal, TransitionPriorityFollowsSeverityAndState) {
    using S = AlertState;
    EXPECT_EQ(transition_log(transition(Severity::critical, S::pending, S::firing)).priority, kErr);
    EXPECT_EQ(transition_log(transition(Severity::critical, S::inactive, S::firing)).level, spdlog::level::err);
    EXPECT_EQ(transition_log(transition(Severity::warning, S::pending, S::firing)).priority, kWarning);
    EXPECT_EQ(transition_log(transition(Severity::warning, S::pending, S::firing)).level, spdlog::level::warn);
    EXPECT_EQ(transition_log(transition(Severity::info, S::pending, S::firing)).priority, kInfo);
    EXPECT_EQ(transition_log(transition(Severity::critical, S::firing, S::resolved)).priority, kNotice);
    EXPECT_EQ(transition_log(transition(Severity::critical, S::inactive, S::pending)).priority, kInfo);
    EXPECT_EQ(transition_log(transition(Severity::critical, S::pending, S::inactive)).priority, kInfo);
    // An escalation while firing is logged at the new severity's priority.
    EXPECT_EQ(transition_log(transition(Severity::critical, S::firing, S::firing)).priority, kErr);
}

TEST(Journal, TransitionMessageNamesRuleObjectAndSummary) {
    const auto m = transition_message(transition(Severity::critical, AlertState::pending, AlertState::firing));
    EXPECT_EQ(m, "alert port_down rocep1s0f0/1 firing (critical, node): RDMA port rocep1s0f0/1 is DOWN");
    EXPECT_EQ(object_device("rocep1s0f0/1:symbol_error"), "rocep1s0f0");
    EXPECT_EQ(object_device("bond0"), "bond0");
}

// The object and summary quote netdev names, sysfs values and a peer's hello: a newline in
// them forged a whole log line, an ESC sent a terminal command to whoever read the log.
TEST(Journal, TransitionMessageCannotForgeALineOrATerminalCommand) {
    auto t = transition(Severity::warning, AlertState::pending, AlertState::firing);
    t.object = "spark-b/rail0\n[critical] FORGED";
    t.summary = "gid types RoCE v2\n[2026-11-29 00:00:00.000] [rocewatchd] [critical] FORGED\033[2J at 71 \u00b0C";
    const auto m = transition_message(t);
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.find('\033'), std::string::npos) << m;
    EXPECT_EQ(m, "alert port_down spark-b/rail0\\x0a[critical] FORGED firing (warning, node): gid types RoCE "
                 "v2\\x0a[2026-11-29 00:00:00.000] [rocewatchd] [critical] FORGED\\x1b[2J at 71 \u00b0C");
}

TEST(Journal, WithoutTheSocketEveryLineCarriesItsPriorityPrefix) {
    spdlog::logger log("t", make_journal_sink("rocewatchd", ""));
    log.set_level(spdlog::level::debug);
    testing::internal::CaptureStderr();
    log.error("config reload rejected: x");
    log.warn("two\nlines");
    log.debug("quiet");
    {
        Fields f({{"RULE", "port_down"}}, kNotice);
        log.info("alert port_down resolved");
    }
    log.info("after");
    log.flush();
    const std::string out = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out, "<3>config reload rejected: x\n<4>two lines\n<7>quiet\n<5>alert port_down resolved\n<6>after\n");
}

TEST(Journal, OnceLimiterLetsEachKeyThroughOnceAndCapsARound) {
    OnceLimiter lim(2, 3);
    lim.new_round();
    EXPECT_TRUE(lim.admit("a"));
    EXPECT_FALSE(lim.admit("a")) << "once per key";
    EXPECT_TRUE(lim.admit("b"));
    EXPECT_FALSE(lim.admit("c")) << "two new keys a round";
    EXPECT_EQ(lim.held_back(), 1u);
    lim.new_round();
    EXPECT_EQ(lim.held_back(), 0u);
    EXPECT_FALSE(lim.admit("a"));
    EXPECT_TRUE(lim.admit("c")) << "a key held back gets through in a later round";
    EXPECT_FALSE(lim.admit("d")) << "three keys remembered at most: no more logging, no more memory";
    EXPECT_EQ(lim.held_back(), 0u);
}
