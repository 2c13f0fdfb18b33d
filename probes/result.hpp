// What one probe run between this node and a peer produced: the value every probe returns.
//
// The types themselves are plain model types (daemon/model/probe.hpp), so the snapshot, the
// rules and the API can hold results without linking the probes.
#pragma once

#include <exception>
#include <string>

#include "daemon/model/probe.hpp"
#include "probes/errors.hpp"
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

// Runs `body(r)`, which says why it failed in r.reason, timed from now: an exception
// becomes internal_error, and finish_result stamps the end. Every probe method runs its
// body through here, so none ever throws.
template <class Body>
ProbeResult guarded_run(ProbeResult r, Body&& body) {
    const auto t0 = SteadyClock::now();
    try {
        body(r);
    } catch (const std::exception& e) {
        r.reason = reason::internal_error;
        r.detail = e.what();
    } catch (...) {
        r.reason = reason::internal_error;
        r.detail = "unknown exception";
    }
    finish_result(r, t0);
    return r;
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
