// What one probe run between this node and a peer produced: the value every probe returns.
//
// The types themselves are plain model types (daemon/model/probe.hpp), so the snapshot, the
// rules and the API can hold results without linking the probes.
#pragma once

#include <string>

#include "model/probe.hpp"
#include "util/clock.hpp"

namespace rocewatch {

// A result for `kind` (over `rail`) that starts now, for a probe that fills it as it goes.
inline ProbeResult begin_result(ProbeKind kind, const std::string& rail = "") {
    ProbeResult r;
    r.kind = kind;
    r.rail = rail;
    r.started = Clock::now();
    return r;
}

// The end of a probe that says why it failed in `reason`: no reason is success. The
// duration counts from `t0`, when the probe began.
inline void finish_result(ProbeResult& r, SteadyClock::time_point t0) {
    r.duration_seconds = seconds_between(t0, SteadyClock::now());
    r.success = r.reason.empty();
}

// A failed run that got no further than `reason` (a probes/errors.hpp word) and `detail`.
inline ProbeResult failed_result(ProbeKind kind, const std::string& reason, const std::string& detail) {
    ProbeResult r;
    r.kind = kind;
    r.reason = reason;
    r.detail = detail;
    return r;
}

}  // namespace rocewatch
