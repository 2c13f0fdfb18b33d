// One HTTP/1.1 request a connection, bounded as a whole by a deadline, with TLS when asked.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocewatch::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// What ended a request; `none` once a whole answer came back, whatever its status.
enum class Error {
    none,
    refused,          // the connect failed at once: refused, no route, unreachable (errno's words in detail)
    connect_timeout,  // no connection by the connect's own limit (or the deadline)
    timeout,          // connected, but no whole answer by the deadline
    closed,           // the peer closed the connection before the whole answer
    tls,              // handshake, certificate verification, our certificate or key unloadable (OpenSSL's words)
    too_large,        // the body goes past max_body: read no further
    protocol,         // not an HTTP/1.x answer we can read
    cancelled,        // the cancel flag rose
};
[[nodiscard]] const char* to_string(Error e);

// TLS is used only when `enabled`: a process that never asks for it never calls OpenSSL.
struct TlsOptions {
    bool enabled = false;
    std::string ca_file;              // "" = the system's default CA paths
    std::string cert_file, key_file;  // our client certificate, where the server requires one
};

struct Request {
    std::string address;  // numeric IPv4 or IPv6 (brackets allowed) to connect to
    uint16_t port = 0;
    // The host as the URL names it (no brackets): the Host header, the SNI (names only) and
    // what the server's certificate must carry.
    std::string host;
    std::string method = "GET";
    std::string target = "/";
    Headers headers;  // besides Host, Connection and Content-Length, which are ours
    std::string body;
    // Connect, handshake, write and the whole answer: a server that trickles a byte a second
    // gains nothing by it.
    std::chrono::steady_clock::time_point deadline;
    // The connect's own limit, within the deadline: an address whose host went away answers
    // no SYN, and a caller may want to say so before the rest of its deadline is spent.
    std::chrono::milliseconds connect_timeout = std::chrono::seconds(3);
    // Ends the request within ~100 ms of rising (the process is stopping).
    const std::atomic<bool>* cancel = nullptr;
    size_t max_body = 1 << 20;
    TlsOptions tls;
};

struct Response {
    Error error = Error::none;
    std::string detail;  // in words, when error is not none
    int status = 0;
    Headers headers;
    std::string body;  // at most max_body bytes (what had come when the request failed)

    [[nodiscard]] bool ok() const { return error == Error::none; }
    // The first header of that name (case-insensitive), "" when there is none.
    [[nodiscard]] std::string header(std::string_view name) const;
};

// Sends `Connection: close` and no Accept-Encoding: a body is read as sent, never inflated.
// Reads the body by Content-Length, chunked, or until the server closes; skips 1xx answers.
// Never throws.
[[nodiscard]] Response fetch(const Request& rq);

}  // namespace rocewatch::http
