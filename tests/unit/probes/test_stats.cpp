// perftest latency arithmetic and bandwidth, against cases computed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "probes/result.hpp"
#include "probes/stats.hpp"

using namespace rocewatch;

namespace {

std::vector<double> one_to(int n, unsigned seed = 7) {
    std::vector<double> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), 1.0);
    std::shuffle(v.begin(), v.end(), std::mt19937(seed));  // order must not matter
    return v;
}

}  // namespace

TEST(LatencyStats, TenSamplesDropTwoEvenMedian) {
    // sorted 1..10; used: 1..8 (m = 8)
    const auto s = latency_stats({5, 1, 9, 3, 7, 2, 8, 4, 6, 10});
    EXPECT_EQ(s.samples, 10u);
    EXPECT_EQ(s.used, 8u);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 10);                          // the true maximum, not perftest's sorted[m] (9)
    EXPECT_DOUBLE_EQ(s.typical, 4.5);                     // (sorted[4] + sorted[3]) / 2 = (5 + 4) / 2
    EXPECT_DOUBLE_EQ(s.mean, 4.5);                        // 36 / 8
    EXPECT_NEAR(s.stddev, std::sqrt(42.0 / 8.0), 1e-12);  // squared deviations sum to 42
    EXPECT_DOUBLE_EQ(s.p99, 9);                           // sorted[ceil(7.92)] = sorted[8]: a dropped sample
    EXPECT_DOUBLE_EQ(s.p99_9, 9);                         // sorted[ceil(7.992)] = sorted[8]
}

TEST(LatencyStats, OddUsedCountMedianIsMiddle) {
    // 1..205: m = 203, odd
    const auto s = latency_stats(one_to(205));
    EXPECT_EQ(s.used, 203u);
    EXPECT_DOUBLE_EQ(s.typical, 102);                                      // sorted[101]
    EXPECT_DOUBLE_EQ(s.mean, 102);                                         // mean of 1..203
    EXPECT_NEAR(s.stddev, std::sqrt((203.0 * 203.0 - 1.0) / 12.0), 1e-9);  // uniform 1..m
    EXPECT_DOUBLE_EQ(s.p99, 202);                                          // sorted[ceil(200.97)] = sorted[201]
    EXPECT_DOUBLE_EQ(s.p99_9, 204);                                        // sorted[ceil(202.797)] = sorted[203]
    EXPECT_DOUBLE_EQ(s.max, 205);
}

TEST(LatencyStats, ThousandUsedSamples) {
    // 1..1002: m = 1000
    const auto s = latency_stats(one_to(1002));
    EXPECT_EQ(s.used, 1000u);
    EXPECT_DOUBLE_EQ(s.typical, 500.5);  // (sorted[500] + sorted[499]) / 2
    EXPECT_DOUBLE_EQ(s.p99, 991);        // sorted[990]
    EXPECT_DOUBLE_EQ(s.p99_9, 1000);     // sorted[999]
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 1002);
}

TEST(LatencyStats, TinyInputsDoNotIndexPastTheEnd) {
    const auto e = latency_stats({});
    EXPECT_EQ(e.samples, 0u);
    EXPECT_EQ(e.used, 0u);
    EXPECT_EQ(e.typical, 0);

    const auto one = latency_stats({3e-6});
    EXPECT_EQ(one.used, 1u);
    EXPECT_DOUBLE_EQ(one.typical, 3e-6);
    EXPECT_DOUBLE_EQ(one.p99, 3e-6);  // ceil(0.99) = 1, clamped to the last index
    EXPECT_DOUBLE_EQ(one.stddev, 0);

    const auto two = latency_stats({4, 2});
    EXPECT_EQ(two.used, 2u);  // no tail dropped for n <= 2
    EXPECT_DOUBLE_EQ(two.typical, 3);
    EXPECT_DOUBLE_EQ(two.mean, 3);
    EXPECT_DOUBLE_EQ(two.stddev, 1);
    EXPECT_DOUBLE_EQ(two.p99, 4);

    const auto three = latency_stats({100, 1, 2});
    EXPECT_EQ(three.used, 1u);
    EXPECT_DOUBLE_EQ(three.typical, 1);
    EXPECT_DOUBLE_EQ(three.mean, 1);
    EXPECT_DOUBLE_EQ(three.p99, 2);  // sorted[1]
    EXPECT_DOUBLE_EQ(three.max, 100);
}

