// rocewatchd: the single composition root. Parses flags, loads config, builds and wires the modules, waits on signals.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "api/basic_auth.hpp"
#include "api/json_view.hpp"
#include "api/peer_routes.hpp"
#include "api/server.hpp"
#include "api/text_view.hpp"
#include "api/tls_context.hpp"
#include "api/web_config.hpp"
#include "daemon/alertmanager/notifier.hpp"
#include "daemon/cluster/inventory.hpp"
#include "daemon/cluster/inventory_keeper.hpp"
#include "daemon/config/config_loader.hpp"
#include "daemon/config/flags.hpp"
#include "daemon/core/engine.hpp"
#include "daemon/core/probe_store.hpp"
#include "daemon/core/shutdown_steps.hpp"
#include "daemon/core/snapshot_store.hpp"
#include "daemon/core/wake_signal.hpp"
#include "daemon/logging/journal.hpp"
#include "daemon/logging/sd_protocol.hpp"
#include "daemon/lldp/lldp_client.hpp"
#include "daemon/netlink/dcb.hpp"
#include "daemon/netlink/ethtool_nl.hpp"
#include "daemon/netlink/ethtool_stats.hpp"
#include "daemon/netlink/watcher.hpp"
#include "daemon/peering/probers.hpp"
#include "daemon/peering/session_host.hpp"
#include "daemon/peering/token.hpp"
#include "daemon/peering/ucx_session.hpp"
#include "daemon/rules/rules.hpp"
#include "util/heap.hpp"
#include "util/read_file.hpp"
#include "util/resolve.hpp"
#include "util/thread_name.hpp"

namespace rocewatch {
namespace {

// lldpd answers from memory in milliseconds; one that takes longer is stopped or stuck.
constexpr std::chrono::milliseconds kLldpTimeout{1000};

class StoreSource : public api::SnapshotSource {
public:
    explicit StoreSource(const SnapshotStore& s) : store_(s) {}
    std::shared_ptr<const Snapshot> latest() const override { return store_.latest(); }

private:
    const SnapshotStore& store_;
};

// systemd starts services with a soft open-file limit of 1024 (hard 524288) for programs that
// still use select(). rocewatchd uses none (poll and epoll; Debian's cpp-httplib is built
// with poll), and keeps its sysfs counter files open, up to half the soft limit: at 1024 that
// is 512 files, fewer than 8 NICs' counters, and the rest would be opened and closed every
// cycle. So the soft limit goes up to the hard one, as Go programs do.
void raise_open_file_limit(spdlog::logger& log) {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
    const rlim_t was = lim.rlim_cur;
    lim.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &lim) == 0)
        log.debug("open-file limit raised from {} to {}", was, lim.rlim_cur);
    else
        log.warn("open-file limit stays at {} (setrlimit: {}): fewer sysfs files are kept open", was,
                 std::strerror(errno));
}

int run_once(std::shared_ptr<Config> cfg, std::shared_ptr<spdlog::logger> log, bool text) {
    // One shot has no history to wait on: every finding fires now, and nothing persists.
    for (const auto& id : all_rule_ids()) cfg->rules[id].for_duration = Duration{0};
    cfg->daemon.state_dir.clear();
    auto watcher = NetlinkWatcher::create(log, [] {});
    SnapshotStore store;
    const auto ucx_exe = find_ucx_session_exe("/proc/self/exe", ROCEWATCH_UCX_LIBEXEC_DIR);
    Engine engine(cfg,
                  EngineSources{.links = [&] { return watcher->dump(); },
                                .dcb = [](const std::string& n) { return query_dcb(n); },
                                .lldp = [](const std::string& path) { return read_lldp(path, kLldpTimeout); },
                                .ucx_version = ucx_session_child_version(ucx_exe)},
                  store, log);
    engine.log_alerts(false);
    auto snap = engine.collect_once();
    if (text) {
        std::cout << api::once_text(*snap, api::want_color(STDOUT_FILENO)) << std::flush;
    } else {
        auto out = api::status_json(*snap, Clock::now());
        out["alerts"] = api::alerts_json(*snap)["alerts"];
        std::cout << api::dump_json(out) << std::endl;
    }
    switch (overall_health(*snap)) {
        case Health::healthy: return 0;
        case Health::warning: return 1;
        case Health::critical: return 2;
    }
    return 2;
}

