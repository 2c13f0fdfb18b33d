// A name lookup that gives up at a deadline, for the clients that connect to configured hosts.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace rocewatch::http {

// `host` is an IPv4 or IPv6 address as written (no brackets), not a name.
[[nodiscard]] bool is_ip_literal(const std::string& host);

// The numeric address of `host` (a name, an IPv4 address, or an IPv6 one with or without
// brackets), looked up by the time `deadline` is reached. A name the resolver has not
// answered by then gives nullopt and says so in `why`: the caller fails with a reason
// instead of hanging on a slow resolver. Never throws.
std::optional<std::string> resolve_host(const std::string& host, std::chrono::steady_clock::time_point deadline,
                                        std::string& why);

}  // namespace rocewatch::http
