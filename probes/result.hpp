// What one probe run between this node and a peer produced: the value every probe returns.
//
// The types themselves are plain model types (daemon/model/probe.hpp), so the snapshot, the
// rules and the API can hold results without linking the probes.
#pragma once

#include <string>

#include "model/probe.hpp"

namespace rocewatch {

// A failed run that got no further than `reason` (a probes/errors.hpp word) and `detail`.
inline ProbeResult failed_result(ProbeKind kind, const std::string& reason, const std::string& detail) {
    ProbeResult r;
    r.kind = kind;
    r.reason = reason;
    r.detail = detail;
    return r;
}

}  // namespace rocewatch
