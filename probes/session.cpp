#include "probes/session.hpp"
#include "util/json_int.hpp"

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

std::string granted_session(const nlohmann::json& answer) {
    const auto it = answer.is_object() ? answer.find("session") : answer.end();
    return it != answer.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void end_session(const SessionExchange& exchange, const std::string& id) {
    if (id.empty()) return;
    try {
        exchange(nlohmann::json{{"end_session", id}}, Deadline::after(std::chrono::seconds(1)));
    } catch (...) {  // best effort: the peer's own deadline still ends the session
    }
}

std::string end_session_request(const nlohmann::json& request) {
    const auto it = request.is_object() ? request.find("end_session") : request.end();
    return it != request.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<SessionAsk> read_session_ask(const nlohmann::json& request, std::string& why) {
    const auto size = json_int_or<uint32_t>(request, "message_size", 0);
    const auto iterations = json_int_or<uint64_t>(request, "iterations", 0);
    if (!size || !iterations) {
        why = "message_size and iterations must be non-negative integers in range";
        return std::nullopt;
    }
    return SessionAsk{.message_size = *size,
                      .iterations = *iterations,
                      .seconds = request.value("seconds", 0.0),
                      .timeout = request.value("timeout", 0.0)};
}

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
