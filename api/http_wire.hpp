// Small wire-level helpers the front end and the server share: raw answers, addresses.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace rocewatch::api {

// A complete HTTP/1.1 answer with a JSON error body, sent by the front end itself (the
// gate's verdicts and 503s); it always ends the connection.
// The path of a request head's target (without query or fragment); "/" when the line has none.
std::string request_path(std::string_view head);

// `allow`: the Allow header of a 405 ("GET, HEAD, POST" where not given).
// `headers`: more header lines, each ending in CRLF (the routes' Cache-Control and
// X-Content-Type-Options, and the web config's headers), so that an answer from the gate
// carries what every routed answer does.
std::string raw_error_response(int status, const std::string& message, const std::string& allow = "",
                               const std::string& headers = "");

// What every answer carries, routed (routes.cpp's default headers) or the gate's own; the
// web config's headers come after and win over a header of the same name.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kAnswerHeaders{{
    {"Cache-Control", "no-store"},
    {"X-Content-Type-Options", "nosniff"},
}};

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

// Every header `name` (any case) of a head, their values joined by commas: one list, as
// RFC 9110 5.3 reads repeated list headers (Accept-Encoding, Connection).
std::string header_list(std::string_view head, std::string_view name);

// Whether a Connection header's value asks to close: "close" among its comma-separated
// options, in any case (RFC 9110 7.6.1).
bool wants_close(std::string_view connection);

// The request line of `head` (a request the gate accepted) says HTTP/1.0.
bool is_http10(std::string_view head);

}  // namespace rocewatch::api
