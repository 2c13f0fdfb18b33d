// Request and rejection counters the HTTP server bumps from its threads, read by /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "api/request_gate.hpp"

namespace rocewatch::api {

// Lock-free for the codes this server sends: each (handler, code) of those is an atomic slot
// fixed at construction. Any other code in 100-599 is counted under a mutex (a handler could
// set one; none does). Labels stay bounded because handlers are the route patterns (plus
// "other" for anything unrouted), never raw paths, and codes are HTTP status numbers.
// A slot for each of the 500 codes was 80 KB per server, written once to zero it: 1% of the
// daemon's memory at a DGX Spark for a table with a dozen non-zero entries.
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

    std::vector<std::string> handlers_;                  // last one is "other"
    std::unique_ptr<std::atomic<uint64_t>[]> requests_;  // handler x code_slot()
    mutable std::mutex rare_mu_;
    std::map<std::pair<size_t, int>, uint64_t> rare_;  // (handler, code) for codes without a slot
    std::unique_ptr<std::atomic<uint64_t>[]> rejected_;
};

}  // namespace rocewatch::api
