// check_request_head on well-formed and hostile request heads, without sockets.
#include <gtest/gtest.h>

#include "api/http_wire.hpp"
#include "api/request_gate.hpp"

using namespace rocewatch::api;
using V = HeadCheck::Verdict;

namespace {

ApiOptions opts() {
    ApiOptions o;
    o.max_header_bytes = 8192;
    o.max_headers = 64;
    o.max_body_bytes = 65536;
    return o;
}

HeadCheck check(const std::string& head) { return check_request_head(head, opts()); }

void expect_reject(const std::string& head, int status, RejectReason reason) {
    const auto r = check(head);
    EXPECT_EQ(r.verdict, V::reject) << head;
    EXPECT_EQ(r.status, status) << head;
    EXPECT_EQ(r.reason, reason) << head << " -> " << to_string(r.reason);
    EXPECT_FALSE(r.message.empty());
}

}  // namespace

TEST(RequestGate, AcceptsOrdinaryRequests) {
    const std::string get = "GET /api/v1/status HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
    auto r = check(get);
    EXPECT_EQ(r.verdict, V::accept);
    EXPECT_EQ(r.head_bytes, get.size());
    EXPECT_EQ(check("HEAD /metrics HTTP/1.0\r\n\r\n").verdict, V::accept);
    const std::string post =
        "POST /api/v1/probe HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\nContent-Type: application/json\r\n\r\n";
    r = check(post + "{\"partial body");
    EXPECT_EQ(r.verdict, V::accept);
    EXPECT_EQ(r.head_bytes, post.size()) << "body bytes already read are not part of the head";
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\nX-Odd:   spaced value\t\r\n\r\n").verdict, V::accept);
}

TEST(RequestGate, IncompleteUntilBlankLine) {
    EXPECT_EQ(check("").verdict, V::incomplete);
    EXPECT_EQ(check("GET / HT").verdict, V::incomplete);
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\n").verdict, V::incomplete);
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\n").verdict, V::incomplete);
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\n\r").verdict, V::incomplete);
}

TEST(RequestGate, ChunkedAndOtherTransferCodings) {
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 411,
                  RejectReason::transfer_encoding);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding: gzip, Chunked\r\n\r\n", 411,
                  RejectReason::transfer_encoding);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
                  RejectReason::transfer_encoding);
    // Rejected as soon as the line is in, before the head is complete.
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n", 411, RejectReason::transfer_encoding);
}

TEST(RequestGate, ContentEncoding) {
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n\r\n", 415,
                  RejectReason::content_encoding);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\ncontent-encoding: identity\r\nContent-Length: 1\r\n\r\n", 415,
                  RejectReason::content_encoding);
}

TEST(RequestGate, ContentLength) {
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n", 413, RejectReason::body_too_large);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999999\r\n\r\n", 413,
                  RejectReason::body_too_large);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551617\r\n\r\n", 413,
                  RejectReason::body_too_large);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %31%30\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10, 10\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400,
                  RejectReason::malformed);
}

TEST(RequestGate, OneAuthorizationHeaderOnly) {
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\n\r\n").verdict, V::accept);
    expect_reject("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nAuthorization: Bearer other\r\n\r\n", 400,
                  RejectReason::malformed);
    expect_reject("GET / HTTP/1.1\r\nHost: x\r\nauthorization: Bearer good\r\nAUTHORIZATION: Bearer good\r\n\r\n", 400,
                  RejectReason::malformed);
}

TEST(RequestGate, ContentLengthIsReported) {
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\n\r\n").content_length, 0u);
    EXPECT_EQ(check("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0123\r\n\r\n").content_length, 123u);
    // Leading zeros are not digits that count towards the 64-bit bound.
    EXPECT_EQ(check("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0000000000000000000000005\r\n\r\n").content_length,
              5u);
    EXPECT_EQ(check("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0000000000000000000000000\r\n\r\n").verdict,
              V::accept);
}

TEST(RequestGate, SpoofedAddressHeaders) {
    for (const char* h :
         {"REMOTE_ADDR: 10.0.0.1", "remote_addr: 10.0.0.1", "REMOTE_PORT: 1", "LOCAL_ADDR: 1.2.3.4", "Local_Port: 80"})
        expect_reject(std::string("GET / HTTP/1.1\r\nHost: x\r\n") + h + "\r\n\r\n", 400, RejectReason::spoofed_header);
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\nREMOTE-ADDR: 10.0.0.1\r\n\r\n").verdict, V::accept)
        << "a different key to httplib";
}

// Ranges pass the gate and are ignored (test_server: RangesAreIgnoredAndTheWholeAnswerServed).
TEST(RequestGate, RangeRequestsPass) {
    EXPECT_EQ(check("GET /metrics HTTP/1.1\r\nHost: x\r\nRange: bytes=0-,0-,0-,0-\r\n\r\n").verdict, V::accept);
}

TEST(HttpWire, ConnectionCloseInAnyCaseAndAmongOptions) {
    for (const char* v : {"close", "Close", "CLOSE", "keep-alive, close", " foo ,close ", "close,TE"})
        EXPECT_TRUE(wants_close(v)) << v;
    for (const char* v : {"", "keep-alive", "closed", "x-close", "Keep-Alive, TE"}) EXPECT_FALSE(wants_close(v)) << v;
}

