// The connection front end: one epoll thread accepts, gates and buffers requests, and writes answers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

#include "api/http_stats.hpp"
#include "api/options.hpp"
#include "api/web_guard.hpp"

namespace rocewatch::api {

// One request that passed the gate, with its whole body: what a worker serves.
struct GatedRequest {
    uint64_t ticket = 0;    // hand back to FrontEnd::complete
    std::string bytes;      // the head and exactly Content-Length body bytes
    bool last = false;      // the connection closes after this answer (keep-alive budget spent)
    bool priority = false;  // is_priority_request: the reserved worker may take it
    std::string remote_ip;
    int remote_port = -1;
    std::string local_ip;
    int local_port = -1;
};

// No worker ever touches a socket: this thread reads every request head and body
// non-blocking against a deadline that counts from accept (from the previous answer on
// a kept-alive connection), judges heads with check_request_head, caps connections per
// source address and in total (at the cap, the connection that has waited longest for
// its request makes room), hands complete requests to `dispatch`, and writes the answers
// back non-blocking against a deadline. A slow or idle client costs a buffer, not a thread.
class FrontEnd {
public:
    // Takes a gated request; false means refused (queue full): the front end answers 503.
    using Dispatch = std::function<bool(GatedRequest&&)>;

    // `listen_fd` is bound and listening; it stays the caller's to close. `web` (may be
    // null; must outlive the front end): when it serves TLS, every connection begins with a
    // non-blocking handshake on this thread, under the same deadline as a request head.
    FrontEnd(const ApiOptions& opts, int listen_fd, HttpStats& stats, std::shared_ptr<spdlog::logger> log,
             Dispatch dispatch, WebGuard* web = nullptr);
    ~FrontEnd();
    FrontEnd(const FrontEnd&) = delete;
    FrontEnd& operator=(const FrontEnd&) = delete;

    // The methods the routes serve at the path of a request head (GET implying HEAD), for the
    // Allow header of a method refused before routing; none: that path is not served (404).
    // nullopt: the request must authenticate first (401), so that a client without credentials
    // learns nothing of which paths exist. Before start().
    using AllowFor = std::function<std::optional<std::vector<std::string>>(std::string_view head)>;
    void set_allow_for(AllowFor allow_for);

    void start();
    // Idempotent: stops the thread and closes every connection, whatever it was doing.
    void stop();
    // The answer to `ticket`'s request (complete HTTP bytes); from any thread, also after
    // stop() (then dropped). `close`: end the connection after writing it.
    void complete(uint64_t ticket, std::string response, bool close);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace rocewatch::api