// What a SIGHUP reload replaces. The probe config changes only while the scheduler is
// stopped, so its thread never reads it mid-write; token and data port stay as started.
struct Running {
    std::shared_ptr<const Config> config;  // as the file says
    std::shared_ptr<const Config>& probe_config;
    Engine& engine;
    ProbeScheduler& scheduler;
    alertmanager::Notifier& notifier;
    InventoryKeeper& inventory;
    ProbeBudget& budget;
    bool probing;
    uint64_t inventory_generation = 0;  // of the inventory the running peers came from
};

// The file's config with the inventory's peers added: what the engine and the scheduler run.
std::shared_ptr<const Config> with_inventory(const Running& run) {
    auto state = run.inventory.latest();
    auto peers = inventory_peers(*state, *run.config);
    if (peers.empty()) return run.config;
    auto c = std::make_shared<Config>(*run.config);
    c->peers.insert(c->peers.end(), peers.begin(), peers.end());
    return c;
}

void apply_probe_config(Running& run, std::shared_ptr<const Config> effective) {
    run.scheduler.stop();
    run.probe_config = effective;
    run.scheduler.apply_config(std::move(effective));
    if (run.probing) run.scheduler.start();
}

// The inventory changed (file, or this node's place in it): new peers, same config.
void apply_inventory(Running& run, spdlog::logger& log) {
    const uint64_t gen = run.inventory.generation();
    if (gen == run.inventory_generation) return;
    run.inventory_generation = gen;
    auto effective = with_inventory(run);
    std::vector<std::string> names;
    for (const auto& p : effective->peers) names.push_back(p.name);
    if (run.probe_config && run.probe_config->peers.size() == effective->peers.size()) {
        bool same = true;
        for (size_t i = 0; i < names.size() && same; ++i) same = run.probe_config->peers[i].name == names[i];
        if (same) return;
    }
    log.info("inventory: probing {} peer(s)", effective->peers.size());
    run.engine.replace_peers(effective);
    apply_probe_config(run, std::move(effective));
}

void reload(const Flags& flags, Running& run, spdlog::logger& log) {
    auto r = load_config(flags.config_path, flags.overrides);
    if (!r.config) {
        std::vector<std::string> errors;
        for (const auto& e : r.errors) errors.push_back(e.to_string());
        for (const auto& e : errors) log.error("config reload rejected: {}", e);
        run.inventory.reload();  // SIGHUP rereads the inventory even so
        return run.engine.reject_config(std::move(errors));
    }
    // What is taken once at start stays as running, so the config served is the one in effect.
    keep_start_only(*r.config, *run.config);
    for (const auto& p : r.config->restart_pending) log.warn("config reload: {}: takes effect at restart", p);
    log.set_level(spdlog::level::from_str(r.config->daemon.log_level));
    run.config = std::make_shared<const Config>(std::move(*r.config));
    run.inventory.reload(run.config->cluster.inventory);
    run.inventory_generation = run.inventory.generation();
    auto effective = with_inventory(run);
    run.engine.apply_config(effective);
    run.notifier.apply_config(*run.config);
    run.budget.set_limits(budget_limits(run.config->probes));
    apply_probe_config(run, std::move(effective));
    log.info("config reloaded from {}", run.config->source.empty() ? "built-in defaults" : run.config->source);
}

// Until SIGTERM/SIGINT: reloads on SIGHUP, feeds the watchdog only while snapshots keep
// coming, so a wedged collector gets restarted.
void serve(const Flags& flags, const sigset_t& sigs, Running& run, const SnapshotStore& store, spdlog::logger& log) {
    const uint64_t watchdog_usec = logging::watchdog_usec();
    const bool watchdog = watchdog_usec > 0;
    const auto tick = std::chrono::microseconds(watchdog ? watchdog_usec / 2 : 1'000'000);
    for (;;) {
        timespec ts{.tv_sec = static_cast<time_t>(tick.count() / 1'000'000),
                    .tv_nsec = static_cast<long>(tick.count() % 1'000'000) * 1000};
        const int sig = sigtimedwait(&sigs, nullptr, &ts);
        if (sig == SIGTERM || sig == SIGINT) return log.info("signal {}: stopping", sig);
        if (sig == SIGHUP) {
            logging::notify("RELOADING=1");
            reload(flags, run, log);
            logging::notify("READY=1");
        }
        apply_inventory(run, log);
        auto s = store.latest();
        if (watchdog && s &&
            Clock::now() - s->collected_at < 3 * run.config->daemon.interval + std::chrono::seconds(10))
            logging::notify("WATCHDOG=1");
    }
}

