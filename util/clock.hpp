// The monotonic clock every deadline, timeout and measured interval uses, under one name.
#pragma once

#include <chrono>

namespace rocewatch {

using SteadyClock = std::chrono::steady_clock;

// Seconds from `from` to `to` (negative when `to` is earlier), for any clock's time points.
template <class Clock, class Dur>
double seconds_between(std::chrono::time_point<Clock, Dur> from, std::chrono::time_point<Clock, Dur> to) {
    return std::chrono::duration<double>(to - from).count();
}

// A duration given in (fractional) seconds, on the steady clock's tick.
inline SteadyClock::duration from_seconds(double s) {
    return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

}  // namespace rocewatch
