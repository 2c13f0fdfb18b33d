// Turns raw counters of successive snapshots into rates and windowed increases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/model/config.hpp"
#include "daemon/model/shared_map.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// The history of one monotonic counter: a thinned ring of values whose last is the latest
// (for the rate over the last interval) and whose first is the baseline (for the increase
// over a window).
//
// A value lower than the previous one is a reset (driver reload, device reset, 32-bit
// wrap): it yields no rate and restarts the baseline, so the increase before the reset
// is forgotten rather than turned into a negative or bogus number. A clock that steps
// backwards is treated the same way.
class CounterSeries {
public:
    struct Step {
        std::optional<uint64_t> delta;            // since the previous value; unset on reset/gap
        double seconds = 0;                       // over this many seconds
        std::optional<uint64_t> window_increase;  // unset until there is a baseline
    };

    // At most this many samples are kept, however short the interval: samples closer
    // together than window / (kMaxSamples - 2) are not stored, which leaves room for a
    // full window plus its baseline. The last value is always kept for the rate. 32 puts
    // the baseline of a 5-minute window at most 10 s before its start, in 512 bytes a
    // counter (6,656 counters at 128 NICs: 3.3 MiB at most). A run of equal values keeps
    // only its first and last sample, so a counter that does not move (most error
    // counters, most of the time) holds two samples, inline.
    static constexpr size_t kMaxSamples = 32;

    Step add(TimePoint now, uint64_t value, Duration window);
    // The counter could not be read this round; the next value gets no rate.
    void miss() { missed_ = true; }
    // Nothing worth keeping: unread this round and every sample older than the window.
    [[nodiscard]] bool stale(TimePoint now, Duration window) const;
    [[nodiscard]] size_t samples() const { return n_; }

    CounterSeries() = default;
    CounterSeries(CounterSeries&& o) noexcept { *this = std::move(o); }
    CounterSeries& operator=(CounterSeries&& o) noexcept;
    CounterSeries(const CounterSeries&) = delete;
    CounterSeries& operator=(const CounterSeries&) = delete;

private:
    struct Sample {
        TimePoint at;
        uint64_t value;
    };
    Sample* data() { return heap_ ? heap_.get() : inline_; }
    const Sample* data() const { return heap_ ? heap_.get() : inline_; }
    void push_back(Sample x);
    void pop_front(size_t k);

    // Oldest first, non-decreasing values. The last is always the latest value added (for the
    // rate), the others at least window / (kMaxSamples - 2) apart or the first of a run of
    // one value. Up to two samples sit inline: a counter that does not move (most error
    // counters, most of the time) needs no heap block, and a series is 48 bytes with its
    // samples. One that moves gets room for kMaxSamples at once, 512 bytes. A vector and the
    // separate last value were 48 bytes before their 48-byte heap block (issue 14).
    std::unique_ptr<Sample[]> heap_;
    Sample inline_[2]{};
    uint8_t n_ = 0;
    bool missed_ = false;  // the latest value was not read: no rate from it
};

// Fills the trend fields of each new snapshot from the previous ones:
//  - RdmaPort::rates: per second over the interval since the previous counter read, per
//    counter name (counters/ wins over hw_counters/ when both have a name);
//    port_xmit_data / port_rcv_data in bytes per second (the raw unit is 4 bytes).
//  - RdmaPort::window_increase: increase over thresholds.counter_window, same names, the
//    two data counters in bytes too. Absent until the counter has a baseline.
//  - Link::transitions_in_window: carrier_changes increase over thresholds.flap_window.
//  - Link::driver_stat_rates / driver_stat_increase: per second, and over
//    thresholds.counter_window, of each driver statistic read.
//  - BondSlaveInfo::link_failure_increase: over thresholds.counter_window.
// A counter missing now or in the previous snapshot gets no rate (missing is not zero).
// Ports whose counters were carried over (Snapshot::counters_read_at as in the snapshot
// before) are left as they came: their rates and increases came with them.
// Ports and links that disappear are forgotten, so memory follows the node's inventory.
class TrendTracker {
public:
    explicit TrendTracker(Thresholds thresholds = {});

    void apply(Snapshot& current, TimePoint now);
    // Same, adopting new thresholds first (config reload).
    void apply(Snapshot& current, TimePoint now, const Thresholds& thresholds);

    // Series currently held (ports x counters + links + slaves): for tests of boundedness.
    [[nodiscard]] size_t tracked_series() const;

private:
    struct LinkTrack {
        int ifindex = 0;
        CounterSeries carrier_changes;
        std::map<std::string, CounterSeries> driver_stats;  // by ethtool -S name
    };

    void apply_ports(Snapshot& s, TimePoint now);
    void apply_links(Snapshot& s, TimePoint now);

    Thresholds thresholds_;
    std::map<std::string, FlatMap<CounterSeries>> ports_;  // "dev/port" -> name -> series
    std::map<std::string, LinkTrack> links_;               // by netdev name
    std::map<std::string, CounterSeries> slave_failures_;  // by slave name
    TimePoint counters_read_at_{};                         // of the port counters last taken as a sample
    TimePoint link_counters_read_at_{};                    // of the links' driver counters likewise
};

}  // namespace rocewatch
