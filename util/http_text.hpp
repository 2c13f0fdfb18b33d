// ASCII case-insensitive comparison and optional-whitespace trimming for HTTP heads and
// header values: the server's gate, request classing and Accept-Encoding, and the client.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocewatch {

constexpr char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

constexpr bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

// Without the spaces and tabs (RFC 9110's OWS) at either end.
constexpr std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// The first header `name` (any case) of a parsed header list, nullptr when absent.
inline const std::string* find_header(const std::vector<std::pair<std::string, std::string>>& headers,
                                      std::string_view name) {
    for (const auto& [n, v] : headers)
        if (iequals(n, name)) return &v;
    return nullptr;
}

}  // namespace rocewatch
