// Makes text from the network or from files safe to put in a log line: bounded, one line, printable.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace rocewatch {

// What a peer or client sends (a session id, a request path) and what a sysfs file holds go
// into log lines. Raw, a CR/LF forges log lines and a 60 KB value floods the journal, so
// every byte outside printable ASCII is written as \xNN (a backslash as \\), and the
// result keeps at most `max` input bytes, marking the cut with "...(N bytes)".
inline std::string log_safe(std::string_view s, size_t max = 128) {
    std::string out;
    const std::string_view shown = s.substr(0, max);
    out.reserve(shown.size() + 16);
    for (unsigned char c : shown) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
    return out;
}

}  // namespace rocewatch
