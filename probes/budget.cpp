#include "probes/budget.hpp"

#include <chrono>

namespace rocewatch {

namespace {
size_t side_index(BudgetSide s) { return static_cast<size_t>(s); }
}  // namespace

ProbeBudget::ProbeBudget(ProbeBudgetLimits limits, Now now) : limits_(limits), now_(std::move(now)) {}

void ProbeBudget::set_limits(ProbeBudgetLimits limits) {
    std::lock_guard lock(mu_);
    limits_ = limits;
}

int64_t ProbeBudget::second_now() const {
    return std::chrono::duration_cast<std::chrono::seconds>(now_().time_since_epoch()).count();
}

ProbeBudget::Slot& ProbeBudget::slot(int64_t second) {
    Slot& s = slots_[static_cast<size_t>(second % static_cast<int64_t>(slots_.size()))];
    if (s.second != second) s = Slot{second, 0, 0};
    return s;
}

// The last 60 seconds, this one included; slots older than that are stale and left out.
void ProbeBudget::window(int64_t now_second, uint32_t& runs, uint64_t& bytes) const {
    runs = 0;
    bytes = 0;
    for (const auto& s : slots_)
        if (s.second >= 0 && s.second > now_second - static_cast<int64_t>(slots_.size()) && s.second <= now_second) {
            runs += s.runs;
            bytes += s.bytes;
        }
}

std::optional<std::string> ProbeBudget::admit(BudgetSide side) {
    std::lock_guard lock(mu_);
    const int64_t now = second_now();
    uint32_t runs = 0;
    uint64_t bytes = 0;
    window(now, runs, bytes);
    std::optional<std::string> why;
    if (limits_.runs_per_minute && runs >= limits_.runs_per_minute)
        why = "the node's probe budget is spent: " + std::to_string(runs) +
              " runs in the last minute (max_runs_per_minute " + std::to_string(limits_.runs_per_minute) + ")";
    else if (limits_.bytes_per_minute && bytes >= limits_.bytes_per_minute)
        why = "the node's probe budget is spent: " + std::to_string(bytes) +
              " bytes in the last minute (max_bytes_per_minute " + std::to_string(limits_.bytes_per_minute) + ")";
    if (why) {
        ++refused_[side_index(side)];
        return why;
    }
    ++slot(now).runs;
    ++admitted_[side_index(side)];
    return std::nullopt;
}

void ProbeBudget::charge(BudgetSide side, uint64_t bytes) {
    std::lock_guard lock(mu_);
    slot(second_now()).bytes += bytes;
    bytes_[side_index(side)] += bytes;
}

ProbeBudgetStats ProbeBudget::stats() const {
    std::lock_guard lock(mu_);
    ProbeBudgetStats s;
    s.max_runs_per_minute = limits_.runs_per_minute;
    s.max_bytes_per_minute = limits_.bytes_per_minute;
    window(second_now(), s.runs_last_minute, s.bytes_last_minute);
    s.admitted = admitted_;
    s.refused = refused_;
    s.bytes = bytes_;
    return s;
}

}  // namespace rocewatch
