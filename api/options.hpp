// Settings of the HTTP server: where it listens and the limits its front gate enforces.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace rocewatch::api {

struct ApiOptions {
    std::string host = "0.0.0.0";
    int port = 9879;  // 0 = ephemeral (tests)
    int threads = 4;  // worker threads
    // Workers only /metrics, /healthz and /readyz may use, on top of `threads`: a pool
    // busy with slow handlers (on-demand probes wait up to 30 s) still answers scrapes.
    int reserved_threads = 1;
    // Whole request head+body in, counted from accept (or from the first byte of a
    // kept-alive connection's next request); whole response out.
    std::chrono::milliseconds timeout{5000};
    // A kept-alive connection may wait this long for its next request, and serve this
    // many requests, before it is closed; every request on it passes the gate.
    std::chrono::milliseconds keep_alive_timeout{30000};
    size_t keep_alive_max_requests = 100;
    // Open connections: in total (at the cap, the one that has waited longest for a
    // request is closed to make room) and per source address (beyond it, 503 at once).
    size_t max_connections = 512;
    size_t max_connections_per_source = 64;
    size_t max_header_bytes = 8192;  // request line + headers + blank line
    size_t max_headers = 64;         // header lines
    size_t max_body_bytes = 65536;   // Content-Length ceiling
    // Complete requests waiting for a worker, per lane (ordinary; /metrics and health);
    // one more is answered 503, so a request flood costs bounded memory and no worker time.
    size_t max_queued_connections = 32;
    // The exporter toolkit's web config (TLS, basic auth, headers); "" = plain HTTP, open.
    std::string web_config_file;
};

}  // namespace rocewatch::api
