// A share of the time for one kind of costly work, as a token bucket of seconds: each run of
// the work is paid for with its duration, the bucket refills at `share` of a second per
// second, and holds `burst` runs (as long as the last one took). Pure: the caller gives the
// time, so that tests need no clock. A run the caller starts past the budget (a floor of its
// own, such as a freshness bound) is paid for too, but the debt stops at one burst: such runs
// must not hold the work off for ever after.
#pragma once

#include <algorithm>
#include <chrono>
#include <limits>

namespace rocewatch {

class DutyBudget {
public:
    using TimePoint = std::chrono::steady_clock::time_point;
    using Seconds = std::chrono::duration<double>;

    DutyBudget(double share, int burst) : share_(share), burst_(burst) {}

    // One run took `took`, ending at `now`. The first is paid from a full bucket.
    void spent(Seconds took, TimePoint now) {
        refill(now);
        before_ = tokens_;
        last_ = took;
        tokens_ = std::max(std::min(tokens_, cap()) - took.count(), -cap());
    }
    // The run last paid for cost `more` too, found later (work its results caused): paid now,
    // and the run's length is the sum, so the burst holds as many runs of it as of any other.
    void also_spent(Seconds more, TimePoint now) {
        refill(now);
        const double capped_before = std::min(before_, cap());
        last_ += more;
        tokens_ = std::max(tokens_ + std::min(before_, cap()) - capped_before - more.count(), -cap());
    }
    // Whether a run may start now.
    [[nodiscard]] bool allows(TimePoint now) { return ready_at(now) <= now; }
    // When the bucket is no longer in debt: now, where it is not.
    [[nodiscard]] TimePoint ready_at(TimePoint now) {
        refill(now);
        if (tokens_ > 0) return now;
        return now + std::chrono::duration_cast<TimePoint::duration>(Seconds(-tokens_ / share_)) +
               std::chrono::milliseconds(1);
    }

private:
    [[nodiscard]] double cap() const { return burst_ * last_.count(); }
    void refill(TimePoint now) {
        if (now > at_ && at_ != TimePoint{}) {
            const double earned = Seconds(now - at_).count() * share_;
            if (tokens_ < std::numeric_limits<double>::max()) tokens_ = std::min(cap(), tokens_ + earned);
        }
        at_ = std::max(at_, now);
    }

    double share_;
    int burst_;
    double tokens_ = std::numeric_limits<double>::max();  // full until the first run is known
    Seconds last_{0};
    double before_ = 0;  // the bucket when the last run was paid for, before the cap
    TimePoint at_{};
};

}  // namespace rocewatch
