// Fixed tables of atomic counters behind rocewatch_http_requests_total and _rejected_total.
#include "api/http_stats.hpp"

#include <algorithm>

namespace rocewatch::api {

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
    requests_[handler * kCodes + static_cast<size_t>(status - kMinCode)].fetch_add(1, std::memory_order_relaxed);
}

void HttpStats::count_rejected(RejectReason reason) noexcept {
    rejected_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

std::vector<HttpStats::RequestCount> HttpStats::requests() const {
    std::vector<RequestCount> out;
    for (size_t h = 0; h < handlers_.size(); ++h)
        for (size_t c = 0; c < kCodes; ++c)
            if (auto v = requests_[h * kCodes + c].load(std::memory_order_relaxed))
                out.push_back({handlers_[h], static_cast<int>(c) + kMinCode, v});
    return out;
}

std::vector<std::pair<RejectReason, uint64_t>> HttpStats::rejected() const {
    std::vector<std::pair<RejectReason, uint64_t>> out;
    for (auto r : all_reject_reasons())
        out.emplace_back(r, rejected_[static_cast<size_t>(r)].load(std::memory_order_relaxed));
    return out;
}

}  // namespace rocewatch::api
