// Verbs errors in the probes' words: work completion statuses and errno values of
// libibverbs calls, mapped in one place.
#pragma once

#include <string>

#include <infiniband/verbs.h>

namespace rocewatch {

// ibv_wc_status -> probes/errors.hpp reason ("" for IBV_WC_SUCCESS). errno values
// go through reason_from_errno, except the verbs-specific ones mapped by
// reason_from_verbs_errno. Lives here (not errors.cpp) to keep libibverbs out of
// the TCP-only parts.
const char* reason_from_wc_status(ibv_wc_status status);
const char* reason_from_verbs_errno(int err);
// "<device>: <what> completed with <status text> (status N, vendor_err M)".
std::string wc_detail(const std::string& device, const ibv_wc& wc, const char* what);

}  // namespace rocewatch
