#include "probes/session.hpp"

namespace rocewatch {
namespace {

// 2.5 -> "2.5", 2.0 -> "2"
std::string number(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

}  // namespace

std::string session_over_budget(bool latency, uint32_t size, uint64_t iterations, double seconds,
                                const SessionBudget& b) {
    if (size == 0 || size > b.max_message_size)
        return "message_size " + std::to_string(size) + " is outside 1.." + std::to_string(b.max_message_size) +
               " bytes that this daemon grants";
    if (latency) {
        if (iterations == 0 || iterations > b.max_lat_iterations)
            return "a latency run of " + std::to_string(iterations) + " iterations; this daemon grants 1.." +
                   std::to_string(b.max_lat_iterations);
        return "";
    }
    if (iterations == 0 && (seconds <= 0 || seconds > b.max_bw_seconds))
        return "a bandwidth run of " + number(seconds) + " s; this daemon grants up to " + number(b.max_bw_seconds) +
               " s";
    if (iterations > b.max_bw_iterations)
        return "a bandwidth run of " + std::to_string(iterations) + " messages per stream; this daemon grants " +
               (b.max_bw_iterations ? "up to " + std::to_string(b.max_bw_iterations) : std::string("timed runs only"));
    return "";
}

}  // namespace rocewatch
