// Turns raw counters of successive snapshots into rates and windowed increases.
#include "daemon/rules/trends.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace rocewatch {
namespace {

// counters/port_xmit_data and port_rcv_data count 4-byte words (IB PMA convention).
uint64_t unit_scale(std::string_view name) { return (name == "port_xmit_data" || name == "port_rcv_data") ? 4 : 1; }

std::string port_key(const RdmaDevice& d, const RdmaPort& p) { return d.name + "/" + std::to_string(p.port); }

// Series whose counter was not read this round get no rate next time; those with nothing
// left inside the window are dropped, so memory follows what the node still has.
template <class WasRead>
void forget_unread(std::map<std::string, CounterSeries>& series, const WasRead& was_read, TimePoint now,
                   Duration window) {
    for (auto it = series.begin(); it != series.end();) {
        if (was_read(it->first)) {
            ++it;
            continue;
        }
        it->second.miss();
        it = it->second.stale(now, window) ? series.erase(it) : std::next(it);
    }
}

}  // namespace

// ---------------------------------------------------------------- CounterSeries

CounterSeries& CounterSeries::operator=(CounterSeries&& o) noexcept {
    heap_ = std::move(o.heap_);
    std::copy(std::begin(o.inline_), std::end(o.inline_), std::begin(inline_));
    n_ = std::exchange(o.n_, 0);
    missed_ = o.missed_;
    return *this;
}

void CounterSeries::push_back(Sample x) {
    if (n_ == kMaxSamples) pop_front(1);
    if (!heap_ && n_ == std::size(inline_)) {
        heap_ = std::make_unique<Sample[]>(kMaxSamples);
        std::copy(inline_, inline_ + n_, heap_.get());
    }
    data()[n_++] = x;
}

void CounterSeries::pop_front(size_t k) {
    if (k == 0) return;
    Sample* d = data();
    std::copy(d + k, d + n_, d);
    n_ = static_cast<uint8_t>(n_ - k);
}

CounterSeries::Step CounterSeries::add(TimePoint now, uint64_t value, Duration window) {
    Step out;
    const Sample* d = data();
    const bool went_down = n_ > 0 && value < d[n_ - 1].value;
    const bool clock_back = n_ > 0 && now < d[n_ - 1].at;
    if (went_down || clock_back) {
        heap_.reset();
        n_ = 0;
        d = data();
    }

    // The rate: since the latest value, unless it was missed since.
    if (n_ > 0 && !missed_ && now > d[n_ - 1].at) {
        out.delta = value - d[n_ - 1].value;
        out.seconds = std::chrono::duration<double>(now - d[n_ - 1].at).count();
    }
    missed_ = false;

    // Keep one sample at or before the window start as the baseline, so the increase
    // covers the whole window rather than only the samples inside it.
    const TimePoint start = now - window;
    size_t drop = 0;
    while (n_ - drop >= 2 && d[drop + 1].at <= start) ++drop;
    pop_front(drop);
    d = data();
    if (n_ > 0) out.window_increase = value - d[0].value;

    // The latest sample replaces the last one where that one is not worth keeping: closer
    // than a spacing to the one before it, or the middle of a run of one value (a run needs
    // only its first sample, the baseline for any window start inside it, and its last).
    const auto spacing = window / static_cast<Duration::rep>(kMaxSamples - 2);
    Sample* w = data();
    if (n_ >= 2 && (w[n_ - 1].at - w[n_ - 2].at < spacing || (w[n_ - 1].value == value && w[n_ - 2].value == value))) {
        w[n_ - 1] = {now, value};
    } else {
        push_back({now, value});
    }
    return out;
}

bool CounterSeries::stale(TimePoint now, Duration window) const {
    return missed_ && (n_ == 0 || data()[n_ - 1].at < now - window);
}

// ---------------------------------------------------------------- TrendTracker

TrendTracker::TrendTracker(Thresholds thresholds) : thresholds_(std::move(thresholds)) {}

void TrendTracker::apply(Snapshot& current, TimePoint now, const Thresholds& thresholds) {
    thresholds_ = thresholds;
    apply(current, now);
}

void TrendTracker::apply(Snapshot& current, TimePoint now) {
    apply_ports(current, now);
    apply_links(current, now);
}

