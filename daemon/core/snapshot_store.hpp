// Holds the latest published snapshot; writers replace it whole, readers share it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "daemon/model/snapshot.hpp"

namespace rocewatch {

class SnapshotStore {
public:
    std::shared_ptr<const Snapshot> latest() const {
        std::lock_guard lock(mu_);
        return current_;
    }
    // The snapshot it replaces is freed after the lock is let go (at 128 NICs that takes
    // milliseconds, which readers would otherwise wait out), and then the listener is told.
    void publish(std::shared_ptr<const Snapshot> s) {
        {
            std::lock_guard lock(mu_);
            current_.swap(s);
        }
        s.reset();
        if (on_publish_) on_publish_();
    }
    // Called on the publishing thread after each publish (the /metrics renderer starts
    // on the new snapshot at once). Set before anything publishes.
    void on_publish(std::function<void()> f) { on_publish_ = std::move(f); }

private:
    mutable std::mutex mu_;
    std::shared_ptr<const Snapshot> current_;
    std::function<void()> on_publish_;
};

}  // namespace rocewatch
