// The control exchange of a probe session (RDMA, UCX): one JSON request to the peer's
// daemon, one JSON answer back, whatever carries them (the daemon's HTTP port in
// rocewatchd, a TCP line in the probe CLIs).
#pragma once

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

}  // namespace rocewatch
