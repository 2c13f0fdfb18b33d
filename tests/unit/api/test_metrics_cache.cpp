// MetricsCache's background renderer: woken by published(), quiet while nobody scrapes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "api/metrics.hpp"
#include "api/metrics_cache.hpp"
#include "eventually.hpp"

using namespace rocewatch;
using namespace rocewatch::api;
using namespace std::chrono_literals;
using rocewatch::testing::eventually;

namespace {

struct Source {
    std::mutex mu;
    std::shared_ptr<const Snapshot> cur;
    std::shared_ptr<const Snapshot> latest() {
        std::lock_guard lk(mu);
        return cur;
    }
    std::shared_ptr<const Snapshot> publish(uint64_t generation) {
        auto s = std::make_shared<Snapshot>();
        s->generation = generation;
        std::lock_guard lk(mu);
        cur = s;
        return s;
    }
};

// Up to 10 s for `want` renders (a loaded CI machine); returns what it saw.
uint64_t wait_renders(const MetricsCache& c, uint64_t want) {
    for (int i = 0; i < 1000 && c.renders() < want; ++i) std::this_thread::sleep_for(10ms);
    return c.renders();
}

}  // namespace

// The poll is an hour here, so only published() can wake the renderer: the scrape after a
// publish finds the snapshot rendered and deflated, and renders nothing itself.
TEST(MetricsCache, PublishedWakesTheRendererWhileScraped) {
    Source src;
    MetricsCache cache([&] { return src.latest(); }, std::chrono::hours(1));
    cache.start();
    auto s1 = src.publish(1);
    (void)cache.body(s1, "", true);  // the first scrape renders, and warms the cache
    ASSERT_EQ(cache.renders(), 1u);
    auto s2 = src.publish(2);
    cache.published();
    ASSERT_EQ(wait_renders(cache, 2), 2u) << "published() did not wake the renderer";
    const std::string body = cache.body(s2, "tail\n", true);
    EXPECT_EQ(cache.renders(), 2u) << "the scrape rendered again";
    EXPECT_FALSE(body.empty());
    cache.stop();
}

// Prometheus scrapes with gzip only: once deflated, the text is let go (776 KB at 128 NICs).
// A plain scrape renders it again, and for kWarmFor after one the text is kept.
TEST(MetricsCache, KeepsTheTextOnlyWhileSomeoneScrapesWithoutGzip) {
    Source src;
    MetricsCache cache([&] { return src.latest(); }, std::chrono::hours(1));  // no renderer thread
    auto s1 = src.publish(1);
    (void)cache.body(s1, "", true);
    EXPECT_EQ(cache.renders(), 1u);
    EXPECT_TRUE(cache.holds(s1, true));
    EXPECT_TRUE(cache.ready(s1, true)) << "nothing else holds the cache: ready() says what holds() says";
    EXPECT_FALSE(cache.holds(s1, false)) << "the text is still held after deflating";
    EXPECT_EQ(cache.body(s1, "tail\n", false), render_snapshot_metrics(*s1) + "tail\n");
    EXPECT_EQ(cache.renders(), 2u) << "the plain scrape renders the text again";
    (void)cache.body(s1, "", true);
    EXPECT_TRUE(cache.holds(s1, false)) << "a plain scrape came within kWarmFor: the text is kept";
    EXPECT_EQ(cache.renders(), 2u);
    auto s2 = src.publish(2);  // deflated from its pieces, which are joined too while kept
    (void)cache.body(s2, "", true);
    EXPECT_TRUE(cache.holds(s2, true));
    EXPECT_TRUE(cache.holds(s2, false));
    EXPECT_EQ(cache.body(s2, "tail\n", false), render_snapshot_metrics(*s2) + "tail\n");
    EXPECT_EQ(cache.renders(), 3u);
}

// The cache knows which snapshot it rendered without keeping it: once the source publishes
// another, the old one is freed, not held until the next render.
TEST(MetricsCache, KeepsNoSnapshotAliveOnceItIsReplaced) {
    Source src;
    MetricsCache cache([&] { return src.latest(); }, std::chrono::hours(1));
    std::weak_ptr<const Snapshot> first = src.publish(1);
    (void)cache.body(first.lock(), "", true);
    EXPECT_TRUE(cache.holds(first.lock(), true));
    auto s2 = src.publish(2);
    EXPECT_TRUE(first.expired()) << "the cache still holds the snapshot it rendered";
    EXPECT_FALSE(cache.holds(s2, true));
    const std::string body = cache.body(s2, "", false);
    EXPECT_EQ(body, render_snapshot_metrics(*s2));
    EXPECT_EQ(cache.renders(), 2u);
}