void TrendTracker::apply_ports(Snapshot& s, TimePoint now) {
    // Counters carried over from the read before (read_at unchanged) are no new sample: their
    // rates and increases came with them.
    if (s.counters_read_at != TimePoint{} && s.counters_read_at == counters_read_at_) return;
    counters_read_at_ = s.counters_read_at;
    const Duration window = thresholds_.counter_window;
    std::set<std::string> seen_ports;
    for (auto& dev : s.devices) {
        for (auto& port : dev.ports) {
            const std::string key = port_key(dev, port);
            seen_ports.insert(key);
            auto& series = ports_[key];
            FlatMap<double> rates;
            FlatMap<uint64_t> increases;
            FlatMap<CounterSeries> next;
            rates.reserve(port.counters.size() + port.hw_counters.size());
            increases.reserve(port.counters.size() + port.hw_counters.size());
            next.reserve(std::max(series.size(), port.counters.size() + port.hw_counters.size()));

            // The series and the counters are all sorted by name, and walked side by side: a
            // series goes on to `next` with its counter's new value, or unread (missed; dropped
            // once stale), and a counter with no series starts one: no std::map lookup per
            // counter and no search per series, every read (issue 14).
            auto old = series.begin();
            const auto pass_unread = [&](const auto& until) {
                for (; old != series.end() && !until(old->first); ++old) {
                    old->second.miss();
                    if (!old->second.stale(now, window)) next.append(std::move(old->first), std::move(old->second));
                }
            };
            const auto one = [&](std::string_view name, uint64_t v) {
                pass_unread([&](std::string_view have) { return !(have < name); });
                const bool known = old != series.end() && old->first == name;
                CounterSeries counter = known ? std::move(old->second) : CounterSeries{};
                const auto step = counter.add(now, v, window);
                const uint64_t scale = unit_scale(name);
                if (step.delta && step.seconds > 0)
                    rates.insert_or_assign(name, static_cast<double>(*step.delta) * static_cast<double>(scale) /
                                                     step.seconds);
                if (step.window_increase) increases.insert_or_assign(name, *step.window_increase * scale);
                next.append(known ? std::move(old->first) : name, std::move(counter));
                if (known) ++old;
            };
            // One value per name: counters/ first, hw_counters/ only for names it lacks.
            auto c = port.counters.begin();
            auto h = port.hw_counters.begin();
            while (c != port.counters.end() || h != port.hw_counters.end()) {
                if (h == port.hw_counters.end() || (c != port.counters.end() && c->first <= h->first)) {
                    if (h != port.hw_counters.end() && h->first == c->first) ++h;
                    one(c->first, c->second);
                    ++c;
                } else {
                    one(h->first, h->second);
                    ++h;
                }
            }
            pass_unread([](std::string_view) { return false; });
            series = std::move(next);
            port.rates = std::move(rates);
            port.window_increase = std::move(increases);
        }
    }
    std::erase_if(ports_, [&](const auto& kv) { return !seen_ports.count(kv.first); });
}

void TrendTracker::apply_links(Snapshot& s, TimePoint now) {
    // Driver counters carried over from the read before are no new sample, as for ports.
    const bool link_counters_new = s.link_counters_read_at == TimePoint{} ||
                                   s.link_counters_read_at != link_counters_read_at_;
    link_counters_read_at_ = s.link_counters_read_at;
    std::set<std::string> seen_links;
    std::set<std::string> seen_slaves;
    for (auto& link : s.links) {
        seen_links.insert(link.name);
        link.transitions_in_window = 0;
        auto& track = links_[link.name];
        // A link recreated under the same name (bond deleted and added again) starts over.
        if (track.ifindex != link.ifindex) track = LinkTrack{.ifindex = link.ifindex};
        if (link.carrier_changes) {
            const auto step = track.carrier_changes.add(now, *link.carrier_changes, thresholds_.flap_window);
            if (step.window_increase)
                link.transitions_in_window = static_cast<uint32_t>(
                    std::min<uint64_t>(*step.window_increase, std::numeric_limits<uint32_t>::max()));
        } else {
            track.carrier_changes.miss();
        }
        if (link_counters_new) {
            link.driver_stat_rates.clear();
            link.driver_stat_increase.clear();
            for (const auto& [name, v] : link.driver_stats) {
                const auto step = track.driver_stats[name].add(now, v, thresholds_.counter_window);
                if (step.delta && step.seconds > 0)
                    link.driver_stat_rates[name] = static_cast<double>(*step.delta) / step.seconds;
                if (step.window_increase) link.driver_stat_increase[name] = *step.window_increase;
            }
            forget_unread(
                track.driver_stats, [&](const std::string& n) { return link.driver_stats.contains(n); }, now,
                thresholds_.counter_window);
        }

        if (!link.slave) continue;
        seen_slaves.insert(link.name);
        link.slave->link_failure_increase.reset();
        auto& failures = slave_failures_[link.name];
        if (link.slave->link_failure_count) {
            const auto step = failures.add(now, *link.slave->link_failure_count, thresholds_.counter_window);
            if (step.window_increase)
                link.slave->link_failure_increase = static_cast<uint32_t>(
                    std::min<uint64_t>(*step.window_increase, std::numeric_limits<uint32_t>::max()));
        } else {
            failures.miss();
        }
    }
    std::erase_if(links_, [&](const auto& kv) { return !seen_links.count(kv.first); });
    std::erase_if(slave_failures_, [&](const auto& kv) { return !seen_slaves.count(kv.first); });
}

size_t TrendTracker::tracked_series() const {
    size_t n = links_.size() + slave_failures_.size();
    for (const auto& [key, series] : ports_) n += series.size();
    for (const auto& [name, track] : links_) n += track.driver_stats.size();
    return n;
}

}  // namespace rocewatch
