// Small wire-level helpers the front end and the server share: raw answers, addresses, log text.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace rocewatch::api {

// A complete HTTP/1.1 answer with a JSON error body, sent without httplib (the gate's
// verdicts and 503s); it always ends the connection.
std::string raw_error_response(int status, const std::string& message);

// Numeric address of `ss` ("127.0.0.1", "::1"), "" for other families; `port` gets the port.
std::string address_of(const sockaddr_storage& ss, int& port);

// Client-controlled text made safe for one log line (the same job as log_safe, which the
// daemon's other log sites get in api/log_safe.hpp; kept here so the front end does not wait on it): at most `max` bytes kept, control
// bytes, backslash and non-ASCII as \xNN, "..." when cut, so no CR/LF/NUL reaches the log.
std::string escape_for_log(std::string_view s, size_t max = 200);

// GET/HEAD of /metrics, /healthz or /readyz: served by the reserved worker too, so a pool
// busy with slow handlers still answers scrapes and health checks. `head` starts with
// the request line.
bool is_priority_request(std::string_view head);

}  // namespace rocewatch::api
