// The daemon's command line: flags parsed into what to do and which config settings to override.
#include "daemon/config/flags.hpp"

#include <getopt.h>

#include <iostream>

namespace rocewatch {

const char* const kUsage = R"(usage: rocewatchd [options]
  --config FILE        TOML config (default: built-in defaults)
  --check-config       validate the config, print every error as file:line: key: problem
  --listen ADDR:PORT   HTTP listen address (default 0.0.0.0:9879)
  --sysfs-root DIR     root of sysfs (default /sys)
  --procfs-root DIR    root of procfs (default /proc)
  --state-dir DIR      where alert state and history persist (default /var/lib/rocewatch)
  --log-level LEVEL    trace, debug, info, warn, error, critical, off
  --once               collect once, print the status JSON, exit 0 healthy / 1 warning / 2 critical
  --version            print the version and exit
)";

std::optional<Flags> parse_flags(int argc, char** argv) {
    enum { kConfig = 1000, kCheck, kListen, kSysfs, kProcfs, kState, kLog, kOnce, kVersion, kHelp };
    static const option opts[] = {
        {"config", required_argument, nullptr, kConfig},
        {"check-config", no_argument, nullptr, kCheck},
        {"listen", required_argument, nullptr, kListen},
        {"sysfs-root", required_argument, nullptr, kSysfs},
        {"procfs-root", required_argument, nullptr, kProcfs},
        {"state-dir", required_argument, nullptr, kState},
        {"log-level", required_argument, nullptr, kLog},
        {"once", no_argument, nullptr, kOnce},
        {"version", no_argument, nullptr, kVersion},
        {"help", no_argument, nullptr, kHelp},
        {nullptr, 0, nullptr, 0},
    };
    Flags f;
    for (int c; (c = getopt_long(argc, argv, "", opts, nullptr)) != -1;) {
        switch (c) {
            case kConfig: f.config_path = optarg; break;
            case kCheck: f.check_config = true; break;
            case kListen: f.overrides.listen = optarg; break;
            case kSysfs: f.overrides.sysfs_root = optarg; break;
            case kProcfs: f.overrides.procfs_root = optarg; break;
            case kState: f.overrides.state_dir = optarg; break;
            case kLog: f.overrides.log_level = optarg; break;
            case kOnce: f.once = true; break;
            case kVersion: f.version = true; break;
            case kHelp: f.help = true; break;
            default: return std::nullopt;
        }
    }
    if (optind < argc) {
        std::cerr << "rocewatchd: unexpected argument '" << argv[optind] << "'\n";
        return std::nullopt;
    }
    return f;
}

}  // namespace rocewatch
