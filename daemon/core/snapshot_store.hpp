// Holds the latest published snapshot; writers replace it whole, readers share it.
#pragma once

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
    void publish(std::shared_ptr<const Snapshot> s) {
        std::lock_guard lock(mu_);
        current_ = std::move(s);
    }

private:
    mutable std::mutex mu_;
    std::shared_ptr<const Snapshot> current_;
};

}  // namespace rocewatch
