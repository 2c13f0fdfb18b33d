// Trend arithmetic: rates, byte units, resets, missing counters, windows, flaps; all by hand.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>

#include "daemon/rules/trends.hpp"
#include "spark_node.hpp"

using namespace rocewatch;
using namespace rocewatch::testing;
using std::chrono::seconds;

namespace {

const TimePoint t0 = TimePoint{} + std::chrono::hours(24 * 365 * 50);

// One device, one port, with the given counters.
Snapshot one_port(std::map<std::string, uint64_t> counters, std::map<std::string, uint64_t> hw = {}) {
    Snapshot s;
    RdmaDevice d{.name = "rocep1s0f0"};
    RdmaPort p;
    p.counters = std::move(counters);
    p.hw_counters = std::move(hw);
    d.ports.push_back(p);
    s.devices.push_back(d);
    return s;
}

Snapshot one_link(std::optional<uint32_t> carrier_changes, int ifindex = 3) {
    Snapshot s;
    Link l = netdev(ifindex, "enp1s0f0np0", 9000);
    l.carrier_changes = carrier_changes;
    s.links.push_back(l);
    return s;
}

Thresholds windows(seconds counter, seconds flap) {
    Thresholds t;
    t.counter_window = counter;
    t.flap_window = flap;
    return t;
}

const RdmaPort& port(const Snapshot& s) { return s.devices.at(0).ports.at(0); }

}  // namespace

TEST(Trends, FirstSnapshotHasNoRatesAndNoIncrease) {
    TrendTracker tr;
    auto s = one_port({{"port_xmit_data", 1000}});
    tr.apply(s, t0);
    EXPECT_TRUE(port(s).rates.empty());
    EXPECT_TRUE(port(s).window_increase.empty()) << "no baseline yet: not a zero";
}

TEST(Trends, RatesPerSecondWithDataCountersInBytes) {
    TrendTracker tr;
    auto a = one_port({{"port_xmit_data", 1000}, {"port_rcv_data", 0}, {"symbol_error", 2}}, {{"np_cnp_sent", 100}});
    tr.apply(a, t0);
    auto b = one_port({{"port_xmit_data", 2250}, {"port_rcv_data", 5}, {"symbol_error", 2}}, {{"np_cnp_sent", 600}});
    tr.apply(b, t0 + seconds(5));
    // (2250 - 1000) words x 4 bytes / 5 s = 1000 B/s; (5 - 0) x 4 / 5 = 4 B/s.
    EXPECT_DOUBLE_EQ(port(b).rates.at("port_xmit_data"), 1000.0);
    EXPECT_DOUBLE_EQ(port(b).rates.at("port_rcv_data"), 4.0);
    EXPECT_DOUBLE_EQ(port(b).rates.at("symbol_error"), 0.0);
    EXPECT_DOUBLE_EQ(port(b).rates.at("np_cnp_sent"), 100.0);  // hw_counters too, (600-100)/5
    EXPECT_EQ(port(b).window_increase.at("port_xmit_data"), 5000u) << "bytes, like the rate";
    EXPECT_EQ(port(b).window_increase.at("np_cnp_sent"), 500u);
}

