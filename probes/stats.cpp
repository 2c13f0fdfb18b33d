// perftest-compatible latency statistics and bandwidth arithmetic (see stats.hpp).
#include "probes/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace rocewatch {

namespace {

constexpr uint64_t kTail = 2;  // perftest LAT_MEASURE_TAIL

// ceil(m * num / den) in integers: the same index perftest's ceil(m * 0.99) gives for any
// realistic m, without depending on how 0.99 rounds in binary.
uint64_t ceil_fraction(uint64_t m, uint64_t num, uint64_t den) { return (m * num + den - 1) / den; }

}  // namespace

uint64_t latency_samples_used(uint64_t n) { return n > kTail ? n - kTail : n; }

LatencyStats latency_stats(std::vector<double> s) {
    LatencyStats r;
    const uint64_t n = s.size();
    r.samples = n;
    if (n == 0) return r;
    std::sort(s.begin(), s.end());
    const uint64_t m = latency_samples_used(n);
    r.used = m;
    r.min = s.front();
    r.max = s.back();
    // get_median(m, delta): (m - 1) % 2 != 0 means m is even.
    r.typical = (m % 2 == 0) ? (s[m / 2] + s[m / 2 - 1]) / 2.0 : s[m / 2];
    const double sum = std::accumulate(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(m), 0.0);
    r.mean = sum / static_cast<double>(m);
    double sq = 0;
    for (uint64_t i = 0; i < m; ++i) sq += (s[i] - r.mean) * (s[i] - r.mean);
    r.stddev = std::sqrt(sq / static_cast<double>(m));
    r.p99 = s[std::min(ceil_fraction(m, 99, 100), n - 1)];
    r.p99_9 = s[std::min(ceil_fraction(m, 999, 1000), n - 1)];
    return r;
}

double bandwidth_bps(uint64_t bytes, double seconds) {
    if (!(seconds > 0) || !std::isfinite(seconds)) return 0;
    return static_cast<double>(bytes) * 8.0 / seconds;
}

std::vector<double> half_round_trips(std::vector<double> rtts) {
    for (double& v : rtts) v = half_round_trip(v);
    return rtts;
}

}  // namespace rocewatch