// Nobody has scraped: a publish renders nothing.
TEST(MetricsCache, ColdCacheRendersNothing) {
    Source src;
    MetricsCache cache([&] { return src.latest(); }, 1ms);
    cache.start();
    for (uint64_t g = 1; g <= 5; ++g) {
        (void)src.publish(g);
        cache.published();
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(cache.renders(), 0u);
    cache.stop();
}

namespace {

SteadyClock::time_point at(double seconds) {
    // Far from the clock's epoch, which RenderPacing takes for "never".
    return SteadyClock::time_point{} + std::chrono::hours(1) +
           std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
}

// A scrape every 15 s (last at 0), a publish every 5 s (last at `last_publish`).
RenderPacing pace(double last_publish) { return RenderPacing{{15s, 15s}, {5s, 5s}, at(0), at(last_publish)}; }

}  // namespace

TEST(RenderPacing, WithoutAPaceEverySnapshotIsWorthRendering) {
    EXPECT_TRUE(worth_prerendering(RenderPacing{}, at(1)));
    EXPECT_TRUE(worth_prerendering(RenderPacing{{15s, 0s}, {5s, 5s}, at(0), at(1)}, at(1)));
    EXPECT_TRUE(worth_prerendering(RenderPacing{{15s, 15s}, {5s, 0s}, at(0), at(1)}, at(1)));
}

// Scrapes at 0 and 15, snapshots at 1, 6 and 11: only the one at 11 is what the scrape at
// 15 takes; those before it would be rendered for nobody.
TEST(RenderPacing, OnlyTheSnapshotBeforeTheScrapeIsRendered) {
    EXPECT_FALSE(worth_prerendering(pace(1), at(1)));
    EXPECT_FALSE(worth_prerendering(pace(6), at(6)));
    EXPECT_TRUE(worth_prerendering(pace(11), at(11)));
    // Within the lead before the scrape (kMinRenderLead here), the next snapshot might come too
    // late; a publish at 8.8, 1.2 s before it, no longer has two snapshots rendered for it.
    EXPECT_TRUE(worth_prerendering(pace(9.95), at(9.95)));
    EXPECT_FALSE(worth_prerendering(pace(9.85), at(9.85)));
    EXPECT_FALSE(worth_prerendering(pace(8.8), at(8.8)));
}

// The lead is twice the last render, kMinRenderLead at least and a quarter of a publish gap
// at most: a slow render starts early enough to be done before the scrape.
TEST(RenderPacing, TheLeadFollowsWhatTheLastRenderTook) {
    auto p = pace(6);
    EXPECT_EQ(prerendering_worth_from(p), at(15) - kMinRenderLead);
    p.render_took = 300ms;
    EXPECT_EQ(prerendering_worth_from(p), at(14.4));
    EXPECT_TRUE(worth_prerendering(RenderPacing{{15s, 15s}, {5s, 5s}, at(0), at(9.5), 300ms}, at(9.5)));
    p.render_took = 10s;
    EXPECT_EQ(prerendering_worth_from(p), at(13.75));
}

// The snapshot after 6 is late: the one of 6 is rendered once the scrape is that close.
TEST(RenderPacing, WhenTheNextSnapshotIsLateTheLastOneIsRenderedAsTheScrapeNears) {
    EXPECT_FALSE(worth_prerendering(pace(6), at(11)));
    EXPECT_FALSE(worth_prerendering(pace(6), at(14.85)));
    EXPECT_TRUE(worth_prerendering(pace(6), at(14.95)));
    EXPECT_TRUE(worth_prerendering(pace(6), at(20)));  // the scrape is overdue
}

// The time the last test turns true, computed rather than polled for.
TEST(RenderPacing, SaysWhenASnapshotPassedOverBecomesWorthRendering) {
    EXPECT_EQ(prerendering_worth_from(RenderPacing{}), SteadyClock::time_point{});
    EXPECT_EQ(prerendering_worth_from(pace(6)), at(14.9));
    EXPECT_FALSE(worth_prerendering(pace(6), at(14.9) - 1ns));
    EXPECT_TRUE(worth_prerendering(pace(6), at(14.9)));
    EXPECT_EQ(prerendering_worth_from(RenderPacing{{15s, 10s}, {5s, 7s}, at(0), at(6)}), at(10 - 0.1));
}

namespace {

// A clock the test moves; the renderer thread reads it.
struct FakeClock {
    std::atomic<SteadyClock::rep> ticks{at(0).time_since_epoch().count()};
    void set(double seconds) { ticks = at(seconds).time_since_epoch().count(); }
    SteadyClock::time_point now() const { return SteadyClock::time_point{SteadyClock::duration{ticks.load()}}; }
};

// Up to 10 s for the renderer to act on a publish: render it or pass it over.
bool wait_handled(const MetricsCache& c, uint64_t before) {
    return eventually([&] { return c.renders() + c.passed_over() > before; }, 10s, 10ms);
}

// Publishes the next snapshot and waits for the renderer to render it or pass it over. The
// count is taken before the snapshot is out: the renderer's poll may render it before it is
// told, and then the word that follows finds it rendered and counts nothing.
bool publish_handled(Source& src, MetricsCache& cache, uint64_t& generation) {
    const uint64_t before = cache.renders() + cache.passed_over();
    (void)src.publish(++generation);
    cache.published();
    return wait_handled(cache, before);
}

}  // namespace

// Prometheus scrapes every 15 s, the daemon publishes every 5 s: once the pace is known, one
// snapshot in three is rendered, and it is the one each scrape finds ready.
TEST(MetricsCache, RendersOnlyWhatTheNextScrapeTakes) {
    Source src;
    FakeClock clock;
    MetricsCache cache([&] { return src.latest(); }, std::chrono::hours(1), [&] { return clock.now(); });
    cache.start();
    uint64_t generation = 0, renders_at_pace = 0;
    (void)src.publish(++generation);  // the one the first scrape takes
    for (int t = 0; t <= 90; ++t) {
        clock.set(t);
        if (t % 5 == 1) {
            ASSERT_TRUE(publish_handled(src, cache, generation)) << "the renderer did not act on the publish at " << t;
        }
        if (t % 15 != 0) continue;
        if (t >= 45) {  // three scrapes and three publishes in: the pace is known
            EXPECT_TRUE(cache.holds(src.latest(), true)) << "the scrape at " << t << " found no body ready";
            if (t == 45) renders_at_pace = cache.renders();
        }
        (void)cache.body(src.latest(), "", true);
    }
    // Scrapes at 60, 75 and 90: one render for each, done before it.
    EXPECT_EQ(cache.renders() - renders_at_pace, 3u);
    EXPECT_GE(cache.passed_over(), 6u);
    cache.stop();
}

// The snapshot after the one passed over does not come: the poll renders the last one before
// the scrape does.
TEST(MetricsCache, ALateSnapshotLeavesTheLastOneRenderedBeforeTheScrape) {
    Source src;
    FakeClock clock;
    MetricsCache cache([&] { return src.latest(); }, 1ms, [&] { return clock.now(); });
    cache.start();
    uint64_t generation = 0;
    (void)src.publish(++generation);
    for (int t = 0; t <= 36; ++t) {  // scrapes at 0, 15, 30; publishes at 1, 6, ..., 36
        clock.set(t);
        if (t % 5 == 1) {
            ASSERT_TRUE(publish_handled(src, cache, generation));
        }
        if (t % 15 == 0) (void)cache.body(src.latest(), "", true);
    }
    // The snapshot of 36 was passed over; the one of 41 does not come.
    ASSERT_FALSE(cache.holds(src.latest(), true));
    clock.set(42);
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(cache.holds(src.latest(), true)) << "rendered while the next snapshot could still come";
    clock.set(44.95);
    EXPECT_TRUE(eventually([&] { return cache.holds(src.latest(), true); }, 10s, 10ms));
    cache.stop();
}

namespace {

// Runs at the steady clock's pace from wherever the test last moved it.
struct JumpingClock {
    std::atomic<SteadyClock::rep> offset{(at(0) - SteadyClock::now()).count()};
    void jump_to(double seconds) { offset = (at(seconds) - SteadyClock::now()).count(); }
    SteadyClock::time_point now() const { return SteadyClock::now() + SteadyClock::duration{offset.load()}; }
};

}  // namespace

// With no poll to speak of (an hour), a snapshot passed over is rendered when it becomes worth
// rendering: the renderer sleeps until then rather than polling for it.
TEST(MetricsCache, WakesForAPassedOverSnapshotWithoutPolling) {
    Source src;
    JumpingClock clock;
    MetricsCache cache([&] { return src.latest(); }, std::chrono::hours(1), [&] { return clock.now(); });
    cache.start();
    uint64_t generation = 0;
    (void)src.publish(++generation);
    // Scrapes every 1.5 s at 0, 1.5 and 3; publishes every 0.2 s from 0.1 to 3.7.
    for (int tenth = 0; tenth <= 37; ++tenth) {
        clock.jump_to(tenth / 10.0);
        if (tenth % 2 == 1) {
            ASSERT_TRUE(publish_handled(src, cache, generation));
        }
        if (tenth % 15 == 0) (void)cache.body(src.latest(), "", true);
    }
    // A snapshot at 3.9: the next one (4.1) could still serve the scrape at 4.5, so it is
    // passed over; the one at 4.1 does not come. It is worth rendering from 4.45.
    clock.jump_to(3.9);
    (void)src.publish(++generation);
    const uint64_t passed = cache.passed_over();
    cache.published();
    ASSERT_TRUE(eventually([&] { return cache.passed_over() > passed; }, 1s, 1ms))
        << "the snapshot at 3.9 was not passed over";
    EXPECT_TRUE(eventually([&] { return cache.holds(src.latest(), true); }, 10s, 10ms))
        << "the renderer did not wake for the snapshot it passed over";
    cache.stop();
}