TEST(RequestGate, HeaderLimits) {
    std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 65; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
    expect_reject(many, 431, RejectReason::too_many_headers);  // judged before the blank line

    std::string ok = "GET / HTTP/1.1\r\nHost: x\r\n";  // Host and 63 more: 64 lines
    for (int i = 0; i < 63; ++i) ok += "X-H" + std::to_string(i) + ": v\r\n";
    EXPECT_EQ(check(ok + "\r\n").verdict, V::accept);

    const std::string big = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a');
    expect_reject(big, 431, RejectReason::header_too_large);  // no line end yet, already too big
    expect_reject(big + "\r\n\r\n", 431, RejectReason::header_too_large);
    // Exactly at the limit is fine.
    std::string exact = "GET / HTTP/1.1\r\nHost: x\r\nX-Fill: ";
    exact += std::string(8192 - exact.size() - 4, 'b') + "\r\n\r\n";
    ASSERT_EQ(exact.size(), 8192u);
    EXPECT_EQ(check(exact).verdict, V::accept);
    expect_reject("GET /" + std::string(9000, 'p') + " HTTP/1.1\r\nHost: x\r\n\r\n", 431,
                  RejectReason::header_too_large);
}

// RFC 9112 3.2: an HTTP/1.1 request must name its Host, once; HTTP/1.0 needs none.
TEST(RequestGate, Http11NeedsOneHost) {
    expect_reject("GET / HTTP/1.1\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n", 400, RejectReason::malformed);  // at once
    expect_reject("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400, RejectReason::malformed);
    EXPECT_EQ(check("GET / HTTP/1.1\r\nhost: 10.0.0.1:9879\r\n\r\n").verdict, V::accept);
    EXPECT_EQ(check("GET / HTTP/1.0\r\n\r\n").verdict, V::accept);
}

TEST(RequestGate, Methods) {
    for (const char* m : {"PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "PRI", "get"})
        expect_reject(std::string(m) + " / HTTP/1.1\r\nHost: x\r\n\r\n", 405, RejectReason::method);
    expect_reject("PUT / HTTP/1.1\r\nHost: x\r\n", 405, RejectReason::method);
}

TEST(RequestGate, MalformedHeads) {
    expect_reject("GET / HTTP/1.1\nHost: x\n\n", 400, RejectReason::malformed);  // bare LF
    expect_reject("GET / HTTP/1.1\r\nHost: x\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET /  HTTP/1.1\r\nHost: x\r\n\r\n", 400, RejectReason::malformed);  // double space
    expect_reject("GET / HTTP/1.1 extra\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET http://evil/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET / FOO/1.1\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET / HTTP/1.1\r\nHost: x\r\n Folded: x\r\n\r\n", 400, RejectReason::malformed);  // obs-fold
    expect_reject("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET / HTTP/1.1\r\nHost: x\r\n: empty-name\r\n\r\n", 400, RejectReason::malformed);
    expect_reject(std::string("GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n", 35), 400, RejectReason::malformed);
    expect_reject("GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400, RejectReason::malformed);
    expect_reject("GET / HTTP/2.0\r\n\r\n", 505, RejectReason::version);
}

TEST(RequestGate, PostNeedsContentLength) {
    expect_reject("POST /api/v1/echo HTTP/1.1\r\nHost: x\r\n\r\n", 411, RejectReason::length_required);
    EXPECT_EQ(check("POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").verdict, V::accept);
    EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\n\r\n").verdict, V::accept) << "GET bodies are never read";
}

TEST(RequestGate, ReasonNames) {
    const auto& all = all_reject_reasons();
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_STRNE(to_string(all[i]), "unknown");
        EXPECT_EQ(static_cast<size_t>(all[i]), i) << "HttpStats indexes its table by the enum value";
    }
    EXPECT_STREQ(status_reason(431), "Request Header Fields Too Large");
}

// Which requests the front end classes: scrapes and health checks for the reserved worker,
// and a scrape's Accept-Encoding for serving a rendered /metrics on its own thread.
TEST(HttpWire, RequestClassesAndHeaderValues) {
    EXPECT_TRUE(is_priority_request("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_TRUE(is_metrics_request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_TRUE(is_metrics_request("HEAD /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_FALSE(is_metrics_request("POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_FALSE(is_metrics_request("GET /metricsx HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_FALSE(is_metrics_request("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));

    const std::string head =
        "GET /metrics HTTP/1.1\r\nHost: a\r\naccept-ENCODING: \t gzip, br \r\nAccept-Encoding: identity\r\n\r\n";
    EXPECT_EQ(header_value(head, "Accept-Encoding"), "gzip, br") << "the first, trimmed, any case";
    EXPECT_EQ(header_value(head, "Host"), "a");
    EXPECT_EQ(header_value(head, "Authorization"), "");
    EXPECT_EQ(header_value("GET / HTTP/1.1\r\nHost: x\r\n\r\nAccept-Encoding: gzip\r\n", "Accept-Encoding"), "")
        << "not past the blank line";
}