TEST(Trends, DataRailAt93Gbps) {
    // ib_write_bw one link: 11,679 MB/s. Over 5 s that is 58,395,000,000 bytes = 14,598,750,000 words.
    TrendTracker tr;
    auto a = one_port({{"port_xmit_data", 0}});
    tr.apply(a, t0);
    auto b = one_port({{"port_xmit_data", 14'598'750'000ull}});
    tr.apply(b, t0 + seconds(5));
    EXPECT_NEAR(port(b).rates.at("port_xmit_data") * 8 / 1e9, 93.432, 1e-9);
}

TEST(Trends, CountersWinOverHwCountersOfTheSameName) {
    TrendTracker tr;
    auto a = one_port({{"link_downed", 1}}, {{"link_downed", 100}});
    tr.apply(a, t0);
    auto b = one_port({{"link_downed", 3}}, {{"link_downed", 900}});
    tr.apply(b, t0 + seconds(2));
    EXPECT_DOUBLE_EQ(port(b).rates.at("link_downed"), 1.0);  // (3-1)/2, not (900-100)/2
    EXPECT_EQ(port(b).window_increase.at("link_downed"), 2u);
}

// counters/ and hw_counters/ are walked side by side by name: names that interleave, and one
// in both, each get one rate and one increase.
TEST(Trends, CountersAndHwCountersInterleavedEachGetOneRate) {
    TrendTracker tr;
    auto a = one_port({{"b", 0}, {"d", 0}, {"f", 0}}, {{"a", 0}, {"c", 0}, {"d", 50}, {"g", 0}});
    tr.apply(a, t0);
    auto b = one_port({{"b", 2}, {"d", 4}, {"f", 6}}, {{"a", 1}, {"c", 3}, {"d", 500}, {"g", 7}});
    tr.apply(b, t0 + seconds(1));
    std::vector<std::pair<std::string, double>> rates(port(b).rates.begin(), port(b).rates.end());
    EXPECT_EQ(rates, (std::vector<std::pair<std::string, double>>{
                         {"a", 1.0}, {"b", 2.0}, {"c", 3.0}, {"d", 4.0}, {"f", 6.0}, {"g", 7.0}}));
    EXPECT_EQ(port(b).window_increase.size(), 6u);
    EXPECT_EQ(port(b).window_increase.at("d"), 4u) << "counters/ wins";
}

// Counters carried over from the read before (the collector reads them within a share of a
// core) are no sample: the rate at the next read covers the time since the read before.
TEST(Trends, CarriedCountersAreNoNewSample) {
    TrendTracker tr(windows(seconds(60), seconds(60)));
    auto at = [&](int sec, uint64_t v, int read_sec) {
        auto s = one_port({{"port_rcv_errors", v}});
        s.counters_read_at = t0 + seconds(read_sec);
        tr.apply(s, t0 + seconds(sec));
        return s;
    };
    (void)at(0, 0, 0);
    auto read = at(10, 10, 10);
    EXPECT_DOUBLE_EQ(port(read).rates.at("port_rcv_errors"), 1.0);
    // Carried: as the engine hands it over, values and rates from the read at 10 s.
    auto carried = one_port({{"port_rcv_errors", 10}});
    carried.counters_read_at = t0 + seconds(10);
    carried.devices[0].ports[0].rates = port(read).rates;
    tr.apply(carried, t0 + seconds(20));
    EXPECT_DOUBLE_EQ(port(carried).rates.at("port_rcv_errors"), 1.0) << "left as it came";
    auto next = at(30, 30, 30);
    EXPECT_DOUBLE_EQ(port(next).rates.at("port_rcv_errors"), 1.0) << "20 over the 20 s since the read at 10 s";
}

TEST(Trends, CounterThatWentDownIsAResetNotANegativeRate) {
    TrendTracker tr;
    auto a = one_port({{"link_downed", 50}});
    tr.apply(a, t0);
    auto b = one_port({{"link_downed", 2}});  // driver reload
    tr.apply(b, t0 + seconds(5));
    EXPECT_FALSE(port(b).rates.count("link_downed"));
    EXPECT_FALSE(port(b).window_increase.count("link_downed")) << "baseline restarts at 2";
    auto c = one_port({{"link_downed", 3}});
    tr.apply(c, t0 + seconds(10));
    EXPECT_DOUBLE_EQ(port(c).rates.at("link_downed"), 0.2);  // (3-2)/5
    EXPECT_EQ(port(c).window_increase.at("link_downed"), 1u);
}

TEST(Trends, MissingCounterGivesNoRate) {
    TrendTracker tr;
    auto a = one_port({{"symbol_error", 10}, {"link_downed", 0}});
    tr.apply(a, t0);
    auto b = one_port({{"link_downed", 0}});  // symbol_error unreadable (EINVAL) this round
    tr.apply(b, t0 + seconds(5));
    EXPECT_FALSE(port(b).rates.count("symbol_error"));
    EXPECT_FALSE(port(b).window_increase.count("symbol_error"));
    auto c = one_port({{"symbol_error", 14}, {"link_downed", 0}});
    tr.apply(c, t0 + seconds(10));
    EXPECT_FALSE(port(c).rates.count("symbol_error")) << "absent before: no rate over this interval";
    EXPECT_EQ(port(c).window_increase.at("symbol_error"), 4u) << "the window still has its t0 baseline";
    auto d = one_port({{"symbol_error", 24}, {"link_downed", 0}});
    tr.apply(d, t0 + seconds(15));
    EXPECT_DOUBLE_EQ(port(d).rates.at("symbol_error"), 2.0);
}

TEST(Trends, WindowIncreaseCoversTheWholeWindow) {
    // 60 s window, a sample every 10 s. Values: t0..t70 = 0 1 1 3 3 3 3 4.
    TrendTracker tr(windows(seconds(60), seconds(60)));
    const uint64_t values[] = {0, 1, 1, 3, 3, 3, 3, 4};
    std::vector<uint64_t> inc;
    for (int i = 0; i < 8; ++i) {
        auto s = one_port({{"port_rcv_errors", values[i]}});
        tr.apply(s, t0 + seconds(10 * i));
        inc.push_back(port(s).window_increase.count("port_rcv_errors") ? port(s).window_increase.at("port_rcv_errors")
                                                                       : 999);
    }
    // t0: no baseline. t10..t60: baseline t0 (=0). t70: baseline t10 (=1) -> 4 - 1.
    EXPECT_EQ(inc, (std::vector<uint64_t>{999, 1, 1, 3, 3, 3, 3, 3}));
    // Quiet for a full window: the increase returns to 0.
    for (int i = 8; i < 16; ++i) {
        auto s = one_port({{"port_rcv_errors", 4}});
        tr.apply(s, t0 + seconds(10 * i));
        if (i == 14) {
            EXPECT_EQ(port(s).window_increase.at("port_rcv_errors"), 0u);  // baseline t80 = 4
        }
    }
}

TEST(Trends, RingStaysBoundedWhateverTheInterval) {
    CounterSeries c;
    const Duration window = std::chrono::minutes(10);
    for (int i = 0; i < 100'000; ++i) c.add(t0 + std::chrono::milliseconds(10 * i), uint64_t(i), window);
    EXPECT_LE(c.samples(), CounterSeries::kMaxSamples);
    // Still a sensible increase: the value counts 10 ms ticks, so the 600 s window holds
    // 60,000; the thinned baseline may sit up to one spacing (600 s / 30 = 2,000 ticks) early.
    const auto step = c.add(t0 + std::chrono::milliseconds(10 * 100'000), 100'000, window);
    ASSERT_TRUE(step.window_increase);
    const uint64_t spacing_ticks = 60'000 / (CounterSeries::kMaxSamples - 2);
    EXPECT_GE(*step.window_increase, 60'000u);
    EXPECT_LE(*step.window_increase, 60'000u + spacing_ticks);
    EXPECT_GE(c.samples(), CounterSeries::kMaxSamples - 2) << "a full window at this pace all but fills the ring";
}

TEST(Trends, ACounterThatDoesNotMoveKeepsTwoSamples) {
    CounterSeries c;
    const Duration window = seconds(300);
    for (int i = 0; i < 1000; ++i) c.add(t0 + seconds(5 * i), 7, window);
    EXPECT_EQ(c.samples(), 2u) << "the first and the last of the run";
    // It moves: the increase counts from the run's value, and the run's end stays the baseline.
    auto step = c.add(t0 + seconds(5 * 1000), 9, window);
    ASSERT_TRUE(step.window_increase);
    EXPECT_EQ(*step.window_increase, 2u);
    EXPECT_EQ(c.samples(), 3u);
    // Quiet at 9 for a whole window: back to 0, and back to two samples.
    for (int i = 1001; i < 1100; ++i) step = c.add(t0 + seconds(5 * i), 9, window);
    ASSERT_TRUE(step.window_increase);
    EXPECT_EQ(*step.window_increase, 0u);
    EXPECT_EQ(c.samples(), 2u);
}

// Bursts between quiet runs (what an error counter does): every increase is the true one over
// the window, give or take the one thinning spacing the baseline may sit early.
TEST(Trends, RunsOfOneValueKeepTheWindowIncreaseTrue) {
    CounterSeries c;
    const Duration window = seconds(300);
    const int step_s = 5;
    const uint64_t spacing_steps = 300 / (CounterSeries::kMaxSamples - 2) / step_s;
    std::vector<uint64_t> history;
    uint64_t value = 0;
    uint32_t lcg = 12345;
    size_t most_samples = 0;
    for (int i = 0; i < 5000; ++i) {
        lcg = lcg * 1103515245u + 12345u;
        if ((lcg >> 16) % 40 == 0) value += 1 + (lcg >> 8) % 50;  // a burst every ~200 s
        history.push_back(value);
        const auto got = c.add(t0 + seconds(step_s * i), value, window);
        most_samples = std::max(most_samples, c.samples());
        const int at_start = i - 300 / step_s;
        if (at_start < 0) continue;
        ASSERT_TRUE(got.window_increase) << i;
        const uint64_t least = value - history[static_cast<size_t>(at_start)];
        const uint64_t most =
            value - history[static_cast<size_t>(std::max<int>(0, at_start - static_cast<int>(spacing_steps)))];
        EXPECT_GE(*got.window_increase, least) << "at step " << i;
        EXPECT_LE(*got.window_increase, most) << "at step " << i;
    }
    EXPECT_LE(most_samples, CounterSeries::kMaxSamples / 2) << "two samples a burst, not one a spacing";
}

TEST(Trends, ClockSteppingBackRestartsTheSeries) {
    CounterSeries c;
    const Duration w = std::chrono::minutes(5);
    c.add(t0, 10, w);
    const auto back = c.add(t0 - seconds(30), 12, w);
    EXPECT_FALSE(back.delta);
    EXPECT_FALSE(back.window_increase);
    const auto next = c.add(t0 - seconds(25), 13, w);
    EXPECT_EQ(next.delta, 1u);
    EXPECT_DOUBLE_EQ(next.seconds, 5.0);
}

TEST(Trends, SameTimestampGivesNoRate) {
    CounterSeries c;
    c.add(t0, 10, seconds(60));
    EXPECT_FALSE(c.add(t0, 11, seconds(60)).delta);
}

TEST(Trends, FlapTransitionsInsideTheFlapWindow) {
    TrendTracker tr(windows(seconds(300), seconds(60)));
    // carrier_changes: 10 at t0 (since boot: not counted), 12 at t10, 14 at t20, steady after.
    const std::pair<int, uint32_t> samples[] = {{0, 10}, {10, 12}, {20, 14}, {60, 14}, {70, 14}, {80, 14}};
    std::vector<uint32_t> got;
    for (auto [t, v] : samples) {
        auto s = one_link(v);
        tr.apply(s, t0 + seconds(t));
        got.push_back(s.links[0].transitions_in_window);
    }
    // t60: baseline t0 (10) -> 4. t70: baseline t10 (12) -> 2. t80: baseline t20 (14) -> 0.
    EXPECT_EQ(got, (std::vector<uint32_t>{0, 2, 4, 4, 2, 0}));
}

TEST(Trends, RecreatedLinkStartsOver) {
    TrendTracker tr(windows(seconds(300), seconds(600)));
    auto a = one_link(100, 3);
    tr.apply(a, t0);
    auto b = one_link(104, 3);
    tr.apply(b, t0 + seconds(5));
    EXPECT_EQ(b.links[0].transitions_in_window, 4u);
    auto c = one_link(106, 9);  // same name, new ifindex
    tr.apply(c, t0 + seconds(10));
    EXPECT_EQ(c.links[0].transitions_in_window, 0u);
    auto d = one_link(107, 9);
    tr.apply(d, t0 + seconds(15));
    EXPECT_EQ(d.links[0].transitions_in_window, 1u);
}

TEST(Trends, MissingCarrierChangesIsNoFlap) {
    TrendTracker tr;
    auto a = one_link(std::nullopt);
    tr.apply(a, t0);
    auto b = one_link(std::nullopt);
    tr.apply(b, t0 + seconds(5));
    EXPECT_EQ(b.links[0].transitions_in_window, 0u);
}

TEST(Trends, BondSlaveLinkFailureIncrease) {
    TrendTracker tr(windows(seconds(60), seconds(600)));
    auto make = [](uint32_t failures) {
        Snapshot s = bonded_spark();
        link_of(s, "enp1s0f1np1").slave->link_failure_count = failures;
        return s;
    };
    auto a = make(3);
    tr.apply(a, t0);
    EXPECT_FALSE(link_of(a, "enp1s0f1np1").slave->link_failure_increase);
    auto b = make(5);
    tr.apply(b, t0 + seconds(10));
    EXPECT_EQ(link_of(b, "enp1s0f1np1").slave->link_failure_increase, 2u);
    EXPECT_EQ(link_of(b, "enp1s0f0np0").slave->link_failure_increase, 0u);
    auto c = make(5);
    tr.apply(c, t0 + seconds(80));  // baseline t10 (5)
    EXPECT_EQ(link_of(c, "enp1s0f1np1").slave->link_failure_increase, 0u);
}

// The series are walked in step with the sorted counter names: names that come and go before,
// between and after the others, in counters/ or hw_counters/, each keep their own history.
TEST(Trends, SeriesKeepTheirHistoryAsNamesComeAndGoAroundThem) {
    TrendTracker tr;
    auto a = one_port({{"b", 10}, {"d", 20}}, {{"f", 30}});
    tr.apply(a, t0);
    auto b = one_port({{"a", 1}, {"b", 15}, {"d", 30}}, {{"e", 7}, {"f", 40}});
    tr.apply(b, t0 + seconds(5));
    EXPECT_EQ(port(b).rates, (SharedMap<double>{{"b", 1.0}, {"d", 2.0}, {"f", 2.0}}));
    EXPECT_EQ(port(b).window_increase, (SharedMap<uint64_t>{{"b", 5}, {"d", 10}, {"f", 10}}));
    auto c = one_port({{"a", 6}, {"b", 25}}, {{"f", 50}});  // d and e unread
    tr.apply(c, t0 + seconds(10));
    EXPECT_EQ(port(c).rates, (SharedMap<double>{{"a", 1.0}, {"b", 2.0}, {"f", 2.0}}));
    EXPECT_EQ(tr.tracked_series(), 5u) << "d and e are kept inside the window";
    auto d = one_port({{"a", 6}, {"b", 25}, {"d", 40}}, {{"e", 9}, {"f", 50}});
    tr.apply(d, t0 + seconds(15));
    EXPECT_EQ(port(d).rates, (SharedMap<double>{{"a", 0.0}, {"b", 0.0}, {"f", 0.0}})) << "d and e were missed";
    EXPECT_EQ(port(d).window_increase.at("d"), 20u) << "d's baseline is still t0's";
    EXPECT_EQ(port(d).window_increase.at("e"), 2u);
}

TEST(Trends, VanishedDevicesAndLinksAreForgotten) {
    TrendTracker tr;
    auto full = healthy_spark();
    tr.apply(full, t0);
    const size_t before = tr.tracked_series();
    EXPECT_GT(before, 0u);
    auto less = healthy_spark();
    less.devices.resize(1);
    less.links.resize(2);
    tr.apply(less, t0 + seconds(5));
    EXPECT_LT(tr.tracked_series(), before);
    // A counter gone for longer than the window is dropped too.
    auto fewer = less;
    fewer.devices[0].ports[0].counters.clear();
    fewer.devices[0].ports[0].hw_counters.clear();
    tr.apply(fewer, t0 + std::chrono::hours(1));
    EXPECT_EQ(tr.tracked_series(), 2u) << "only the two links remain";
}

TEST(Trends, ThresholdsFollowAReload) {
    TrendTracker tr;  // 10-minute flap window
    auto a = one_link(1);
    tr.apply(a, t0);
    auto b = one_link(3);
    tr.apply(b, t0 + seconds(120));
    EXPECT_EQ(b.links[0].transitions_in_window, 2u);
    auto c = one_link(3);
    tr.apply(c, t0 + seconds(190), windows(seconds(300), seconds(60)));  // window now 60 s: baseline t120
    EXPECT_EQ(c.links[0].transitions_in_window, 0u);
}

// The driver's pause and discard counters of a link: a rate per second and an increase over
// the counter window, like the RDMA counters; a reset restarts them.
TEST(Trends, DriverStatsOfALinkGetRatesAndWindowIncreases) {
    TrendTracker tr(windows(seconds(60), seconds(600)));
    auto at = [&](int secs, uint64_t pause) {
        Snapshot s = one_link(0);
        s.links[0].driver_stats = {{"rx_prio3_pause", pause}, {"tx_pause_storm_warning_events", 2}};
        tr.apply(s, t0 + seconds(secs));
        return s;
    };
    auto s = at(0, 1000);
    EXPECT_TRUE(s.links[0].driver_stat_rates.empty());
    s = at(10, 31000);
    EXPECT_DOUBLE_EQ(s.links[0].driver_stat_rates.at("rx_prio3_pause"), 3000.0);
    EXPECT_EQ(s.links[0].driver_stat_increase.at("rx_prio3_pause"), 30000u);
    EXPECT_EQ(s.links[0].driver_stat_increase.at("tx_pause_storm_warning_events"), 0u);
    s = at(20, 5);  // the driver was reloaded: a reset, not a negative rate
    EXPECT_FALSE(s.links[0].driver_stat_rates.count("rx_prio3_pause"));
    EXPECT_EQ(tr.tracked_series(), 3u) << "the link, and its two statistics";
}

namespace {

// What the history of a 128-NIC node holds once the 5-minute window is full: 128 ports of 52
// counters sampled every 5 s for 6 minutes, `moving` of them rising every cycle and the rest
// still, measured as the heap the tracker keeps (glibc's mallinfo2), in bytes a counter. A bound
// on memory, not on time; the figure is printed for docs/figures.md.
double history_bytes_a_counter_at_128_nics(int moving) {
    Snapshot s;
    for (int d = 0; d < 128; ++d) {
        RdmaPort p{.port = 1};
        for (int c = 0; c < 52; ++c) p.hw_counters["counter_" + std::to_string(c)] = 0;
        s.devices.push_back(RdmaDevice{.name = "mlx5_" + std::to_string(d), .ports = {p}});
    }
    const size_t before = mallinfo2().uordblks;
    double per_series = 0;
    {
        TrendTracker tr(windows(seconds(300), seconds(600)));
        for (int i = 0; i <= 72; ++i) {
            Snapshot cycle = s;
            for (auto& d : cycle.devices) {
                int c = 0;
                for (auto& [name, v] : d.ports[0].hw_counters.edit())
                    if (c++ < moving) v = static_cast<uint64_t>(i) * 1000;
            }
            tr.apply(cycle, t0 + seconds(5 * i));
        }
        // Signed: under a sanitizer's allocator glibc's arena barely moves (the bound then holds
        // trivially; the plain build is the one that measures).
        const double held = static_cast<double>(mallinfo2().uordblks) - static_cast<double>(before);
        EXPECT_EQ(tr.tracked_series(), 128u * 52u);
        per_series = held / static_cast<double>(tr.tracked_series());
        std::printf("trend history, 128 NICs x 52 counters, %d moving, full 5-minute window: %.2f MiB, %.0f bytes a "
                    "counter\n",
                    moving, held / (1 << 20), per_series);
    }
    EXPECT_LT(mallinfo2().uordblks, before + (64 << 10)) << "the tracker gives all of it back";
    return per_series;
}

}  // namespace

TEST(Trends, HistoryOfA128NicNodeStaysSmallOnceTheWindowIsFull) {
    EXPECT_LT(history_bytes_a_counter_at_128_nics(52), 1024.0)
        << "61 samples of 16 bytes, thinned to at most kMaxSamples, and the map node";
    // What a healthy node has: the data and packet counters move, the error counters do not.
    EXPECT_LT(history_bytes_a_counter_at_128_nics(4), 128.0) << "two samples inline for each still counter (108 bytes)";
}