int run_daemon(const Flags& flags, std::shared_ptr<const Config> cfg, std::shared_ptr<spdlog::logger> log) {
    // Signals are taken synchronously by this thread; every other thread inherits the mask.
    sigset_t sigs;
    sigemptyset(&sigs);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&sigs, s);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);

    WakeSignal wake;
    SnapshotStore store;
    ProbeStore probe_store;
    probe_store.set_on_change([&] { wake.raise(WakeSignal::Reason::results); });
    auto watcher = NetlinkWatcher::create(log, [&] { wake.raise(WakeSignal::Reason::links); });
    const auto ucx_exe = find_ucx_session_exe("/proc/self/exe", ROCEWATCH_UCX_LIBEXEC_DIR);
    const auto ucx_version = ucx_session_child_version(ucx_exe);
    if (ucx_version.empty())
        log->warn("UCX probes unavailable: no working {} beside rocewatchd or in {}", kUcxSessionExe,
                  ROCEWATCH_UCX_LIBEXEC_DIR);
    alertmanager::Notifier notifier(*cfg, {.snapshots = [&] { return store.latest(); }, .log = log});
    std::unique_ptr<InventoryKeeper> inventory;  // made once the HTTP port is known
    ProbeBudget budget(budget_limits(cfg->probes));
    std::atomic<bool> probing_on{false};  // the budget is shown only while peer probing is on
    auto driver_stats = std::make_shared<DriverStatsReader>(is_lossless_stat);
    auto phy = std::make_shared<PhyReader>();
    Engine engine(
        cfg,
        EngineSources{.links = [&] { return watcher->links(); },
                      .dcb = [](const std::string& n) { return query_dcb(n); },
                      .driver_stats = [driver_stats](const std::string& n) { return driver_stats->read(n); },
                      .phy = [phy](const std::string& n, const PhyLink* known) { return phy->read(n, known); },
                      .module = [](const std::string& n) { return query_module(n); },
                      .lldp = [](const std::string& path) { return read_lldp(path, kLldpTimeout); },
                      .netlink_events = [&] { return watcher->events(); },
                      .netlink_resyncs = [&] { return watcher->resyncs(); },
                      .link_events = [&] { return watcher->link_events(); },
                      .alertmanager = [&] { return notifier.stats(); },
                      .probe_budget =
                          [&] { return probing_on ? std::optional<ProbeBudgetStats>(budget.stats()) : std::nullopt; },
                      .ucx_version = ucx_version,
                      .probes = [&] { return probe_store.latest(); },
                      .cluster = [&] { return inventory->latest(); },
                      .wake = &wake},
        store, log);

    auto listen = parse_listen_address(cfg->daemon.listen);  // validated when loaded
    Probing probing = start_probing(*cfg, listen->host, log, &budget);
    probing_on = probing.token.has_value();
    probe_store.update([&](ProbeBook& b) {
        b.enabled = probing.token.has_value();
        b.disabled_reason = probing.why_off;
    });
    std::shared_ptr<const Config> probe_config = cfg;
    Probers probers({.config = [&] { return probe_config; },
                     .snapshot = [&] { return store.latest(); },
                     .token = probing.token.value_or(ProbeToken{}),
                     .ucx_session_exe = ucx_exe,
                     .budget = &budget});
    auto scheduler_deps = probers.scheduler_deps();
    scheduler_deps.rotating = [&](const Config& c, uint64_t round) {
        return inventory ? rotating_inventory_peers(*inventory->latest(), c, round) : std::vector<PeerConfig>{};
    };
    ProbeScheduler scheduler(cfg, std::move(scheduler_deps), probe_store, log);

    StoreSource source(store);
    auto api = api::ApiServer::create(
        {.host = listen->host.empty() ? "0.0.0.0" : listen->host,
         .port = listen->port,
         .threads = cfg->daemon.http_threads,
         .timeout = cfg->daemon.http_timeout,
         .web_config_file = cfg->daemon.web_config_file},
        source,
        [&] {
            auto s = store.latest();
            return config_to_json(s && s->config ? *s->config : *cfg);
        },
        log);
    if (probing.token) api->accept_peer_token(probers.token_hex());
    SessionHost sessions;
    api::add_peer_routes(*api, {.snapshots = source,
                                .config = cfg,
                                .token_hex = probing.token ? probers.token_hex() : "",
                                .no_probing = probing.why_off,
                                .data_port = probing.data_port ? probing.data_port->port() : uint16_t{0},
                                .scheduler = scheduler,
                                .sessions = sessions,
                                .session_kinds = probers.session_kinds(),
                                .log = log,
                                .budget = &budget,
                                .web_user = [&api](const std::string& h) { return api->web_user(h); }});

    // Serving first: /healthz answers and /readyz says 503 while a slow first collection runs.
    api->start();
    log->info("rocewatchd {} serving on {}:{} (sysfs {}, config {})", ROCEWATCH_VERSION, listen->host, api->port(),
              cfg->daemon.sysfs_root, cfg->source.empty() ? "built-in defaults" : cfg->source);
    // This node is found in the inventory by the addresses and name the snapshots show.
    inventory = std::make_unique<InventoryKeeper>(
        cfg->cluster.inventory, api->port(),
        [&] {
            LocalIdentity id;
            if (auto s = store.latest()) {
                id.hostname = s->host.hostname;
                for (const auto& l : s->links)
                    for (const auto& a : l.addresses) id.addresses.push_back(a.address);
            }
            return id;
        },
        log);
    inventory->start();
    watcher->start();
    store.on_publish([&api] {
        api->snapshot_published();
        give_back_free_heap_pages();  // what the collection left between the pages it still uses
    });
    std::thread engine_thread([&] {
        name_this_thread("engine");
        engine.run();
    });
    if (probing.data_port) probing.data_port->start();
    if (probing.token) scheduler.start();
    notifier.start();
    logging::notify("READY=1\nSTATUS=collecting");

    Running run{cfg, probe_config, engine, scheduler, notifier, *inventory, budget, probing.token.has_value()};
    serve(flags, sigs, run, store, *log);
    logging::notify("STOPPING=1");
    ShutdownSteps stop(*log);
    // The scheduler first: stopping it pulls the running probe's deadline in and answers every
    // queued on-demand caller with reason "stopped", so the HTTP workers waiting on them return
    // at once. Stopped after the HTTP server, it let those workers (joined by the server's
    // stop) wait out the probe, and the callers got no answer at all.
    stop.step("the probe scheduler (the running probe)", [&] { scheduler.stop(); });
    stop.step("the HTTP server", [&] { api->stop(); });
    stop.step("the Alertmanager notifier", [&] { notifier.stop(); });
    stop.step("the peer session host (a peer's running session)", [&] { sessions.stop(); });
    stop.step("the inventory watch", [&] { inventory->stop(); });
    if (probing.data_port) stop.step("the TCP data port", [&] { probing.data_port->stop(); });
    stop.step("the netlink watcher", [&] { watcher->stop(); });
    stop.step("the collection engine", [&] {
        engine.stop();
        engine_thread.join();
    });
    return 0;
}

