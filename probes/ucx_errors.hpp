// UCX statuses in the probes' words, mapped in one place, and the status a failed UCX
// step reports.
#pragma once

#include <string>

#include <ucs/type/status.h>

namespace rocewatch {

// ucs_status_t -> probes/errors.hpp reason ("" for UCS_OK and UCS_INPROGRESS). The only
// UCX status mapping; lives here to keep UCX out of the parts built without it.
const char* reason_from_ucs_status(ucs_status_t status);

// What a failed UCX step reports: a reason word and human detail.
struct UcxStatus {
    std::string reason;  // "" = ok
    std::string detail;
    [[nodiscard]] bool ok() const { return reason.empty(); }
};

// A failure from UCX's own status: the mapped reason, `what` and UCX's text as detail.
// An "ok" status (UCS_OK, UCS_INPROGRESS) in a place that failed reads as an I/O error.
UcxStatus ucx_failure(const std::string& what, ucs_status_t st);

}  // namespace rocewatch
