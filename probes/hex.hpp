// One hex digit's value, for the token and GID parsers of the probe wire formats.
#pragma once

namespace rocewatch {

// 0..15, or -1 for a character that is not a hex digit.
constexpr int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace rocewatch
