// The --once report for people at a terminal.
#include "api/text_view.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <string_view>

#include "util/log_safe.hpp"

namespace rocewatch::api {
namespace {

constexpr std::string_view kReset = "\033[0m";

std::string_view colour_of(Severity s) {
    switch (s) {
        case Severity::critical: return "\033[1;31m";  // bold red
        case Severity::warning: return "\033[33m";     // yellow
        case Severity::info: return "\033[36m";        // cyan
    }
    return "";
}

std::string upper(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

std::string paint(const std::string& text, std::string_view colour, bool color) {
    if (!color || colour.empty()) return text;
    return std::string(colour) + text + std::string(kReset);
}

}  // namespace

std::string once_text(const Snapshot& s, bool color) {
    const Health h = overall_health(s);
    size_t node = 0, other = 0;
    for (const auto& a : s.alerts) (a.scope == Scope::node ? node : other) += 1;
    std::string_view hc = h == Health::critical  ? colour_of(Severity::critical)
                          : h == Health::warning ? colour_of(Severity::warning)
                                                 : std::string_view("\033[32m");
    std::string out = "rocewatch " + (s.host.hostname.empty() ? std::string("node") : text_safe(s.host.hostname)) +
                      ": " + paint(upper(to_string(h)), hc, color);
    out += " (" + std::to_string(node) + (node == 1 ? " node alert" : " node alerts");
    if (other > 0) out += ", " + std::to_string(other) + " about peers or paths, not counted";
    out += ")\n";
    for (const auto& a : s.alerts) {
        out += "\n" + paint(upper(to_string(a.severity)), colour_of(a.severity), color) + "  " + a.rule + "  " +
               text_safe(a.object);
        if (a.state != AlertState::firing) out += "  (" + std::string(to_string(a.state)) + ")";
        if (a.scope != Scope::node) out += "  [" + std::string(to_string(a.scope)) + "]";
        out += "\n  " + text_safe(a.summary) + "\n";
        if (!a.action.empty()) out += "  action: " + text_safe(a.action) + "\n";
    }
    return out;
}

bool want_color(int fd) {
    const char* no = std::getenv("NO_COLOR");
    if (no && *no) return false;
    const char* term = std::getenv("TERM");
    if (term && std::string_view(term) == "dumb") return false;
    return isatty(fd) == 1;
}

}  // namespace rocewatch::api
