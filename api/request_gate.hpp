// Pure judgement of a raw HTTP request head before the server parses it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "api/options.hpp"

namespace rocewatch::api {

// Why the gate turned a connection away; the value is the `reason` label of
// rocewatch_http_rejected_total, so the set is fixed.
enum class RejectReason {
    header_too_large,   // 431: head longer than max_header_bytes
    too_many_headers,   // 431: more than max_headers header lines
    timeout,            // 408: head not complete within the timeout
    transfer_encoding,  // 411/501: we take no chunked (or otherwise coded) bodies
    length_required,    // 411: POST without Content-Length (its body would end at EOF)
    content_encoding,   // 415: no compressed bodies (decompression bombs)
    body_too_large,     // 413: Content-Length above max_body_bytes
    spoofed_header,     // 400: REMOTE_ADDR & co., which gateways may trust
    method,             // 405: not GET, HEAD or POST
    version,            // 505: not HTTP/1.0 or HTTP/1.1
    malformed,          // 400: not a well-formed HTTP/1.x head
    overload,           // 503: worker queue full (decided by the server, not by the head)
    shutting_down,      // 503: server stopping with the connection still queued
    tls_handshake,      // no answer: the TLS handshake failed or did not finish in time
};

const char* to_string(RejectReason r);
const std::vector<RejectReason>& all_reject_reasons();

struct HeadCheck {
    enum class Verdict { incomplete, accept, reject };
    Verdict verdict = Verdict::incomplete;
    int status = 0;                                 // reject: HTTP status to answer with
    RejectReason reason = RejectReason::malformed;  // reject only
    std::string message;                            // reject: one line for the JSON error body
    size_t head_bytes = 0;                          // accept: bytes up to and including the blank line
    size_t content_length = 0;                      // accept: the body that follows (0 without Content-Length)
};

// Judges the bytes received so far on a fresh connection. Lines already complete are
// judged at once, so a hostile head is rejected as soon as its bad line has arrived;
// `incomplete` means "read more" (the caller owns the clock and answers 408 when time
// runs out). Strict on purpose: what passes here has one reading (CRLF line ends only, no
// obs-fold, one numeric Content-Length), so parse_request (http_message.hpp) and a proxy
// in front cannot disagree about where a request or its body ends.
[[nodiscard]] HeadCheck check_request_head(std::string_view head, const ApiOptions& opts);

// Reason phrase for the status codes this server sends ("Request Header Fields Too Large").
const char* status_reason(int status);

}  // namespace rocewatch::api
