// Comparing secrets (probe tokens, bearer tokens) without leaking where they differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rocewatch {

// Time depends on the length only, never on the first differing byte. Lengths are not
// secret (a token's is fixed and documented), so unequal lengths return at once.
inline bool constant_time_equal(std::span<const uint8_t> a, std::span<const uint8_t> b) {
    if (a.size() != b.size()) return false;
    // volatile keeps the compiler from turning the loop into an early-exit memcmp.
    volatile uint8_t diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff = static_cast<uint8_t>(diff | (a[i] ^ b[i]));
    return diff == 0;
}

inline bool constant_time_equal(std::string_view a, std::string_view b) {
    return constant_time_equal(std::span(reinterpret_cast<const uint8_t*>(a.data()), a.size()),
                               std::span(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
}

}  // namespace rocewatch
