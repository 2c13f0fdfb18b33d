// The node's probe budget on an injected clock: the runs bound, the bytes bound, the sliding
// minute, the sides, and a reload's new limits.
#include <gtest/gtest.h>

#include <chrono>

#include "probes/budget.hpp"

using namespace rocewatch;
using namespace std::chrono_literals;

namespace {

struct BudgetTest : ::testing::Test {
    SteadyClock::time_point now = SteadyClock::time_point{} + 1000h;
    ProbeBudget make(uint32_t runs, uint64_t bytes) {
        return ProbeBudget({.runs_per_minute = runs, .bytes_per_minute = bytes}, [this] { return now; });
    }
};

TEST_F(BudgetTest, RunsAreBoundedOverAnySixtySeconds) {
    auto b = make(3, 0);
    EXPECT_FALSE(b.admit(BudgetSide::own));
    now += 10s;
    EXPECT_FALSE(b.admit(BudgetSide::peer));
    now += 10s;
    EXPECT_FALSE(b.admit(BudgetSide::own));
    const auto why = b.admit(BudgetSide::peer);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("3 runs in the last minute (max_runs_per_minute 3)"), std::string::npos) << *why;
    // 40 s on, the first run (60 s old) has left the window: one more fits, not two.
    now += 40s;
    EXPECT_FALSE(b.admit(BudgetSide::own));
    EXPECT_TRUE(b.admit(BudgetSide::own));
    const auto st = b.stats();
    EXPECT_EQ(st.runs_last_minute, 3u);
    EXPECT_EQ(st.admitted[0], 3u);
    EXPECT_EQ(st.admitted[1], 1u);
    EXPECT_EQ(st.refused[0], 1u);
    EXPECT_EQ(st.refused[1], 1u);
}

TEST_F(BudgetTest, BytesSpentRefuseTheNextRunUntilTheyAge) {
    auto b = make(0, 1000);
    EXPECT_FALSE(b.admit(BudgetSide::own));
    b.charge(BudgetSide::own, 600);
    EXPECT_FALSE(b.admit(BudgetSide::peer)) << "600 of 1000 bytes: room left";
    b.charge(BudgetSide::peer, 600);  // known only afterwards: the minute may end over
    const auto why = b.admit(BudgetSide::own);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("1200 bytes in the last minute"), std::string::npos) << *why;
    now += 59s;
    EXPECT_TRUE(b.admit(BudgetSide::own));
    now += 1s;
    EXPECT_FALSE(b.admit(BudgetSide::own)) << "a minute on, the bytes have aged out";
    const auto st = b.stats();
    EXPECT_EQ(st.bytes[0], 600u);
    EXPECT_EQ(st.bytes[1], 600u);
    EXPECT_EQ(st.bytes_last_minute, 0u);
}

TEST_F(BudgetTest, ZeroIsNoLimitAndALongGapForgetsEverything) {
    auto b = make(0, 0);
    for (int i = 0; i < 10000; ++i) ASSERT_FALSE(b.admit(BudgetSide::peer));
    EXPECT_EQ(b.stats().runs_last_minute, 10000u);
    now += 24h;
    EXPECT_EQ(b.stats().runs_last_minute, 0u) << "slots from a day ago are not this minute's";
}

TEST_F(BudgetTest, NewLimitsTakeEffectAtOnce) {
    auto b = make(1, 0);
    EXPECT_FALSE(b.admit(BudgetSide::own));
    EXPECT_TRUE(b.admit(BudgetSide::own));
    b.set_limits({.runs_per_minute = 5, .bytes_per_minute = 0});
    EXPECT_FALSE(b.admit(BudgetSide::own));
    EXPECT_EQ(b.stats().max_runs_per_minute, 5u);
}

TEST(BudgetLimits, ComeFromTheProbesSection) {
    ProbesConfig p;
    EXPECT_EQ(budget_limits(p).runs_per_minute, 600u);
    EXPECT_EQ(budget_limits(p).bytes_per_minute, 1ull << 40);
}

// Bulk marks: counted while held, released once whichever way they end (reset, move, scope);
// a moved-from mark releases nothing.
TEST_F(BudgetTest, BulkIsMovingWhileAnyMarkIsHeld) {
    auto b = make(0, 0);
    EXPECT_FALSE(b.moving_bulk());
    {
        auto ours = b.bulk();
        EXPECT_TRUE(b.moving_bulk());
        auto peers = b.bulk();
        ours.reset();
        EXPECT_TRUE(b.moving_bulk()) << "the other mark still holds";
        ProbeBudget::Bulk moved = std::move(peers);
        peers.reset();  // moved from: releases nothing
        EXPECT_TRUE(b.moving_bulk());
        ProbeBudget::Bulk other = b.bulk();
        other = std::move(moved);  // releases other's own mark, takes moved's
        EXPECT_TRUE(b.moving_bulk());
    }
    EXPECT_FALSE(b.moving_bulk()) << "every mark released at the end of its scope";
}

}  // namespace
