// rocewatchd: the single composition root. Parses flags, loads config, wires modules, waits on signals.
#include <getopt.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "api/json_view.hpp"
#include "api/server.hpp"
#include "config/config_loader.hpp"
#include "core/engine.hpp"
#include "core/snapshot_store.hpp"
#include "netlink/watcher.hpp"

#ifdef ROCEWATCH_HAVE_UCX
#include <ucp/api/ucp.h>
#endif

namespace rocewatch {
namespace {

struct Flags {
    std::optional<std::string> config_path;
    std::optional<std::string> listen, sysfs_root, procfs_root, log_level, state_dir;
    bool check_config = false;
    bool once = false;
    bool version = false;
    bool help = false;
};

constexpr const char* kUsage = R"(usage: rocewatchd [options]
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
    int c;
    while ((c = getopt_long(argc, argv, "", opts, nullptr)) != -1) {
        switch (c) {
            case kConfig: f.config_path = optarg; break;
            case kCheck: f.check_config = true; break;
            case kListen: f.listen = optarg; break;
            case kSysfs: f.sysfs_root = optarg; break;
            case kProcfs: f.procfs_root = optarg; break;
            case kState: f.state_dir = optarg; break;
            case kLog: f.log_level = optarg; break;
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

// Loads the file (or the defaults) and lays the command-line flags over it; flags win.
ConfigResult load(const Flags& f) {
    ConfigResult r = f.config_path ? load_config_file(*f.config_path)
                                   : ConfigResult{.config = default_config(), .errors = {}};
    if (!r.config) return r;
    auto& c = *r.config;
    auto flag_error = [&](const char* flag, const std::string& problem) {
        r.errors.push_back({.file = "command line", .line = 0, .key = flag, .problem = problem});
    };
    if (f.listen) {
        c.daemon.listen = *f.listen;
        if (!parse_listen_address(*f.listen)) flag_error("--listen", "expected HOST:PORT, [V6]:PORT or :PORT");
    }
    if (f.sysfs_root) c.daemon.sysfs_root = *f.sysfs_root;
    if (f.procfs_root) c.daemon.procfs_root = *f.procfs_root;
    if (f.state_dir) c.daemon.state_dir = *f.state_dir;
    if (f.log_level) {
        if (spdlog::level::from_str(*f.log_level) == spdlog::level::off && *f.log_level != "off")
            flag_error("--log-level", "expected trace, debug, info, warn, error, critical or off");
        c.daemon.log_level = *f.log_level;
    }
    if (!r.errors.empty()) r.config.reset();
    return r;
}

void print_errors(const std::vector<ConfigError>& errors) {
    for (const auto& e : errors) std::cerr << e.to_string() << "\n";
}

std::vector<std::string> error_strings(const std::vector<ConfigError>& errors) {
    std::vector<std::string> out;
    for (const auto& e : errors) out.push_back(e.to_string());
    return out;
}

std::string ucx_version() {
#ifdef ROCEWATCH_HAVE_UCX
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
#else
    return "";
#endif
}

class StoreSource : public api::SnapshotSource {
public:
    explicit StoreSource(const SnapshotStore& s) : store_(s) {}
    std::shared_ptr<const Snapshot> latest() const override { return store_.latest(); }

private:
    const SnapshotStore& store_;
};

int run_once(std::shared_ptr<Config> cfg, std::shared_ptr<spdlog::logger> log) {
    // One shot has no history to wait on: every finding fires now, and nothing persists.
    for (const auto& id : all_rule_ids()) cfg->rules[id].for_duration = Duration{0};
    cfg->daemon.state_dir.clear();
    auto watcher = NetlinkWatcher::create(log, [] {});
    SnapshotStore store;
    EngineSources src{.links = [&] { return watcher->dump(); }, .ucx_version = ucx_version()};
    Engine engine(cfg, std::move(src), store, log);
    auto snap = engine.collect_once();
    auto out = api::status_json(*snap, Clock::now());
    out["alerts"] = api::alerts_json(*snap)["alerts"];
    std::cout << out.dump(2) << std::endl;
    switch (overall_health(*snap)) {
        case Health::healthy: return 0;
        case Health::warning: return 1;
        case Health::critical: return 2;
    }
    return 2;
}

int run_daemon(const Flags& flags, std::shared_ptr<const Config> cfg, std::shared_ptr<spdlog::logger> log) {
    // Signals are taken synchronously by this thread; every other thread inherits the mask.
    sigset_t sigs;
    sigemptyset(&sigs);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&sigs, s);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);

    SnapshotStore store;
    std::atomic<Engine*> engine_ptr{nullptr};
    auto watcher = NetlinkWatcher::create(log, [&] {
        if (auto* e = engine_ptr.load()) e->wake();
    });
    EngineSources src{
        .links = [&] { return watcher->links(); },
        .netlink_events = [&] { return watcher->events(); },
        .netlink_resyncs = [&] { return watcher->resyncs(); },
        .ucx_version = ucx_version(),
    };
    Engine engine(cfg, std::move(src), store, log);
    engine_ptr = &engine;

    auto listen = parse_listen_address(cfg->daemon.listen);  // validated when loaded
    if (listen->host.empty()) listen->host = "0.0.0.0";
    api::ApiOptions api_opts{.host = listen->host,
                        .port = listen->port,
                        .threads = cfg->daemon.http_threads,
                        .timeout = cfg->daemon.http_timeout};
    StoreSource source(store);
    auto api = api::ApiServer::create(api_opts, source, [&] {
        auto s = store.latest();
        return config_to_json(s && s->config ? *s->config : *cfg);
    }, log);

    engine.collect_once();
    std::thread engine_thread([&] { engine.run(); });
    watcher->start();
    api->start();
    log->info("rocewatchd {} serving on {}:{} (sysfs {}, config {})", ROCEWATCH_VERSION, listen->host,
              api->port(), cfg->daemon.sysfs_root, cfg->source.empty() ? "built-in defaults" : cfg->source);

    uint64_t watchdog_usec = 0;
    bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
    sd_notify(0, "READY=1\nSTATUS=collecting");

    // The watchdog is fed only while snapshots keep coming: a wedged collector gets restarted.
    auto tick = watchdog ? std::chrono::microseconds(watchdog_usec / 2) : std::chrono::microseconds(1'000'000);
    auto current = cfg;
    for (;;) {
        timespec ts{.tv_sec = static_cast<time_t>(tick.count() / 1'000'000),
                    .tv_nsec = static_cast<long>(tick.count() % 1'000'000) * 1000};
        int sig = sigtimedwait(&sigs, nullptr, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            log->info("signal {}: stopping", sig);
            break;
        }
        if (sig == SIGHUP) {
            sd_notify(0, "RELOADING=1");
            auto r = load(flags);
            if (r.config) {
                if (r.config->daemon.listen != current->daemon.listen)
                    log->warn("listen address change to {} takes effect at restart", r.config->daemon.listen);
                spdlog::level::level_enum lvl = spdlog::level::from_str(r.config->daemon.log_level);
                log->set_level(lvl);
                current = std::make_shared<const Config>(std::move(*r.config));
                engine.apply_config(current);
                log->info("config reloaded from {}", current->source.empty() ? "built-in defaults" : current->source);
            } else {
                for (const auto& e : r.errors) log->error("config reload rejected: {}", e.to_string());
                engine.reject_config(error_strings(r.errors));
            }
            sd_notify(0, "READY=1");
        }
        if (watchdog) {
            auto s = store.latest();
            auto age = Clock::now() - s->collected_at;
            if (age < 3 * current->daemon.interval + std::chrono::seconds(10)) sd_notify(0, "WATCHDOG=1");
        }
    }
    sd_notify(0, "STOPPING=1");
    api->stop();
    watcher->stop();
    engine.stop();
    engine_thread.join();
    return 0;
}

}  // namespace
}  // namespace rocewatch

int main(int argc, char** argv) {
    using namespace rocewatch;
    auto flags = parse_flags(argc, argv);
    if (!flags) {
        std::cerr << kUsage;
        return 64;
    }
    if (flags->help) {
        std::cout << kUsage;
        return 0;
    }
    if (flags->version) {
        std::cout << "rocewatchd " << ROCEWATCH_VERSION << "\n";
        return 0;
    }
    auto r = load(*flags);
    if (flags->check_config) {
        print_errors(r.errors);
        if (r.config) std::cout << (flags->config_path ? *flags->config_path : "built-in defaults") << ": ok\n";
        return r.config ? 0 : 1;
    }
    if (!r.config) {
        print_errors(r.errors);
        return 1;
    }
    auto log = spdlog::stderr_color_mt("rocewatchd");
    log->set_level(spdlog::level::from_str(r.config->daemon.log_level));
    try {
        auto cfg = std::make_shared<Config>(std::move(*r.config));
        if (flags->once) return run_once(cfg, log);
        return run_daemon(*flags, cfg, log);
    } catch (const std::exception& e) {
        log->critical("{}", e.what());
        // --once speaks the node-health-check convention: 3 is "could not judge".
        return flags->once ? 3 : 1;
    }
}
