// Two-lane bounded worker pool; jobs never throw out of a worker.
#include "api/worker_pool.hpp"

namespace rocewatch::api {

WorkerPool::WorkerPool(size_t general, size_t reserved, size_t max_queued) : max_queued_(max_queued) {
    for (size_t i = 0; i < general; ++i) threads_.emplace_back([this] { work(false); });
    for (size_t i = 0; i < reserved; ++i) threads_.emplace_back([this] { work(true); });
}

WorkerPool::~WorkerPool() { stop(); }

bool WorkerPool::submit(Job job, bool priority) {
    bool wake_reserved = false;
    {
        std::lock_guard lk(mu_);
        auto& q = priority ? priority_ : ordinary_;
        if (stopping_ || q.size() >= max_queued_) return false;
        q.push_back(std::move(job));
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
    for (;;) {
        Job job;
        {
            std::unique_lock lk(mu_);
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
