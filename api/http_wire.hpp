// Small wire-level helpers the front end and the server share: raw answers, addresses.
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

// GET/HEAD of /metrics, /healthz or /readyz: served by the reserved worker too, so a pool
// busy with slow handlers still answers scrapes and health checks. `head` starts with
// the request line.
bool is_priority_request(std::string_view head);

// GET/HEAD of /metrics (any query).
bool is_metrics_request(std::string_view head);

// The value of the first header `name` (any case) in a head the gate accepted, trimmed;
// "" when absent.
std::string header_value(std::string_view head, std::string_view name);

}  // namespace rocewatch::api
