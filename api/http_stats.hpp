// Request and rejection counters the HTTP server bumps from its threads, read by /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/request_gate.hpp"

namespace rocewatch::api {

// Lock-free: every slot is an atomic fixed at construction. Labels stay bounded because
// handlers are the route patterns (plus "other" for anything unrouted), never raw paths,
// and codes are HTTP status numbers.
class HttpStats {
public:
    // `handlers`: the route patterns, in the order the server matches them.
    explicit HttpStats(std::vector<std::string> handlers);

    // Index of `handler` in the list given, or other_handler().
    size_t handler_index(const std::string& handler) const;
    size_t other_handler() const { return handlers_.size() - 1; }

    void count_request(size_t handler, int status) noexcept;
    void count_rejected(RejectReason reason) noexcept;

    struct RequestCount {
        std::string handler;
        int code = 0;
        uint64_t count = 0;
    };
    // Non-zero rows only: handlers x codes is mostly empty.
    std::vector<RequestCount> requests() const;
    // Every reason, zeros included, so rate() has a series from the first scrape.
    std::vector<std::pair<RejectReason, uint64_t>> rejected() const;

private:
    static constexpr int kMinCode = 100;
    static constexpr int kMaxCode = 599;
    static constexpr size_t kCodes = kMaxCode - kMinCode + 1;

    std::vector<std::string> handlers_;  // last one is "other"
    std::unique_ptr<std::atomic<uint64_t>[]> requests_;
    std::unique_ptr<std::atomic<uint64_t>[]> rejected_;
};

}  // namespace rocewatch::api
