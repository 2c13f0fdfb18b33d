// The time limit every probe runs under: a point on the monotonic clock, never a duration.
// A deadline may also be pulled in from another thread: once *cancel is set it has
// expired and nothing remains (a peer ending its session early). Waits that honour a
// cancellable deadline wake at least every kCancelSlice to notice.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "util/clock.hpp"

namespace rocewatch {

struct Deadline {
    SteadyClock::time_point at{};
    const std::atomic<bool>* cancel = nullptr;  // owned by whoever may pull the deadline in

    static constexpr std::chrono::milliseconds kCancelSlice{100};

    static Deadline after(SteadyClock::duration d) { return Deadline{SteadyClock::now() + d}; }
    static Deadline after_seconds(double s) { return after(from_seconds(s)); }

    [[nodiscard]] bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
    [[nodiscard]] bool expired(SteadyClock::time_point now = SteadyClock::now()) const {
        return now >= at || cancelled();
    }
    [[nodiscard]] SteadyClock::duration remaining(SteadyClock::time_point now = SteadyClock::now()) const {
        if (cancelled()) return SteadyClock::duration::zero();
        return std::max(at - now, SteadyClock::duration::zero());
    }
    // How long one wait may block: the time left, cut to kCancelSlice when cancellable.
    [[nodiscard]] SteadyClock::duration wait_slice() const {
        const auto left = remaining();
        return cancel ? std::min<SteadyClock::duration>(left, kCancelSlice) : left;
    }
    [[nodiscard]] double remaining_seconds() const { return std::chrono::duration<double>(remaining()).count(); }
    // For ppoll(): one wait_slice(), zero once expired. A wait that times out before
    // expired() says so has only reached the end of a slice: wait again.
    [[nodiscard]] timespec remaining_timespec() const {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait_slice()).count();
        return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    }
    // The earlier of two deadlines (cancellable by either's flag; one flag kept, ours first).
    [[nodiscard]] Deadline min(const Deadline& o) const {
        return Deadline{std::min(at, o.at), cancel ? cancel : o.cancel};
    }
};

}  // namespace rocewatch
