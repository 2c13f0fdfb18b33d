// Whether a listen host resolves (getaddrinfo, as the HTTP server's bind does), and why not.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace rocewatch {

// Nothing when `host` is "" (every address), an address, or a name that resolves; else the
// reason, e.g. "cannot resolve node07.invalid: Name or service not known".
inline std::optional<std::string> listen_host_error(const std::string& host) {
    if (host.empty()) return std::nullopt;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    const int err = errno;
    if (res != nullptr) ::freeaddrinfo(res);
    if (rc == 0) return std::nullopt;
    return "cannot resolve " + host + ": " + (rc == EAI_SYSTEM ? std::strerror(err) : ::gai_strerror(rc));
}

}  // namespace rocewatch
