// Holds the latest probe book; the scheduler replaces it whole, the engine copies it into snapshots.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "daemon/model/probe.hpp"

namespace rocewatch {

class ProbeStore {
public:
    ProbeStore() : current_(std::make_shared<const ProbeBook>()) {}

    std::shared_ptr<const ProbeBook> latest() const {
        std::lock_guard lock(mu_);
        return current_;
    }
    // Applies f to a copy of the current book and publishes the copy; then calls the
    // on-change hook (the engine's wake) outside the lock.
    void update(const std::function<void(ProbeBook&)>& f) {
        std::function<void()> hook;
        {
            std::lock_guard lock(mu_);
            auto next = std::make_shared<ProbeBook>(*current_);
            f(*next);
            current_ = std::move(next);
            hook = on_change_;
        }
        if (hook) hook();
    }
    void set_on_change(std::function<void()> hook) {
        std::lock_guard lock(mu_);
        on_change_ = std::move(hook);
    }

private:
    mutable std::mutex mu_;
    std::shared_ptr<const ProbeBook> current_;
    std::function<void()> on_change_;
};

}  // namespace rocewatch