TEST(LatencyStats, PercentilesAreOrdered) {
    std::mt19937 rng(42);
    std::lognormal_distribution<double> dist(-11.0, 0.5);  // ~17 us, long tail
    std::vector<double> v(5000);
    for (auto& x : v) x = dist(rng);
    const auto s = latency_stats(v);
    EXPECT_LE(s.min, s.typical);
    EXPECT_LE(s.typical, s.p99);
    EXPECT_LE(s.p99, s.p99_9);
    EXPECT_LE(s.p99_9, s.max);
    EXPECT_GT(s.stddev, 0);
}

TEST(LatencyStats, SamplesUsed) {
    EXPECT_EQ(latency_samples_used(0), 0u);
    EXPECT_EQ(latency_samples_used(1), 1u);
    EXPECT_EQ(latency_samples_used(2), 2u);
    EXPECT_EQ(latency_samples_used(3), 1u);
    EXPECT_EQ(latency_samples_used(1000), 998u);
}

TEST(HalfRoundTrip, Halves) {
    EXPECT_DOUBLE_EQ(half_round_trip(10e-6), 5e-6);
    const auto h = half_round_trips({2, 4, 6});
    EXPECT_EQ(h, (std::vector<double>{1, 2, 3}));
    // perftest reports half round trips: statistics of halves are halves of statistics.
    const auto full = latency_stats(one_to(50));
    const auto half = latency_stats(half_round_trips(one_to(50)));
    EXPECT_DOUBLE_EQ(half.typical, full.typical / 2);
    EXPECT_DOUBLE_EQ(half.p99, full.p99 / 2);
}

TEST(Bandwidth, BitsPerSecond) {
    EXPECT_DOUBLE_EQ(bandwidth_bps(1'250'000'000, 1.0), 10e9);  // 1.25 GB/s = 10 Gbit/s
    // perftest's ib_write_bw figure between two DGX Spark nodes: 11,679 MB/s = 93.4 Gbit/s
    EXPECT_NEAR(bandwidth_bps(11'679'000'000ull, 1.0) / 1e9, 93.432, 1e-9);
    // 64 KiB x 5000 iterations in 0.25 s
    EXPECT_DOUBLE_EQ(bandwidth_bps(65536ull * 5000, 0.25), 65536.0 * 5000 * 8 / 0.25);
    EXPECT_EQ(bandwidth_bps(1000, 0), 0);
    EXPECT_EQ(bandwidth_bps(1000, -1), 0);
    EXPECT_EQ(bandwidth_bps(1000, std::numeric_limits<double>::quiet_NaN()), 0);
    EXPECT_EQ(bandwidth_bps(1000, std::numeric_limits<double>::infinity()), 0);
    EXPECT_EQ(bandwidth_bps(0, 1), 0);
}

TEST(ProbeKindNames, RoundTrip) {
    EXPECT_EQ(all_probe_kinds().size(), 7u);
    for (ProbeKind k : all_probe_kinds()) {
        const auto back = probe_kind_from_string(to_string(k));
        ASSERT_TRUE(back) << to_string(k);
        EXPECT_EQ(*back, k);
    }
    EXPECT_STREQ(to_string(ProbeKind::rdma_multirail_bw), "rdma_multirail_bw");
    EXPECT_STREQ(to_string(ProbeKind::ucx_put_lat), "ucx_put_lat");
    EXPECT_FALSE(probe_kind_from_string("tcp"));
    EXPECT_FALSE(probe_kind_from_string(""));
}
