// "host:port" text for a host and a port, the inverse of parse_listen_address: an IPv6
// literal in brackets ("[fd00::7]:9879"), anything else as is ("node07:9879", "10.0.0.7:9879").
#pragma once

#include <string>
#include <string_view>

namespace rocewatch {

inline std::string host_port(std::string_view host, unsigned port) {
    const bool v6 = host.find(':') != std::string_view::npos;
    return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

}  // namespace rocewatch
