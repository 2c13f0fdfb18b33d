// /metrics bodies: the snapshot's text rendered, and gzip-deflated, once per published snapshot.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/gzip_once.hpp"
#include "api/metrics.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch::api {

using SteadyClock = std::chrono::steady_clock;

// What the background renderer knows of the pace of scrapes and publishes: the last two gaps
// of each, newest first (0 until recorded). It takes the smaller of the two between scrapes
// and the larger between publishes, so that an extra scrape (an operator's curl, a second
// Prometheus) or a slow collection makes it render rather than pass over.
struct RenderPacing {
    SteadyClock::duration scrape_gaps[2]{};
    SteadyClock::duration publish_gaps[2]{};
    SteadyClock::time_point last_scrape{};
    SteadyClock::time_point last_publish{};
    SteadyClock::duration render_took{};  // the renderer's last render and deflate
};

// How long before a scrape the snapshot it takes is rendered when the next one is not there
// by then: twice the last render, at least kMinRenderLead, at most a quarter of a publish gap.
inline constexpr std::chrono::milliseconds kMinRenderLead{100};

// Whether the latest snapshot should be rendered now, before anyone asks for it. Not while
// the next scrape is due after the next snapshot (with the lead above to spare): that scrape
// will want the newer one. When the next snapshot is late, it is rendered once the scrape is
// that close. Prometheus scrapes at a fixed pace, so at a 15 s scrape and a 5 s interval
// this renders one snapshot in three, and two only when a publish falls within the lead
// before a scrape. A wrong guess costs only time: the scrape renders the snapshot itself.
// Pure.
bool worth_prerendering(const RenderPacing& p, SteadyClock::time_point now);
// When worth_prerendering turns true with no publish in between: the lead before the next
// scrape (the epoch when there is no pace yet: true already). Pure.
SteadyClock::time_point prerendering_worth_from(const RenderPacing& p);

// A scrape costs a copy plus a deflate of the small per-request tail (the HTTP counters),
// whatever the number of devices, and many scrapers cost no more work. While someone
// scrapes (a scrape in the last kWarmFor), a background thread also renders and deflates
// new snapshots as soon as they are published (published() wakes it; without that call it
// looks every kPoll), so the scrape after a collection does not pay for it; those the next
// scrape will not want (worth_prerendering) it passes over, and wakes for the last one again
// when it would be worth rendering after all; with nobody scraping, nothing is rendered at
// all.
class MetricsCache {
public:
    using Latest = std::function<std::shared_ptr<const Snapshot>()>;
    using Now = std::function<SteadyClock::time_point()>;
    static constexpr std::chrono::seconds kWarmFor{300};
    // Only a source that never calls published() needs the poll; the daemon's store calls it.
    static constexpr std::chrono::milliseconds kPoll{1000};

    explicit MetricsCache(Latest latest, std::chrono::milliseconds poll = kPoll, Now now = SteadyClock::now);
    ~MetricsCache();
    MetricsCache(const MetricsCache&) = delete;
    MetricsCache& operator=(const MetricsCache&) = delete;

    void start();  // the background renderer
    void stop();   // idempotent
    // A new snapshot is out: the renderer, if warm, starts on it now. Any thread.
    void published();

    // The body for `snap` followed by `tail`: plain, or one gzip member when `gzip`.
    std::string body(const std::shared_ptr<const Snapshot>& snap, const std::string& tail, bool gzip);
    // Whether body(snap, ..., gzip) would render or deflate nothing: it is a copy and the
    // tail's deflate. Never waits (false while a render holds the cache).
    [[nodiscard]] bool ready(const std::shared_ptr<const Snapshot>& snap, bool gzip);
    // The same, waiting for the cache while a render or the background thread holds it: what a
    // caller that must know (a test) asks, where ready()'s false may only mean "busy".
    [[nodiscard]] bool holds(const std::shared_ptr<const Snapshot>& snap, bool gzip);
    // Snapshots rendered so far, by scrapes and by the background thread alike.
    [[nodiscard]] uint64_t renders() const { return renders_; }
    // Published snapshots the background thread did not render when they came out
    // (worth_prerendering said no); it may still have rendered them later, as a scrape neared.
    [[nodiscard]] uint64_t passed_over() const { return passed_over_; }

private:
    struct Entry {
        // Which snapshot this is, without keeping it: one no longer published is freed then,
        // not when the next render replaces this entry, which never comes while nobody
        // scrapes (Prometheus down).
        std::weak_ptr<const Snapshot> snap;
        std::shared_ptr<const std::string> text;
        std::shared_ptr<const DeflatedPrefix> deflated;  // made once gzip was asked for
    };
    Entry entry_for(const std::shared_ptr<const Snapshot>& snap, bool gzip);
    // mu_ held. Whether cur_ is snap's (an expired entry is nobody's: no address reused).
    bool current(const std::shared_ptr<const Snapshot>& snap) const { return snap && cur_.snap.lock() == snap; }
    // Whether the current body for snap is there, plain or deflated. With mu_ held.
    [[nodiscard]] bool has(const std::shared_ptr<const Snapshot>& snap, bool gzip) const;
    void prerender_loop();
    // warm_mu_ held.
    bool warm(SteadyClock::time_point now) const { return scraped_ && now - pacing_.last_scrape < kWarmFor; }

    Latest latest_;
    std::chrono::milliseconds poll_;
    Now now_;
    std::atomic<uint64_t> renders_{0};
    std::atomic<uint64_t> passed_over_{0};
    std::mutex mu_;  // guards cur_ and sizes_; held while rendering, so a snapshot is rendered once
    Entry cur_;
    RenderSizes sizes_;  // of the last render, for the next
    std::atomic<bool> gzip_seen_{false};
    // When the last scrape without gzip came (time_since_epoch); none yet: min.
    std::atomic<SteadyClock::rep> last_plain_{std::numeric_limits<SteadyClock::rep>::min()};
    bool plain_wanted(SteadyClock::time_point now) const {
        const auto last = last_plain_.load();
        return last != std::numeric_limits<SteadyClock::rep>::min() &&
               now - SteadyClock::time_point(SteadyClock::duration(last)) < kWarmFor;
    }

    std::mutex warm_mu_;
    std::condition_variable warm_cv_;
    RenderPacing pacing_;
    bool scraped_ = false;
    bool stopping_ = false;
    bool published_ = false;
    std::thread thread_;
};

// Whether an Accept-Encoding value admits gzip (a "gzip" or "*" coding whose q is not 0).
bool accepts_gzip(const std::string& accept_encoding);

}  // namespace rocewatch::api
