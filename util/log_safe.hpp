// Makes text from the network or from files safe to put in a log line: bounded, one line, printable.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "util/utf8.hpp"

namespace rocewatch {

namespace log_safe_detail {

// The one escaper of both below: at most `max` input bytes, the cut marked "...(N bytes)",
// a backslash as \\, and as \xNN every control character (C0, DEL), every byte that is not
// UTF-8, and either every other byte past ASCII (keep_utf8 false) or only the UTF-8 of the C1
// range U+0080..U+009F, written as the C1 byte it stands for (keep_utf8 true).
inline std::string escaped(std::string_view s, size_t max, bool keep_utf8) {
    std::string out;
    const std::string_view shown = s.substr(0, max);
    out.reserve(shown.size() + 16);
    const auto hex = [&](unsigned char c) {
        char buf[5];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
    };
    for (size_t i = 0; i < shown.size();) {
        const auto c = static_cast<unsigned char>(shown[i]);
        const size_t n = keep_utf8 ? utf8_sequence(shown, i) : 1;
        const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(shown[i + 1]) < 0xA0;
        if (c == '\\') {
            out += "\\\\";
        } else if (n == 0 || c < 0x20 || c == 0x7f || (!keep_utf8 && c >= 0x80)) {
            hex(c);
        } else if (c1) {
            hex(static_cast<unsigned char>(shown[i + 1]));
        } else {
            out.append(shown.substr(i, n));
        }
        i += n == 0 ? 1 : n;
    }
    if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
    return out;
}

}  // namespace log_safe_detail

// What a peer or client sends (a session id, a request path) and what a sysfs file holds go
// into log lines. Raw, a CR/LF forges log lines and a 60 KB value floods the journal, so
// every byte outside printable ASCII is written as \xNN (a backslash as \\), and the
// result keeps at most `max` input bytes, marking the cut with "...(N bytes)".
inline std::string log_safe(std::string_view s, size_t max = 128) { return log_safe_detail::escaped(s, max, false); }

// As log_safe, for text people read that may hold UTF-8 of its own (a rule's summary with a
// degree sign, a hostname): valid UTF-8 stays, and only control characters (C0, DEL, and the
// C1 range U+0080..U+009F a terminal may take as ESC or CSI), bytes that are not UTF-8 and the
// backslash are escaped. For a log line, a journal field or a terminal.
inline std::string text_safe(std::string_view s, size_t max = 4096) { return log_safe_detail::escaped(s, max, true); }

}  // namespace rocewatch