// --check-config past the file itself: what the config names is read as the daemon would read
// it. 0 when all of it would load, 1 when something would not (each printed, file named; one
// failure does not hide the next).
int check_config(const Config& c, const std::optional<std::string>& config_path) {
    bool bad = false;
    // The web config as the server loads it: YAML, keys, certificate and key. What is wrong
    // there does not hide what is wrong below.
    if (!c.daemon.web_config_file.empty()) {
        try {
            const auto web = api::load_web_config(c.daemon.web_config_file);
            if (web.tls) (void)api::make_server_tls_context(*web.tls, c.daemon.web_config_file);
            // Basic auth loads libcrypt on the first password; without it every request with
            // credentials would be a 500.
            if (!web.users.empty())
                if (auto why = api::load_libcrypt()) {
                    std::cerr << c.daemon.web_config_file << ": basic_auth_users: " << *why << "\n";
                    bad = true;
                }
        } catch (const std::exception& e) {
            std::cerr << e.what() << "\n";
            bad = true;
        }
    }
    // The credential files: a token file the daemon cannot use turns peer probing off, an
    // Alertmanager secret it cannot read fails every POST; either is an error here, where at
    // start or at a send it is only a log line.
    if (!c.probes.token_file.empty())
        if (auto found = find_probe_token(c.probes.token_file, ""); !found.token) {
            std::cerr << "probes.token_file: " << found.why << "\n";
            bad = true;
        }
    for (const auto& [key, path] :
         {std::pair{"alertmanager.bearer_token_file", c.alertmanager.bearer_token_file},
          std::pair{"alertmanager.basic_auth_password_file", c.alertmanager.basic_auth_password_file}})
        if (!path.empty())
            if (auto f = read_small_file(path, 4096); !f.ok) {
                std::cerr << key << ": " << path << ": " << f.error << "\n";
                bad = true;
            }
    // The inventory as the keeper reads it. The daemon starts with a refused one (and keeps
    // watching for a fixed one); a check says it is wrong.
    std::optional<Inventory> inventory;
    if (!c.cluster.inventory.empty()) {
        auto inv = read_inventory(c.cluster.inventory);
        if (!inv.inventory) {
            std::cerr << inv.error << "\n";
            bad = true;
        } else {
            for (const auto& w : inv.inventory->warnings) std::cerr << c.cluster.inventory << ": " << w << "\n";
            inventory = std::move(inv.inventory);
        }
    }
    const auto listen = parse_listen_address(c.daemon.listen);
    if (listen)
        if (auto why = listen_host_error(listen->host)) {  // the daemon would not start
            std::cerr << "daemon.listen: " << *why << "\n";
            bad = true;
        }
    if (listen && (!c.peers.empty() || !c.cluster.inventory.empty()))
        if (auto why = data_port_reach_warning(c.probes, listen->host)) std::cerr << "warning: " << *why << "\n";
    if (bad) return 1;
    std::cout << (config_path ? *config_path : "built-in defaults") << ": ok\n";
    if (!c.daemon.web_config_file.empty()) std::cout << c.daemon.web_config_file << ": ok\n";
    if (inventory) std::cout << c.cluster.inventory << ": ok, " << inventory->entries.size() << " entries\n";
    return 0;
}

}  // namespace
}  // namespace rocewatch

