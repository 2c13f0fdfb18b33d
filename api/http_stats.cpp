// Fixed tables of atomic counters behind rocewatch_http_requests_total and _rejected_total.
#include "api/http_stats.hpp"

#include <algorithm>
#include <array>

namespace rocewatch::api {
namespace {

// Every status the server and its handlers send, ascending; a slot each per handler.
constexpr std::array kSlotCodes = {200, 204, 206, 301, 302, 304, 400, 401, 403, 404, 405, 408, 411,
                                   413, 414, 415, 422, 429, 431, 500, 501, 502, 503, 504, 505};
constexpr size_t kCodes = kSlotCodes.size();

// The slot of `code`, or kCodes when it has none.
size_t code_slot(int code) {
    auto it = std::lower_bound(kSlotCodes.begin(), kSlotCodes.end(), code);
    return it != kSlotCodes.end() && *it == code ? static_cast<size_t>(it - kSlotCodes.begin()) : kCodes;
}

}  // namespace

HttpStats::HttpStats(std::vector<std::string> handlers) : handlers_(std::move(handlers)) {
    handlers_.emplace_back("other");
    const size_t n = handlers_.size() * kCodes;
    requests_ = std::make_unique<std::atomic<uint64_t>[]>(n);
    for (size_t i = 0; i < n; ++i) requests_[i].store(0, std::memory_order_relaxed);
    const size_t r = all_reject_reasons().size();
    rejected_ = std::make_unique<std::atomic<uint64_t>[]>(r);
    for (size_t i = 0; i < r; ++i) rejected_[i].store(0, std::memory_order_relaxed);
}

size_t HttpStats::handler_index(const std::string& handler) const {
    auto it = std::find(handlers_.begin(), handlers_.end() - 1, handler);
    return static_cast<size_t>(it - handlers_.begin());
}

void HttpStats::count_request(size_t handler, int status) noexcept {
    if (handler >= handlers_.size()) handler = other_handler();
    if (status < kMinCode || status > kMaxCode) status = 500;  // the server never sends these
    if (const size_t slot = code_slot(status); slot < kCodes) {
        requests_[handler * kCodes + slot].fetch_add(1, std::memory_order_relaxed);
        return;
    }
    try {
        std::lock_guard lock(rare_mu_);
        ++rare_[{handler, status}];
    } catch (...) {  // out of memory: the count is lost, the answer is not
    }
}

void HttpStats::count_rejected(RejectReason reason) noexcept {
    rejected_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

std::vector<HttpStats::RequestCount> HttpStats::requests() const {
    std::vector<RequestCount> out;
    std::lock_guard lock(rare_mu_);
    // By handler, then code, as the one table gave them: rare_ is ordered so already, and its
    // rows merge into the slots' as each handler's are walked.
    auto rare = rare_.begin();
    const auto rare_before = [&](size_t h, int code) {
        for (; rare != rare_.end() && rare->first.first == h && rare->first.second < code; ++rare)
            out.push_back({handlers_[h], rare->first.second, rare->second});
    };
    for (size_t h = 0; h < handlers_.size(); ++h) {
        for (size_t c = 0; c < kCodes; ++c) {
            rare_before(h, kSlotCodes[c]);
            if (auto v = requests_[h * kCodes + c].load(std::memory_order_relaxed))
                out.push_back({handlers_[h], kSlotCodes[c], v});
        }
        rare_before(h, kMaxCode + 1);
    }
    return out;
}

std::vector<std::pair<RejectReason, uint64_t>> HttpStats::rejected() const {
    std::vector<std::pair<RejectReason, uint64_t>> out;
    for (auto r : all_reject_reasons())
        out.emplace_back(r, rejected_[static_cast<size_t>(r)].load(std::memory_order_relaxed));
    return out;
}

}  // namespace rocewatch::api
