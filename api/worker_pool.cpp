// Two-lane bounded worker pool that grows on demand; jobs never throw out of a worker.
#include "api/worker_pool.hpp"

#include <exception>
#include <utility>

#include "util/thread_name.hpp"

namespace rocewatch::api {

WorkerPool::WorkerPool(size_t general, size_t reserved, size_t max_queued)
    : max_general_(general), max_reserved_(reserved), max_queued_(max_queued) {}

WorkerPool::~WorkerPool() { stop(); }

size_t WorkerPool::threads() const {
    std::lock_guard lk(mu_);
    return started_general_ + started_reserved_;
}

size_t WorkerPool::idle() const {
    std::lock_guard lk(mu_);
    return idle_general_ + idle_reserved_;
}

bool WorkerPool::start_worker_locked(bool reserved) {
    try {
        threads_.emplace_back([this, reserved] {
            name_this_thread(reserved ? "http-reserve" : "http-worker");
            work(reserved);
        });
    } catch (const std::exception&) {  // no thread (or no room for one) to spare: the running workers serve
        return false;
    }
    ++(reserved ? started_reserved_ : started_general_);
    ++(reserved ? starting_reserved_ : starting_general_);
    return true;
}

bool WorkerPool::grow_locked(bool priority) {
    const size_t general_free = idle_general_ + starting_general_;
    const size_t reserved_free = idle_reserved_ + starting_reserved_;
    // Reserved workers take priority jobs only; general ones take what is left of those and
    // every ordinary job.
    const size_t spill = priority_.size() > reserved_free ? priority_.size() - reserved_free : 0;
    if (ordinary_.size() + spill <= general_free) return true;
    if (started_general_ < max_general_ && start_worker_locked(false)) return true;
    if (priority && started_reserved_ < max_reserved_ && start_worker_locked(true)) return true;
    return started_general_ > 0 || (priority && started_reserved_ > 0);  // it waits its turn
}

bool WorkerPool::submit(Job job, bool priority) {
    bool wake_reserved = false;
    {
        std::lock_guard lk(mu_);
        auto& q = priority ? priority_ : ordinary_;
        if (stopping_ || q.size() >= max_queued_) return false;
        q.push_back(std::move(job));
        if (!grow_locked(priority)) {  // no worker could ever take it
            q.pop_back();
            return false;
        }
        // A priority job goes to an idle general worker if there is one, so the reserve
        // stays free for the next scrape while the pool is busy.
        wake_reserved = priority && idle_general_ == 0 && idle_reserved_ > 0;
    }
    (wake_reserved ? reserved_cv_ : general_cv_).notify_one();
    return true;
}

void WorkerPool::stop() {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
        priority_.clear();
        ordinary_.clear();
    }
    general_cv_.notify_all();
    reserved_cv_.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
}

void WorkerPool::work(bool reserved) {
    bool starting = true;
    for (;;) {
        Job job;
        {
            std::unique_lock lk(mu_);
            if (std::exchange(starting, false)) --(reserved ? starting_reserved_ : starting_general_);
            auto& idle = reserved ? idle_reserved_ : idle_general_;
            ++idle;
            (reserved ? reserved_cv_ : general_cv_).wait(lk, [&] {
                return stopping_ || !priority_.empty() || (!reserved && !ordinary_.empty());
            });
            --idle;
            if (stopping_) return;
            auto& q = !priority_.empty() ? priority_ : ordinary_;
            job = std::move(q.front());
            q.pop_front();
        }
        try {
            job();
        } catch (...) {  // the job reports its own failures; nothing may kill a worker
        }
    }
}

}  // namespace rocewatch::api
