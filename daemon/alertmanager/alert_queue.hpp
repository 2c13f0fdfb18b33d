// The bounded queue between the notifier's two threads: pushing never blocks, and a full queue
// drops its oldest alerts (the newest say the most, and every alert is sent again later).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "daemon/alertmanager/payload.hpp"

namespace rocewatch::alertmanager {

class AlertQueue {
public:
    explicit AlertQueue(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

    // Appends; returns how many of the oldest alerts were dropped to make room.
    size_t push(std::vector<OutgoingAlert> alerts) {
        size_t dropped = 0;
        {
            std::lock_guard lock(mu_);
            for (auto& a : alerts) q_.push_back(std::move(a));
            while (q_.size() > capacity_) {
                q_.pop_front();
                ++dropped;
            }
        }
        cv_.notify_one();
        return dropped;
    }

    // Up to `max` of the oldest alerts, waiting up to `wait` for the first; empty after close()
    // or when nothing came in time.
    std::vector<OutgoingAlert> pop(size_t max, std::chrono::milliseconds wait) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, wait, [&] { return closed_ || !q_.empty(); });
        std::vector<OutgoingAlert> out;
        while (!closed_ && !q_.empty() && out.size() < max) {
            out.push_back(std::move(q_.front()));
            q_.pop_front();
        }
        return out;
    }

    void close() {
        {
            std::lock_guard lock(mu_);
            closed_ = true;
        }
        cv_.notify_all();
    }

    size_t size() const {
        std::lock_guard lock(mu_);
        return q_.size();
    }

    void set_capacity(size_t capacity) {
        std::lock_guard lock(mu_);
        capacity_ = capacity == 0 ? 1 : capacity;
    }

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<OutgoingAlert> q_;
    size_t capacity_;
    bool closed_ = false;
};

}  // namespace rocewatch::alertmanager
