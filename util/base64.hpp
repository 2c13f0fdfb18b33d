// RFC 4648 base64, as basic auth's credentials need it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rocewatch {

// With padding.
inline std::string base64_encode(std::string_view in) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    for (size_t i = 0; i < in.size(); i += 3) {
        unsigned n = static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16;
        if (i + 1 < in.size()) n |= static_cast<unsigned>(static_cast<unsigned char>(in[i + 1])) << 8;
        if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
        out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
    }
    return out;
}

// Padding required; nullopt on anything else.
inline std::optional<std::string> base64_decode(std::string_view in) {
    if (in.size() % 4 != 0) return std::nullopt;
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < in.size(); i += 4) {
        int v[4];
        for (int k = 0; k < 4; ++k) {
            const char c = in[i + k];
            const bool pad_ok = i + 4 == in.size() && k >= 2 && c == '=';
            v[k] = pad_ok ? 0 : value(c);
            if (v[k] < 0) return std::nullopt;
            if (pad_ok && k == 2 && in[i + 3] != '=') return std::nullopt;
        }
        const unsigned n = (unsigned(v[0]) << 18) | (unsigned(v[1]) << 12) | (unsigned(v[2]) << 6) | unsigned(v[3]);
        out += static_cast<char>((n >> 16) & 0xff);
        if (in[i + 2] != '=') out += static_cast<char>((n >> 8) & 0xff);
        if (in[i + 3] != '=') out += static_cast<char>(n & 0xff);
    }
    return out;
}

// "Basic <base64(user:password)>" -> {user, password}; nullopt when it is not that.
struct BasicCredentials {
    std::string user;
    std::string password;
};
// Whether an Authorization header's scheme is `scheme` (given with its trailing space): the
// name is matched case-insensitively (RFC 9110, 11.1), "bearer x" as "Bearer x".
inline bool has_auth_scheme(std::string_view header, std::string_view scheme) {
    if (header.size() < scheme.size()) return false;
    for (size_t i = 0; i < scheme.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
        if (lower(header[i]) != lower(scheme[i])) return false;
    }
    return true;
}

inline std::optional<BasicCredentials> parse_basic_authorization(std::string_view header) {
    static constexpr std::string_view kBasic = "Basic ";
    if (!has_auth_scheme(header, kBasic)) return std::nullopt;
    const auto decoded = base64_decode(header.substr(kBasic.size()));
    if (!decoded) return std::nullopt;
    const size_t colon = decoded->find(':');
    if (colon == std::string::npos) return std::nullopt;
    return BasicCredentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

}  // namespace rocewatch
