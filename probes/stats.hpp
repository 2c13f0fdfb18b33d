// Pure arithmetic behind the probe figures: perftest's latency statistics and bandwidth.
#pragma once

#include <cstdint>
#include <vector>

#include "probes/result.hpp"

namespace rocewatch {

// Latency statistics the way perftest's ib_write_lat computes them: print_report_lat()
// in linux-rdma/perftest src/perftest_parameters.c. Checked against the source (code
// search): older releases (the indexed upstream copy, commit fdf716b1) report only the
// median of the iters - 1 deltas with min = sorted[0] and max = sorted[iters - 2]; current
// releases, mirrored in derived trees (e.g. the URMA perftest's print_lat_report, "Remove
// the two largest values"), add LAT_MEASURE_TAIL = 2, average, stdev and the 99% / 99.9%
// columns. We follow the current one:
//   - sort the n samples; when n > 2 the 2 largest are dropped: m = n - 2 samples are "used";
//   - typical = median of the m used samples (get_median: the middle one for odd m, the mean
//     of the two middle ones for even m);
//   - mean and stddev over the m used samples (population: divide by m);
//   - p99 = sorted[ceil(0.99 m)], p99.9 = sorted[ceil(0.999 m)], indexed into the sorted
//     array of ALL n samples, so with fewer than 100 used samples p99 is the smaller of the
//     two dropped samples, exactly as perftest prints it (index clamped to n - 1 for n <= 2);
//   - min = sorted[0].
// Where we differ from perftest, on purpose: `max` is the true largest sample (perftest's
// t_max prints sorted[m], the second largest), and stddev keeps full double precision
// (perftest truncates each deviation to int microseconds before squaring).
// Samples are used as given: convert round trips with half_round_trips() first. Empty
// input gives all zeros with samples == 0.
LatencyStats latency_stats(std::vector<double> samples_seconds);

// perftest's tail drop: how many samples latency_stats() uses out of n.
uint64_t latency_samples_used(uint64_t n);

// bits per second; 0 when seconds is not a positive finite number.
double bandwidth_bps(uint64_t bytes, double seconds);

// Ping-pong probes time full round trips; latency is reported as half of one (perftest's
// rtt_factor = 2 for send and write, sockperf's default too).
constexpr double half_round_trip(double round_trip_seconds) { return round_trip_seconds / 2.0; }
std::vector<double> half_round_trips(std::vector<double> round_trips_seconds);

}  // namespace rocewatch
