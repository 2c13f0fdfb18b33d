// Waiting in tests for what another thread does: the one poll loop the unit tests share.
#pragma once

#include <chrono>
#include <thread>

namespace rocewatch::testing {

// Whether pred() holds within limit, asked every step (and once more at the end).
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(5),
                std::chrono::milliseconds step = std::chrono::milliseconds(20)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (pred()) return true;
        std::this_thread::sleep_for(step);
    }
    return pred();
}

}  // namespace rocewatch::testing
