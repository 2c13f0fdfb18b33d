// An http:// or https:// URL split into host, port and path prefix, for the clients the daemon
// configures.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocewatch {

struct HttpUrl {
    bool https = false;
    std::string host;    // without brackets for IPv6
    uint16_t port = 80;  // 443 for https without a port
    std::string path;    // "" or "/prefix" without a trailing slash
};

// "http://host[:port][/path]" or "https://...". User info, queries and fragments are refused:
// they would otherwise be sent somewhere unexpected. `why` says what is wrong when the result
// is empty.
inline std::optional<HttpUrl> parse_http_url(std::string_view s, std::string& why) {
    HttpUrl out;
    if (s.starts_with("https://")) {
        out.https = true;
        out.port = 443;
        s.remove_prefix(8);
    } else if (s.starts_with("http://")) {
        s.remove_prefix(7);
    } else {
        why = "must start with http:// or https://";
        return std::nullopt;
    }
    if (s.find_first_of("?#@ \t\r\n") != std::string_view::npos) {
        why = "must not contain user info, a query, a fragment or white space";
        return std::nullopt;
    }
    const size_t slash = s.find('/');
    std::string_view authority = s.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? std::string_view{} : s.substr(slash);
    while (path.ends_with('/')) path.remove_suffix(1);
    out.path = std::string(path);
    std::string_view port_text;
    if (authority.starts_with('[')) {
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) {
            why = "unclosed [ in the host";
            return std::nullopt;
        }
        out.host = std::string(authority.substr(1, close - 1));
        std::string_view rest = authority.substr(close + 1);
        if (!rest.empty() && rest[0] != ':') {
            why = "expected :port after ]";
            return std::nullopt;
        }
        if (!rest.empty()) port_text = rest.substr(1);
    } else {
        const size_t colon = authority.find(':');
        out.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
        if (colon != std::string_view::npos && port_text.empty()) {
            why = "empty port";
            return std::nullopt;
        }
    }
    if (out.host.empty()) {
        why = "needs a host";
        return std::nullopt;
    }
    if (!port_text.empty()) {
        unsigned p = 0;
        auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
        if (ec != std::errc{} || end != port_text.data() + port_text.size() || p == 0 || p > 65535) {
            why = "port must be 1..65535";
            return std::nullopt;
        }
        out.port = static_cast<uint16_t>(p);
    }
    return out;
}

}  // namespace rocewatch
