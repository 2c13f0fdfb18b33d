// DutyBudget: a share of the time for costly work, with a few runs back to back allowed.
#include <gtest/gtest.h>

#include "daemon/core/duty_budget.hpp"

using rocewatch::DutyBudget;
using namespace std::chrono_literals;

namespace {
const DutyBudget::TimePoint t0 = DutyBudget::TimePoint{} + 1000h;
}

TEST(DutyBudget, AllowsAFewRunsBackToBackThenItsShare) {
    DutyBudget b(0.1, 6);
    auto now = t0;
    int back_to_back = 0;
    while (b.allows(now) && back_to_back < 100) {
        now += 1s;  // each run takes a second
        b.spent(1s, now);
        ++back_to_back;
    }
    EXPECT_GE(back_to_back, 6) << "the first run is paid from a full bucket, five more fit in it";
    EXPECT_LE(back_to_back, 7) << "and one more with what they earned while running";
    // Kept busy for 1,000 s: a run whenever the budget allows, no more than a tenth of the time.
    const auto start = now;
    int runs = 0;
    while (now < start + 1000s) {
        const auto at = b.ready_at(now);
        ASSERT_GT(at, now) << "in debt after every run";
        now = at;
        ASSERT_TRUE(b.allows(now));
        now += 1s;
        b.spent(1s, now);
        ++runs;
    }
    EXPECT_GE(runs, 95);
    EXPECT_LE(runs, 101);
}

TEST(DutyBudget, AnIdleBucketFillsOnlyToItsBurst) {
    DutyBudget b(0.1, 3);
    auto now = t0;
    b.spent(2s, now);
    now += 24h;
    int runs = 0;
    while (b.allows(now)) {
        b.spent(2s, now);
        ++runs;
    }
    EXPECT_EQ(runs, 3);
    b.spent(2s, now);  // one that does not ask (the periodic refresh) is paid for all the same
    EXPECT_NEAR(std::chrono::duration<double>(b.ready_at(now) - now).count(), 20.001, 1e-6)
        << "2 s of debt at a tenth of a second a second";
}

TEST(DutyBudget, TheBurstFollowsTheLastRunsCost) {
    DutyBudget b(0.5, 4);
    auto now = t0;
    b.spent(10ms, now);  // cheap runs: a bucket of 40 ms
    now += 1h;
    b.spent(10ms, now);
    EXPECT_TRUE(b.allows(now));
    b.spent(1s, now);  // one costly run: in debt at once, whatever was saved from cheap ones
    EXPECT_FALSE(b.allows(now));
    EXPECT_LE(b.ready_at(now), now + 2s + 1ms);
    EXPECT_GT(b.ready_at(now), now + 1800ms);
}

// A run whose cost comes in two parts (the counter files, then the trends made from them) is
// paced as one run of their sum: half the runs of the read alone.
TEST(DutyBudget, ARunPaidInTwoPartsIsPacedByTheirSum) {
    DutyBudget one(0.1, 3), two(0.1, 3);
    auto now = t0;
    int runs_one = 0, runs_two = 0;
    for (int step = 0; step < 2000; ++step, now += 1s) {
        if (one.allows(now)) {
            one.spent(2s, now);
            ++runs_one;
        }
        if (two.allows(now)) {
            two.spent(1s, now);
            two.also_spent(1s, now);
            ++runs_two;
        }
    }
    EXPECT_EQ(runs_two, runs_one) << "the burst too holds runs of the whole";
    EXPECT_GE(runs_two, 95);
    EXPECT_LE(runs_two, 104);
}

// Runs the caller starts past the budget (the counters' freshness floor) are paid for, but the
// debt stops at one burst: once they stop, the budget allows again within a burst's refill,
// however many came before. Unbounded, 100 forced runs would have held it off for 9,000 s.
TEST(DutyBudget, RunsForcedPastTheBudgetLeaveADebtOfOneBurstAtMost) {
    DutyBudget b(0.01, 3);
    auto now = t0;
    for (int i = 0; i < 100; ++i) {  // 1 s runs every 10 s: ten times the share
        now += 10s;
        b.spent(1s, now);
    }
    EXPECT_FALSE(b.allows(now));
    EXPECT_LE(b.ready_at(now) - now, 301s) << "a burst (3 runs of 1 s) at 1% takes 300 s to earn";
    EXPECT_TRUE(b.allows(now + 301s));
    // Paid in two parts alike.
    b.spent(1s, now);
    b.also_spent(5s, now);
    EXPECT_LE(b.ready_at(now) - now, 1801s) << "the burst is now 3 runs of 6 s";
}
