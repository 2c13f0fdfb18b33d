// The node's probe budget ([probes] max_runs_per_minute, max_bytes_per_minute): every probe run
// this daemon starts and every session a peer asks of it (TCP data port, RDMA and UCX sessions)
// is admitted against the runs and bytes of the last 60 seconds, so that no schedule, rotation,
// on-demand request or crowd of peers can push the node's probe load past it.
//
// Runs are counted when admitted; bytes when known, at the end of the run (a bandwidth probe's
// size is its line rate times its duration, unknown before). So the runs bound holds exactly and
// the bytes bound within the runs already admitted when the minute's bytes ran out.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "daemon/model/config.hpp"
#include "daemon/model/probe.hpp"
#include "util/clock.hpp"

namespace rocewatch {

struct ProbeBudgetLimits {
    uint32_t runs_per_minute = 0;   // 0 = no limit
    uint64_t bytes_per_minute = 0;  // 0 = no limit
};

// [probes] max_runs_per_minute and max_bytes_per_minute.
inline ProbeBudgetLimits budget_limits(const ProbesConfig& p) {
    return {p.max_runs_per_minute, p.max_bytes_per_minute};
}

enum class BudgetSide { own = 0, peer = 1 };

class ProbeBudget {
public:
    using Now = std::function<SteadyClock::time_point()>;
    explicit ProbeBudget(
        ProbeBudgetLimits limits, Now now = [] { return SteadyClock::now(); });

    void set_limits(ProbeBudgetLimits limits);
    // Admits one run and counts it; or, when the last minute's runs or bytes are spent, says why
    // not (and counts the refusal). nullopt = admitted.
    [[nodiscard]] std::optional<std::string> admit(BudgetSide side);
    // The payload bytes an admitted run moved.
    void charge(BudgetSide side, uint64_t bytes);
    [[nodiscard]] ProbeBudgetStats stats() const;

    // Bandwidth-probe bulk this node moves now: a bandwidth run of its own, or a peer's sink
    // session on the TCP data port. A latency probe that shares a queue with it measures the
    // queue (a 64 KiB segment is 0.5 ms at 1 Gb/s), so the data port answers an echo request
    // busy, and the scheduler puts its own latency probes off, while any flows.
    class Bulk {
    public:
        Bulk() = default;
        explicit Bulk(ProbeBudget* b) : b_(b) {
            if (b_) ++b_->bulk_;
        }
        Bulk(Bulk&& o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
        Bulk& operator=(Bulk&& o) noexcept {
            if (this != &o) {
                reset();
                b_ = std::exchange(o.b_, nullptr);
            }
            return *this;
        }
        Bulk(const Bulk&) = delete;
        Bulk& operator=(const Bulk&) = delete;
        ~Bulk() { reset(); }
        void reset() {
            if (b_) --b_->bulk_;
            b_ = nullptr;
        }

    private:
        ProbeBudget* b_ = nullptr;
    };
    [[nodiscard]] Bulk bulk() { return Bulk(this); }
    [[nodiscard]] bool moving_bulk() const { return bulk_.load(std::memory_order_relaxed) > 0; }

private:
    struct Slot {
        int64_t second = -1;  // which second of the steady clock the slot holds
        uint32_t runs = 0;
        uint64_t bytes = 0;
    };
    Slot& slot(int64_t second);
    void window(int64_t now_second, uint32_t& runs, uint64_t& bytes) const;
    int64_t second_now() const;

    mutable std::mutex mu_;
    ProbeBudgetLimits limits_;
    Now now_;
    std::array<Slot, 60> slots_{};
    std::array<uint64_t, 2> admitted_{};
    std::array<uint64_t, 2> refused_{};
    std::array<uint64_t, 2> bytes_{};
    std::atomic<int> bulk_{0};
};

}  // namespace rocewatch