int main(int argc, char** argv) {
    using namespace rocewatch;
    // glibc gives each thread that allocates its own arena (up to 8 per core), and the
    // collection, render and probe threads each keep their freed pages: two arenas and a low
    // trim threshold gave 4-5 MiB less RSS at 128 NICs (bench/memory_vs_node_exporter.py).
    // One arena, now that a DGX Spark daemon runs 6 threads, not 13: 0.1 MiB less PSS at 3
    // and 8 NICs in two runs of each, alternated; the threads allocate a few times per scrape
    // and per cycle, too seldom to wait on each other's lock. MALLOC_ARENA_MAX in the
    // environment still wins.
    if (std::getenv("MALLOC_ARENA_MAX") == nullptr) (void)mallopt(M_ARENA_MAX, 1);
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) (void)mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    auto flags = parse_flags(argc, argv);
    if (!flags || flags->help) {
        (flags ? std::cout : std::cerr) << kUsage;
        return flags ? 0 : 64;
    }
    if (flags->version) {
        std::cout << "rocewatchd " << ROCEWATCH_VERSION << "\n";
        return 0;
    }
    auto r = load_config(flags->config_path, flags->overrides);
    for (const auto& e : r.errors) std::cerr << e.to_string() << "\n";
    if (flags->check_config) return r.config ? check_config(*r.config, flags->config_path) : 1;
    if (!r.config) return 1;
    auto log = logging::make_logger("rocewatchd");
    log->set_level(spdlog::level::from_str(r.config->daemon.log_level));
    raise_open_file_limit(*log);
    try {
        auto cfg = std::make_shared<Config>(std::move(*r.config));
        return flags->once ? run_once(cfg, log, flags->text) : run_daemon(*flags, cfg, log);
    } catch (const std::exception& e) {
        log->critical("{}", e.what());
        // --once speaks the node-health-check convention: 3 is "could not judge".
        return flags->once ? 3 : 1;
    }
}
