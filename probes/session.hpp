// The control exchange of a probe session (RDMA, UCX): one JSON request to the peer's
// daemon, one JSON answer back, whatever carries them (the daemon's HTTP port in
// rocewatchd, a TCP line in the probe CLIs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "probes/deadline.hpp"

namespace rocewatch {

// The peer's answer; a transport failure leaves `body` empty with a probes/errors.hpp
// reason and a human detail. A refusal by the peer is a body holding "reason"/"detail".
struct SessionReply {
    std::optional<nlohmann::json> body;
    std::string reason;
    std::string detail;
};

// Carries one request to the peer and brings its answer back within the deadline.
using SessionExchange = std::function<SessionReply(const nlohmann::json& request, Deadline deadline)>;

// The id of the session a peer granted: its answer's "session" ("" when it gives none, as
// the probe CLIs' passive sides do).
std::string granted_session(const nlohmann::json& answer);

// Asks the peer to end session `id` now ({"end_session": id} over the same exchange): our
// side of the run failed, so the peer would otherwise wait for a closing write or result
// until its deadline and refuse every other peer meanwhile. Best effort, a second at most;
// nothing is sent for an empty id.
void end_session(const SessionExchange& exchange, const std::string& id);

// The request end_session sends, as the passive side reads it: the id, or "" when the
// request is not one.
std::string end_session_request(const nlohmann::json& request);

// What a peer may ask of this daemon's passive side: this daemon's own config, whatever
// the peer sends.
struct SessionBudget {
    uint32_t max_message_size = 0;
    uint64_t max_lat_iterations = 0;
    double max_bw_seconds = 0;       // a timed bandwidth run (iterations == 0)
    uint64_t max_bw_iterations = 0;  // a counted one, per stream (0: timed runs only)
};

// The run a peer's session request asks for, as the passive side reads it.
struct SessionAsk {
    uint32_t message_size = 0;
    uint64_t iterations = 0;  // bandwidth: 0 = a timed run
    double seconds = 0;
    double timeout = 0;
};

// Reads a session request's message_size, iterations, seconds and timeout; nullopt (with `why`)
// when a whole number is a float, negative or out of its range: such a number never reaches a
// cast or a budget check.
std::optional<SessionAsk> read_session_ask(const nlohmann::json& request, std::string& why);

// Why a latency (`latency`) or bandwidth run of `size`-byte messages, `iterations` long
// (bandwidth: 0 = timed, `seconds` long), is more than `b` grants; "" when it is within.
std::string session_over_budget(bool latency, uint32_t size, uint64_t iterations, double seconds,
                                const SessionBudget& b);

}  // namespace rocewatch
