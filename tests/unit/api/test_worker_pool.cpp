// WorkerPool starts workers only when a job finds none free, never past its ceilings, and keeps
// the reserve for priority jobs while every general worker is busy.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "api/worker_pool.hpp"
#include "eventually.hpp"

using namespace rocewatch::api;
using namespace std::chrono_literals;
using rocewatch::testing::eventually;

namespace {

// Holds every job that waits on it until open().
class Gate {
public:
    void wait() {
        std::unique_lock lk(mu_);
        ++waiting_;
        cv_.notify_all();
        cv_.wait(lk, [&] { return open_; });
    }
    void open() {
        std::lock_guard lk(mu_);
        open_ = true;
        cv_.notify_all();
    }
    bool until_waiting(int n) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, 5s, [&] { return waiting_ >= n; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int waiting_ = 0;
    bool open_ = false;
};

}  // namespace

TEST(WorkerPool, StartsNoThreadUntilAJobComes) {
    WorkerPool pool(4, 1, 8);
    EXPECT_EQ(pool.threads(), 0u);
}

TEST(WorkerPool, OneWorkerServesJobsThatComeOneAtATime) {
    WorkerPool pool(4, 1, 8);
    // Whether a worker that finished its job is back waiting when the next comes is up to the
    // scheduler: one that is not yet starts another (under ASan on a loaded machine, a third
    // came up). So each job comes once every worker waits again: then one worker serves all,
    // ordinary and priority jobs alike.
    const auto all_idle = [&] { return eventually([&] { return pool.idle() == pool.threads(); }, 5s, 1ms); };
    for (int i = 0; i < 20; ++i) {
        std::promise<void> done;
        ASSERT_TRUE(pool.submit([&] { done.set_value(); }, i % 2 == 0));
        ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
        ASSERT_TRUE(all_idle());
    }
    EXPECT_EQ(pool.threads(), 1u);
}

TEST(WorkerPool, GrowsToTheGeneralCeilingAndNoFurtherForOrdinaryJobs) {
    Gate gate;  // outlives the pool, whose workers wait on it until joined
    WorkerPool pool(3, 1, 8);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool.submit([&] { gate.wait(); }, false));
    ASSERT_TRUE(gate.until_waiting(3));
    EXPECT_EQ(pool.threads(), 3u);  // two jobs queue; the reserve is not for them
    gate.open();
}

TEST(WorkerPool, APriorityJobStartsTheReserveWhenEveryGeneralWorkerIsBusy) {
    Gate gate;  // outlives the pool, whose workers wait on it until joined
    WorkerPool pool(2, 1, 8);
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(pool.submit([&] { gate.wait(); }, false));
    ASSERT_TRUE(gate.until_waiting(2));
    std::promise<void> served;
    ASSERT_TRUE(pool.submit([&] { served.set_value(); }, true));
    EXPECT_EQ(served.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_EQ(pool.threads(), 3u);
    gate.open();
}

TEST(WorkerPool, AFullQueueRefusesTheNextJob) {
    Gate gate;  // outlives the pool, whose workers wait on it until joined
    WorkerPool pool(1, 0, 2);
    ASSERT_TRUE(pool.submit([&] { gate.wait(); }, false));
    ASSERT_TRUE(gate.until_waiting(1));
    EXPECT_TRUE(pool.submit([] {}, false));
    EXPECT_TRUE(pool.submit([] {}, false));
    EXPECT_FALSE(pool.submit([] {}, false));
    EXPECT_EQ(pool.threads(), 1u);
    gate.open();
}

TEST(WorkerPool, StopRefusesNewJobs) {
    WorkerPool pool(2, 1, 8);
    pool.stop();
    EXPECT_FALSE(pool.submit([] {}, true));
    EXPECT_EQ(pool.threads(), 0u);
}
