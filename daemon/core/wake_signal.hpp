// The one "something changed, collect soon" signal: netlink and probe results raise it, the engine listens.
#pragma once

#include <functional>
#include <mutex>
#include <utility>

namespace rocewatch {

// Created first by the composition root and handed to every raiser and to the engine, so
// no raiser needs the engine to exist yet. A raise before a listener connects is dropped:
// the engine collects once when it starts anyway.
class WakeSignal {
public:
    void raise() const {
        std::function<void()> listener;
        {
            std::lock_guard lock(mu_);
            listener = listener_;
        }
        if (listener) listener();
    }
    void connect(std::function<void()> listener) {
        std::lock_guard lock(mu_);
        listener_ = std::move(listener);
    }
    void disconnect() { connect(nullptr); }

private:
    mutable std::mutex mu_;
    std::function<void()> listener_;
};

}  // namespace rocewatch
