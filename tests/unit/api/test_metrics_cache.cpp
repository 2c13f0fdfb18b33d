// MetricsCache's background renderer: woken by published(), quiet while nobody scrapes.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "api/metrics_cache.hpp"

using namespace rocewatch;
using namespace rocewatch::api;
using namespace std::chrono_literals;

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
