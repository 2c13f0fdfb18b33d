// Settings of the HTTP server: where it listens and the limits its front gate enforces.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace rocewatch::api {

struct ApiOptions {
    std::string host = "0.0.0.0";
    int port = 9879;                       // 0 = ephemeral (tests)
    int threads = 4;                       // worker threads
    std::chrono::milliseconds timeout{5000};  // whole request head+body in; whole response out
    size_t max_header_bytes = 8192;        // request line + headers + blank line
    size_t max_headers = 64;               // header lines
    size_t max_body_bytes = 65536;         // Content-Length ceiling
    // Accepted connections waiting for a worker; one more is answered 503 and closed at
    // once, so a connection flood costs a bounded amount of memory and no worker time.
    size_t max_queued_connections = 32;
};

}  // namespace rocewatch::api
