// The monotonic clock every deadline, timeout and measured interval uses, under one name.
#pragma once

#include <chrono>
#include <ctime>

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

// CPU time the calling thread has used. What work is charged against a share of a core: a
// busy machine stretches its wall time (a read preempted for 80 ms held the next counter read
// off for 40 s at a fifth of a percent), not its CPU time.
inline std::chrono::nanoseconds thread_cpu_time() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace rocewatch
