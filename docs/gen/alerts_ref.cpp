// Prints the alert rules as a markdown table, straight from the rules engine's own catalog.
#include <iostream>
#include <string>

#include "daemon/rules/rules.hpp"

namespace {

// A '|' inside a cell would end it early.
std::string cell(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '|') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

int main() {
    std::cout << "| rule | default severity | scope | fires when |\n| --- | --- | --- | --- |\n";
    for (const auto& r : rocewatch::rule_catalog())
        std::cout << "| `" << r.id << "` | " << rocewatch::to_string(r.default_severity) << " | "
                  << rocewatch::to_string(r.scope) << " | " << cell(r.description) << " |\n";
    return 0;
}
