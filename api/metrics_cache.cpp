// Once-per-snapshot rendering and deflating of /metrics, and Accept-Encoding parsing.
#include "api/metrics_cache.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "api/metrics.hpp"
#include "util/http_text.hpp"
#include "util/heap.hpp"
#include "util/thread_name.hpp"

namespace rocewatch::api {

namespace {

// Records the gap since `last` (when there was a last) in `gaps` (the last two, newest first).
void record_gap(SteadyClock::duration (&gaps)[2], SteadyClock::time_point last, SteadyClock::time_point now) {
    if (last == SteadyClock::time_point{}) return;
    gaps[1] = gaps[0];
    gaps[0] = now - last;
}

// The pace once three scrapes and three publishes are in: the smaller of the last two gaps
// between scrapes and the larger of the last two between publishes.
struct Pace {
    SteadyClock::duration scrape_gap;
    SteadyClock::duration publish_gap;
};
std::optional<Pace> known_pace(const RenderPacing& p) {
    using Duration = SteadyClock::duration;
    if (p.scrape_gaps[1] <= Duration::zero() || p.publish_gaps[1] <= Duration::zero()) return std::nullopt;
    return Pace{std::min(p.scrape_gaps[0], p.scrape_gaps[1]), std::max(p.publish_gaps[0], p.publish_gaps[1])};
}

}  // namespace

// The next scrape is due no later than the lead after the next publish (or now, when that
// publish is late).
bool worth_prerendering(const RenderPacing& p, SteadyClock::time_point now) {
    const auto pace = known_pace(p);
    return !pace || std::max(now, p.last_publish + pace->publish_gap) >= prerendering_worth_from(p);
}

SteadyClock::time_point prerendering_worth_from(const RenderPacing& p) {
    const auto pace = known_pace(p);
    if (!pace) return SteadyClock::time_point{};
    // A quarter of a publish gap, as this was until stop 42, rendered two snapshots for a
    // scrape whenever a publish fell in the last quarter before it: a scrape in four at a
    // 15 s scrape and a 5 s interval, every scrape when the two keep that phase (issue 14).
    const SteadyClock::duration lead = std::min<SteadyClock::duration>(
        std::max<SteadyClock::duration>(kMinRenderLead, 2 * p.render_took), pace->publish_gap / 4);
    return p.last_scrape + pace->scrape_gap - lead;
}

MetricsCache::MetricsCache(Latest latest, std::chrono::milliseconds poll, Now now)
    : latest_(std::move(latest)), poll_(poll), now_(std::move(now)) {}

MetricsCache::~MetricsCache() { stop(); }

void MetricsCache::start() {
    if (!thread_.joinable())
        thread_ = std::thread([this] {
            name_this_thread("prerender");
            prerender_loop();
        });
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
        const auto now = now_();
        record_gap(pacing_.publish_gaps, pacing_.last_publish, now);
        pacing_.last_publish = now;
        published_ = true;
    }
    warm_cv_.notify_all();
}

MetricsCache::Entry MetricsCache::entry_for(const std::shared_ptr<const Snapshot>& snap, bool gzip) {
    std::lock_guard lock(mu_);
    if (!current(snap)) cur_ = Entry{snap, nullptr, nullptr};
    // Once deflated, the text is kept only while someone scrapes without gzip: Prometheus
    // never does, and at 128 NICs it is 776 KB held for nobody (issue 14). A plain scrape
    // after that renders the snapshot again.
    const bool keep_text = !gzip || plain_wanted(now_());
    if (gzip && !cur_.deflated && !cur_.text) {
        // Deflated from the pieces as they are: the text is joined only if it is kept.
        ++renders_;
        const auto pieces = render_snapshot_pieces(*snap, &sizes_);
        std::vector<std::string_view> views(pieces.begin(), pieces.end());
        cur_.deflated = std::make_shared<const DeflatedPrefix>(deflate_prefix(views));
        if (keep_text) cur_.text = std::make_shared<const std::string>(join_pieces(pieces));
    } else if (!gzip && !cur_.text) {
        ++renders_;
        cur_.text = std::make_shared<const std::string>(join_pieces(render_snapshot_pieces(*snap, &sizes_)));
    }
    if (gzip && !cur_.deflated) cur_.deflated = std::make_shared<const DeflatedPrefix>(deflate_prefix(*cur_.text));
    if (!keep_text) cur_.text.reset();
    return cur_;
}

