// The daemon's command line: flags parsed into what to do and which config settings to override.
#include "daemon/config/flags.hpp"

#include <getopt.h>

#include <iostream>
#include <string>

namespace rocewatch {

const char* const kUsage = R"(usage: rocewatchd [options]
  --config FILE        TOML config (default: built-in defaults)
  --check-config       validate the config, print every error as file:line: key: problem
  --listen ADDR:PORT   HTTP listen address (default 0.0.0.0:9879)
  --sysfs-root DIR     root of sysfs (default /sys)
  --procfs-root DIR    root of procfs (default /proc)
  --lldpd-socket PATH  lldpd's control socket (default /run/lldpd.socket; "" = do not ask lldpd)
  --state-dir DIR      where alert state and history persist (default /var/lib/rocewatch)
  --log-level LEVEL    trace, debug, info, warn, error, critical, off
  --web-config-file FILE
                       TLS and basic auth for the HTTP port, in the Prometheus exporter
                       toolkit's format (also --web.config.file); checked by --check-config
  --once               collect once, print the status JSON, exit 0 healthy / 1 warning / 2 critical
                       (node-scoped alerts only; 3: could not judge)
  --format FORMAT      with --once: json (default, for scripts) or text (alerts with their
                       actions, coloured by severity on a terminal unless NO_COLOR is set)
  --version            print the version and exit
  --help               print this and exit
)";

std::optional<Flags> parse_flags(int argc, char** argv) {
    enum {
        kConfig = 1000,
        kCheck,
        kListen,
        kSysfs,
        kProcfs,
        kLldp,
        kState,
        kLog,
        kWeb,
        kOnce,
        kFormat,
        kVersion,
        kHelp
    };
    static const option opts[] = {
        {"config", required_argument, nullptr, kConfig},
        {"check-config", no_argument, nullptr, kCheck},
        {"listen", required_argument, nullptr, kListen},
        {"sysfs-root", required_argument, nullptr, kSysfs},
        {"procfs-root", required_argument, nullptr, kProcfs},
        {"lldpd-socket", required_argument, nullptr, kLldp},
        {"state-dir", required_argument, nullptr, kState},
        {"log-level", required_argument, nullptr, kLog},
        {"web-config-file", required_argument, nullptr, kWeb},
        {"web.config.file", required_argument, nullptr, kWeb},
        {"once", no_argument, nullptr, kOnce},
        {"format", required_argument, nullptr, kFormat},
        {"version", no_argument, nullptr, kVersion},
        {"help", no_argument, nullptr, kHelp},
        {nullptr, 0, nullptr, 0},
    };
    Flags f;
    bool format_given = false;
    for (int c; (c = getopt_long(argc, argv, "", opts, nullptr)) != -1;) {
        switch (c) {
            case kConfig: f.config_path = optarg; break;
            case kCheck: f.check_config = true; break;
            case kListen: f.overrides.listen = optarg; break;
            case kSysfs: f.overrides.sysfs_root = optarg; break;
            case kProcfs: f.overrides.procfs_root = optarg; break;
            case kLldp: f.overrides.lldpd_socket = optarg; break;
            case kState: f.overrides.state_dir = optarg; break;
            case kLog: f.overrides.log_level = optarg; break;
            case kWeb: f.overrides.web_config_file = optarg; break;
            case kOnce: f.once = true; break;
            case kFormat:
                format_given = true;
                if (std::string(optarg) == "json")
                    f.text = false;
                else if (std::string(optarg) == "text")
                    f.text = true;
                else {
                    std::cerr << "rocewatchd: --format must be json or text, not '" << optarg << "'\n";
                    return std::nullopt;
                }
                break;
            case kVersion: f.version = true; break;
            case kHelp: f.help = true; break;
            default: return std::nullopt;
        }
    }
    if (optind < argc) {
        std::cerr << "rocewatchd: unexpected argument '" << argv[optind] << "'\n";
        return std::nullopt;
    }
    // Without --once the daemon would start and the flag be ignored: one forgotten --once must
    // not leave a daemon listening on every address with the host's defaults.
    if (format_given && !f.once && !f.help && !f.version) {
        std::cerr << "rocewatchd: --format applies to --once only\n";
        return std::nullopt;
    }
    return f;
}

}  // namespace rocewatch
