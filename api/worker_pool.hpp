// Threads that run complete, gated requests: a bounded queue, and a reserve for scrapes and health checks.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rocewatch::api {

// `general` workers take priority jobs first, then ordinary ones; `reserved` workers take
// only priority jobs, so /metrics and /healthz are served while every general worker sits
// in a slow handler (an on-demand probe waits up to 30 s). Each queue holds at most
// `max_queued` waiting jobs; submit() refuses the next one, and the caller answers 503.
// `general` and `reserved` are ceilings: a worker starts when a job finds none idle to take
// it, and stays. A node whose API answers scrapes and the odd curl runs one or two threads
// instead of five, each with its stack and malloc cache (issue 14's memory).
class WorkerPool {
public:
    using Job = std::function<void()>;
    WorkerPool(size_t general, size_t reserved, size_t max_queued);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    [[nodiscard]] bool submit(Job job, bool priority);
    // Workers started so far, general and reserved.
    size_t threads() const;
    // Workers waiting for a job now.
    size_t idle() const;
    // Idempotent: refuses new jobs, drops the waiting ones (their connections are closed
    // by the front end) and joins the workers once their current job returns.
    void stop();

private:
    void work(bool reserved);
    // Under mu_: starts a worker if the waiting jobs outnumber the workers that may take
    // them; false if none could start and none of the right kind runs.
    bool grow_locked(bool priority);
    bool start_worker_locked(bool reserved);

    const size_t max_general_;
    const size_t max_reserved_;
    const size_t max_queued_;
    mutable std::mutex mu_;
    // One per kind of worker, so a job wakes exactly one thread that may take it.
    std::condition_variable general_cv_;
    std::condition_variable reserved_cv_;
    size_t idle_general_ = 0;
    size_t idle_reserved_ = 0;
    size_t started_general_ = 0;
    size_t started_reserved_ = 0;
    // Started but not yet waiting: counted as idle, or a burst would start one per job.
    size_t starting_general_ = 0;
    size_t starting_reserved_ = 0;
    std::deque<Job> priority_;
    std::deque<Job> ordinary_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace rocewatch::api
