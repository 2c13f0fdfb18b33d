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
    // What changed: links, addresses or bonds (netlink; GID tables may have moved with them),
    // or only probe results (nothing in sysfs did).
    enum class Reason { links, results };

    void raise(Reason why = Reason::links) const {
        std::function<void(Reason)> listener;
        {
            std::lock_guard lock(mu_);
            listener = listener_;
        }
        if (listener) listener(why);
    }
    void connect(std::function<void(Reason)> listener) {
        std::lock_guard lock(mu_);
        listener_ = std::move(listener);
    }
    void disconnect() { connect(nullptr); }

private:
    mutable std::mutex mu_;
    std::function<void(Reason)> listener_;
};

}  // namespace rocewatch
