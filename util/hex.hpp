// Lower-case hex text for bytes and back: tokens, UCX addresses and rkeys, session ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rocewatch {

// 0..15, or -1 for a character that is not a hex digit.
constexpr int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

inline constexpr char kHexDigits[] = "0123456789abcdef";

inline std::string to_hex(std::span<const uint8_t> bytes) {
    std::string s;
    s.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
        s.push_back(kHexDigits[b >> 4]);
        s.push_back(kHexDigits[b & 0xf]);
    }
    return s;
}

// Decodes exactly out.size() bytes from 2 * out.size() hex digits; false (out unspecified)
// on a wrong length or a character that is not a hex digit.
inline bool from_hex(std::string_view hex, std::span<uint8_t> out) {
    if (hex.size() != out.size() * 2) return false;
    for (size_t i = 0; i < out.size(); ++i) {
        const int hi = hex_value(hex[2 * i]);
        const int lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return true;
}

// Any even number of hex digits; nullopt otherwise.
inline std::optional<std::vector<uint8_t>> bytes_from_hex(std::string_view hex) {
    if (hex.size() % 2) return std::nullopt;
    std::vector<uint8_t> out(hex.size() / 2);
    if (!from_hex(hex, out)) return std::nullopt;
    return out;
}

}  // namespace rocewatch
