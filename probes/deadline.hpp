// The time limit every probe runs under: a point on the monotonic clock, never a duration.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>

namespace rocewatch {

using SteadyClock = std::chrono::steady_clock;

struct Deadline {
    SteadyClock::time_point at{};

    static Deadline after(SteadyClock::duration d) { return Deadline{SteadyClock::now() + d}; }
    static Deadline after_seconds(double s) {
        return after(std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s)));
    }

    [[nodiscard]] bool expired(SteadyClock::time_point now = SteadyClock::now()) const { return now >= at; }
    [[nodiscard]] SteadyClock::duration remaining(SteadyClock::time_point now = SteadyClock::now()) const {
        return std::max(at - now, SteadyClock::duration::zero());
    }
    [[nodiscard]] double remaining_seconds() const {
        return std::chrono::duration<double>(remaining()).count();
    }
    // For ppoll(): the time left, zero once expired.
    [[nodiscard]] timespec remaining_timespec() const {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(remaining()).count();
        return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    }
    // The earlier of two deadlines.
    [[nodiscard]] Deadline min(const Deadline& o) const { return Deadline{std::min(at, o.at)}; }
};

}  // namespace rocewatch