std::string MetricsCache::body(const std::shared_ptr<const Snapshot>& snap, const std::string& tail, bool gzip) {
    {
        std::lock_guard lk(warm_mu_);
        const auto now = now_();
        const bool was_cold = !warm(now);
        if (was_cold) {  // a pace from before a cold spell says nothing of this one
            pacing_.scrape_gaps[0] = pacing_.scrape_gaps[1] = SteadyClock::duration::zero();
        } else {
            record_gap(pacing_.scrape_gaps, pacing_.last_scrape, now);
        }
        pacing_.last_scrape = now;
        scraped_ = true;
        if (gzip) gzip_seen_ = true;
        if (!gzip) last_plain_ = now.time_since_epoch().count();
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
    return lock.owns_lock() && has(snap, gzip);
}

bool MetricsCache::holds(const std::shared_ptr<const Snapshot>& snap, bool gzip) {
    const std::lock_guard lock(mu_);
    return has(snap, gzip);
}

bool MetricsCache::has(const std::shared_ptr<const Snapshot>& snap, bool gzip) const {
    return current(snap) && (gzip ? cur_.deflated != nullptr : cur_.text != nullptr);
}

// While warm: wakes when told of a new snapshot, when a snapshot passed over becomes worth
// rendering (the next one is late), and otherwise every poll (a source that never calls
// published()); sleeps while cold. At 50 ms, the polls alone were 8% of the daemon's CPU at
// 128 NICs (issue 14).
void MetricsCache::prerender_loop() {
    std::unique_lock lk(warm_mu_);
    while (!stopping_) {
        const auto now = now_();
        if (!warm(now)) {
            warm_cv_.wait(lk, [&] { return stopping_ || warm(now_()); });
            continue;
        }
        auto wait = std::chrono::duration_cast<SteadyClock::duration>(poll_);
        if (!worth_prerendering(pacing_, now))
            wait = std::clamp(prerendering_worth_from(pacing_) - now,
                              SteadyClock::duration(std::chrono::milliseconds(1)), wait);
        warm_cv_.wait_for(lk, wait, [&] { return stopping_ || published_; });
        if (stopping_) break;
        if (!worth_prerendering(pacing_, now_())) {
            if (std::exchange(published_, false)) ++passed_over_;
            continue;
        }
        published_ = false;
        lk.unlock();
        const auto t0 = SteadyClock::now();  // the real clock, whatever now_ is: a duration
        try {
            if (auto s = latest_()) entry_for(s, gzip_seen_);
        } catch (...) {  // a render that fails here fails again, visibly, in the scrape
        }
        const auto took = SteadyClock::now() - t0;
        give_back_free_heap_pages();  // what the render and deflate let go
        lk.lock();
        pacing_.render_took = took;
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
    std::optional<bool> gzip, star;  // what the client said of gzip by name, and of "*"
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const auto item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const size_t semi = item.find(';');
        const auto coding = trim_ows(item.substr(0, semi));
        const auto params = semi == std::string_view::npos ? std::string_view{} : item.substr(semi + 1);
        if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) gzip = !q_is_zero(params);
        if (coding == "*") star = !q_is_zero(params);
    }
    // A coding named outright wins over "*" (RFC 9110 12.5.3): "gzip;q=0, *" refuses gzip.
    return gzip.value_or(star.value_or(false));
}

}  // namespace rocewatch::api
