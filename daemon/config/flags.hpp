// The daemon's command line: flags parsed into what to do and which config settings to override.
#pragma once

#include <optional>
#include <string>

#include "daemon/config/config_loader.hpp"

namespace rocewatch {

struct Flags {
    std::optional<std::string> config_path;
    ConfigOverrides overrides;  // applied and validated by load_config
    bool check_config = false, once = false, version = false, help = false;
    bool text = false;  // --format=text: --once prints for people, not scripts
};

extern const char* const kUsage;

// nullopt on an unknown flag or a stray argument (said on stderr; the caller prints kUsage).
std::optional<Flags> parse_flags(int argc, char** argv);

}  // namespace rocewatch
