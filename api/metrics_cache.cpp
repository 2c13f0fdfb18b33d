// Once-per-snapshot rendering and deflating of /metrics, and Accept-Encoding parsing.
#include "api/metrics_cache.hpp"

#include <string_view>

#include "api/http_text.hpp"
#include "api/metrics.hpp"

namespace rocewatch::api {

MetricsCache::MetricsCache(Latest latest, std::chrono::milliseconds poll) : latest_(std::move(latest)), poll_(poll) {}

MetricsCache::~MetricsCache() { stop(); }

void MetricsCache::start() {
    if (!thread_.joinable()) thread_ = std::thread([this] { prerender_loop(); });
}

void MetricsCache::stop() {
    {
        std::lock_guard lk(warm_mu_);
        stopping_ = true;
    }
    warm_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void MetricsCache::published() {
    {
        std::lock_guard lk(warm_mu_);
        published_ = true;
    }
    warm_cv_.notify_all();
}

MetricsCache::Entry MetricsCache::entry_for(const std::shared_ptr<const Snapshot>& snap, bool gzip) {
    std::lock_guard lock(mu_);
    if (cur_.snap != snap) {
        cur_ = Entry{snap, std::make_shared<const std::string>(render_snapshot_metrics(*snap)), nullptr};
        ++renders_;
    }
    if (gzip && !cur_.deflated) cur_.deflated = std::make_shared<const DeflatedPrefix>(deflate_prefix(*cur_.text));
    return cur_;
}

std::string MetricsCache::body(const std::shared_ptr<const Snapshot>& snap, const std::string& tail, bool gzip) {
    {
        std::lock_guard lk(warm_mu_);
        const auto now = std::chrono::steady_clock::now();
        const bool was_cold = !warm(now);
        last_scrape_ = now;
        scraped_ = true;
        if (gzip) gzip_seen_ = true;
        if (was_cold) warm_cv_.notify_all();
    }
    const Entry e = entry_for(snap, gzip);
    if (gzip) return gzip_with_tail(*e.deflated, tail);
    std::string out;
    out.reserve(e.text->size() + tail.size());
    out += *e.text;
    out += tail;
    return out;
}

bool MetricsCache::ready(const std::shared_ptr<const Snapshot>& snap, bool gzip) {
    std::unique_lock lock(mu_, std::try_to_lock);
    return lock.owns_lock() && snap && cur_.snap == snap && cur_.text && (!gzip || cur_.deflated);
}

// While warm: wakes when told of a new snapshot, and otherwise every kPoll (a source that
// never calls published(); ~10 us a wakeup); sleeps while cold.
void MetricsCache::prerender_loop() {
    std::unique_lock lk(warm_mu_);
    while (!stopping_) {
        if (!warm(std::chrono::steady_clock::now())) {
            warm_cv_.wait(lk, [&] { return stopping_ || warm(std::chrono::steady_clock::now()); });
            continue;
        }
        warm_cv_.wait_for(lk, poll_, [&] { return stopping_ || published_; });
        if (stopping_) break;
        published_ = false;
        lk.unlock();
        try {
            if (auto s = latest_()) entry_for(s, gzip_seen_);
        } catch (...) {  // a render that fails here fails again, visibly, in the scrape
        }
        lk.lock();
    }
}

namespace {

// q=0 (or 0.0, 0.000) refuses a coding (RFC 9110 12.5.3).
bool q_is_zero(std::string_view params) {
    while (!params.empty()) {
        const size_t semi = params.find(';');
        const auto p = trim_ows(params.substr(0, semi));
        params = semi == std::string_view::npos ? std::string_view{} : params.substr(semi + 1);
        if (p.size() < 2 || (p[0] | 0x20) != 'q' || p[1] != '=') continue;
        const auto v = trim_ows(p.substr(2));
        return !v.empty() && v.find_first_not_of("0.") == std::string_view::npos;
    }
    return false;
}

}  // namespace

bool accepts_gzip(const std::string& accept_encoding) {
    std::string_view rest = accept_encoding;
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const auto item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const size_t semi = item.find(';');
        const auto coding = trim_ows(item.substr(0, semi));
        const auto params = semi == std::string_view::npos ? std::string_view{} : item.substr(semi + 1);
        if ((iequals(coding, "gzip") || coding == "*") && !q_is_zero(params)) return true;
    }
    return false;
}

}  // namespace rocewatch::api
