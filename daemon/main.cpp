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

#include <netdb.h>

#include <algorithm>
#include <cstdlib>

#include "api/json_view.hpp"
#include "api/metrics.hpp"
#include "api/peer_client.hpp"
#include "api/probe_view.hpp"
#include "api/server.hpp"
#include "config/config_loader.hpp"
#include "core/engine.hpp"
#include "core/probe_scheduler.hpp"
#include "core/probe_store.hpp"
#include "core/snapshot_store.hpp"
#include "netlink/watcher.hpp"
#include "peering/rdma_runner.hpp"
#include "peering/session_host.hpp"
#include "peering/token.hpp"
#include "rules/rail_resolve.hpp"
#include "rules/rules.hpp"
#include "peering/ucx_session.hpp"
#include "probes/errors.hpp"
#include "probes/session.hpp"
#include "probes/tcp.hpp"

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

#ifdef ROCEWATCH_HAVE_UCX
constexpr bool kHaveUcx = true;
#else
constexpr bool kHaveUcx = false;
#endif
// UCX session children are this binary again (peering/ucx_session.hpp).
const std::string kSelfExe = "/proc/self/exe";

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

// The numeric address of a peer without rails: its control host, resolved now.
std::string numeric_host(const std::string& host_port) {
    auto colon = host_port.rfind(':');
    std::string host = host_port.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') return host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return "";
    char buf[NI_MAXHOST];
    std::string out;
    if (getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) == 0) out = buf;
    freeaddrinfo(res);
    return out;
}

ProbeResult run_tcp_probe(const Config& cfg, const ProbeToken& token, const ProbeJob& job, const PeerHello& hello,
                          Deadline d) {
    TcpProbeTarget t;
    t.peer = job.peer.name;
    t.rail = job.rail ? job.rail->name : "";
    t.address = job.rail ? job.rail->remote_address : numeric_host(job.peer.address);
    t.port = hello.data_port;
    // The source address pins the rail; SO_BINDTODEVICE would need CAP_NET_RAW, which the
    // unit does not grant.
    if (job.rail) t.bind_address = job.rail->local_address;
    t.token = token;
    if (job.kind == ProbeKind::tcp_bw) {
        TcpBwSettings bs;
        bs.streams = cfg.probes.tcp_bw.streams;
        bs.duration_seconds = std::chrono::duration<double>(cfg.probes.tcp_bw.duration).count();
        return tcp_bandwidth(t, bs, d);
    }
    TcpLatSettings ls;
    ls.message_size = cfg.probes.tcp_lat.size;
    ls.iterations = cfg.probes.tcp_lat.count;
    ls.max_duration_seconds = std::max(0.1, d.remaining_seconds() - 0.5);
    return tcp_latency(t, ls, d);
}

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
    ProbeStore probe_store;
    src.probes = [&] { return probe_store.latest(); };
    Engine engine(cfg, std::move(src), store, log);
    engine_ptr = &engine;

    // Peer probing: on only with a readable token; the data port's limits are our own
    // config's budget, whatever a peer asks for.
    const char* creds = std::getenv("CREDENTIALS_DIRECTORY");
    TokenLookup found = find_probe_token(cfg->probes.token_file, creds ? creds : "");
    std::string no_probing = found.why;
    auto token = found.token;
    if (token) log->info("peer probing on: token from {}", found.source);
    std::unique_ptr<TcpProbeServer> data_port;
    if (token) {
        TcpServerLimits limits;
        limits.max_session_seconds = std::chrono::duration<double>(cfg->probes.tcp_bw.duration).count();
        limits.max_sessions = std::max<uint32_t>(limits.max_sessions, cfg->probes.tcp_bw.streams);
        limits.max_message_size = std::max<uint32_t>(cfg->probes.tcp_lat.size, 64);
        try {
            data_port = TcpProbeServer::create("", cfg->probes.data_port, *token, limits, log);
        } catch (const std::exception& e) {
            no_probing = std::string("probe data port: ") + e.what();
            token.reset();
        }
    }
    const std::string token_hex = token ? token_to_hex(*token) : "";
    probe_store.update([&](ProbeBook& b) {
        b.enabled = token.has_value();
        b.disabled_reason = no_probing;
    });
    if (!token) log->warn("peer probing is off: {}", no_probing);
    probe_store.set_on_change([&] { engine.wake(); });

    std::shared_ptr<const Config> sched_cfg = cfg;
    ProbeSchedulerDeps deps{
        .run = [&](const ProbeJob& job, const PeerHello& hello, Deadline deadline) {
            if (is_rdma_kind(job.kind) || is_ucx_kind(job.kind)) {
                const char* path = is_rdma_kind(job.kind) ? "/api/v1/peer/rdma" : "/api/v1/peer/ucx";
                auto exchange = [&](const nlohmann::json& request, Deadline d) {
                    return api::post_session(job.peer, token_hex, path, request, d);
                };
                auto s = store.latest();
                if (is_ucx_kind(job.kind))
                    return run_ucx_job(*sched_cfg, job, kSelfExe, exchange, deadline,
                                       s ? rail_tx_counters(*sched_cfg, *s, job.peer)
                                         : std::vector<std::pair<std::string, RdmaTxCounter>>{});
                return run_rdma_job(*sched_cfg, s.get(), job, exchange, deadline);
            }
            return run_tcp_probe(*sched_cfg, *token, job, hello, deadline);
        },
        .hello = [&](const PeerConfig& peer, ProbeClock::time_point deadline) {
            return api::fetch_hello(peer, token_hex, deadline);
        },
        .rail_utilisation = [&](const ProbeJob& job) {
            auto s = store.latest();
            return s ? probe_utilisation(*s, job.peer, job.rail ? &*job.rail : nullptr) : std::nullopt;
        },
        .available = [](ProbeKind k) { return is_tcp_kind(k) || is_rdma_kind(k) || (kHaveUcx && is_ucx_kind(k)); },
    };
    ProbeScheduler scheduler(cfg, std::move(deps), probe_store, log);

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

    const uint16_t data_port_number = data_port ? data_port->port() : 0;
    auto unauthorized = [](httplib::Response& res) {
        res.set_header("WWW-Authenticate", "Bearer");
        res.status = 401;
        res.set_content(api::dump_json(api::error_json(401, "missing or wrong bearer token")), "application/json");
    };
    auto send = [](httplib::Response& res, int status, const nlohmann::json& j) {
        res.status = status;
        res.set_content(api::dump_json(j), "application/json");
    };
    api->add_get("/api/v1/peer/hello", [&](const httplib::Request& req, httplib::Response& res) {
        if (!api::bearer_matches(req.get_header_value("Authorization"), token_hex)) return unauthorized(res);
        auto s = store.latest();
        if (!s) return send(res, 503, api::error_json(503, "no snapshot yet"));
        send(res, 200, api::hello_json(*s, data_port_number));
    });
    // The passive side of a peer's RDMA or UCX probe: endpoints opened (RDMA: at RTR) before
    // we answer, the serve step on the session host's thread. Our own [probes.*] budget caps it.
    // The answer names the session; {"end_session": id} from a peer whose side failed ends it.
    SessionHost sessions;
    using Accept = std::function<std::pair<nlohmann::json, std::function<ProbeResult()>>(
        const Config&, const Snapshot&, const nlohmann::json&, const std::atomic<bool>*)>;
    auto peer_session = [&](const std::string& path, const std::string& what, Accept accept) {
        api->add_post(path, [&, what, accept](const httplib::Request& req, httplib::Response& res) {
            if (!token) return send(res, 503, api::error_json(503, "peer probing is off: " + no_probing));
            if (!api::bearer_matches(req.get_header_value("Authorization"), token_hex)) return unauthorized(res);
            auto s = store.latest();
            if (!s) return send(res, 503, api::error_json(503, "no snapshot yet"));
            auto request = nlohmann::json::parse(req.body, nullptr, false);
            if (request.is_discarded())
                return send(res, 422, {{"reason", reason::protocol_error}, {"detail", "the body is not JSON"}});
            if (auto id = end_session_request(request); !id.empty()) {
                const bool ended = sessions.cancel(id);
                log->info("{} session {} {} by {}", what, id, ended ? "ended early" : "(not running) asked to end",
                          req.remote_addr);
                return send(res, 200, {{"session", id}, {"ended", ended}});
            }
            if (!sessions.try_claim()) {
                res.set_header("Retry-After", "5");
                return send(res, 503, {{"reason", reason::peer_busy}, {"detail", "another probe session is running"}});
            }
            auto [reply, serve] = accept(s->config ? *s->config : *cfg, *s, request, sessions.cancel_flag());
            if (!serve) {
                sessions.release();
                log->info("{} session from {} refused: {} ({})", what, req.remote_addr, reply.value("reason", ""),
                          reply.value("detail", ""));
                return send(res, 422, reply);
            }
            reply["session"] = sessions.id();
            sessions.run([serve = std::move(serve), from = req.remote_addr, what, log] {
                auto r = serve();
                log->debug("{} session ({}) from {}: {} {}", what, to_string(r.kind), from, r.success ? "ok" : r.reason,
                           r.detail);
            });
            send(res, 200, reply);
        });
    };
    peer_session("/api/v1/peer/rdma", "RDMA", [](const Config& c, const Snapshot& s, const nlohmann::json& r,
                                                 const std::atomic<bool>* cancel) {
        auto a = accept_rdma_session(c, s, r, cancel);
        return std::make_pair(std::move(a.reply), std::move(a.serve));
    });
    if (kHaveUcx)
        peer_session("/api/v1/peer/ucx", "UCX", [](const Config& c, const Snapshot&, const nlohmann::json& r,
                                                   const std::atomic<bool>* cancel) {
            auto a = accept_ucx_session(c, r, kSelfExe, cancel);
            return std::make_pair(std::move(a.reply), std::move(a.serve));
        });
    api->add_get("/api/v1/probes", [&](const httplib::Request&, httplib::Response& res) {
        auto s = store.latest();
        if (!s) return send(res, 503, api::error_json(503, "no snapshot yet"));
        send(res, 200, api::probes_json(*s));
    });
    // On-demand probes run on the scheduler's thread; the HTTP worker only waits, bounded.
    auto wait_for = [](const std::shared_future<ProbeResult>& f, std::chrono::milliseconds bound) {
        return f.wait_for(bound) == std::future_status::ready;
    };
    // At most one POST and one /probe wait at a time, so on-demand probes can tie up two HTTP
    // workers at most and /metrics keeps the rest.
    std::atomic<bool> run_busy{false};
    api->add_post("/api/v1/probes/run", [&](const httplib::Request& req, httplib::Response& res) {
        if (!api::bearer_matches(req.get_header_value("Authorization"), token_hex)) return unauthorized(res);
        bool idle = false;
        if (!run_busy.compare_exchange_strong(idle, true)) {
            res.set_header("Retry-After", "1");
            return send(res, 429, api::error_json(429, "a probe run is already in progress"));
        }
        struct Release {
            std::atomic<bool>& flag;
            ~Release() { flag = false; }
        } release{run_busy};
        nlohmann::json body;
        try {
            body = nlohmann::json::parse(req.body);
        } catch (const std::exception&) {
            return send(res, 400, api::error_json(400, "body must be JSON: {\"peer\": ..., \"rail\": ..., \"kind\": ...}"));
        }
        std::string peer = body.value("peer", ""), rail = body.value("rail", ""), kind_name = body.value("kind", "tcp_lat");
        auto kind = probe_kind_from_string(kind_name);
        if (!kind || !scheduler.runnable(*kind))
            return send(res, 400, api::error_json(400, "kind " + kind_name + " is not a probe this daemon runs"));
        auto job = scheduler.find_job(peer, rail, *kind);
        if (!job) return send(res, 404, api::error_json(404, "no configured peer/rail " + peer + "/" + rail));
        auto f = scheduler.submit(*job);
        if (!f) {
            res.set_header("Retry-After", "5");
            return send(res, 503, api::error_json(503, "probe queue full; try again"));
        }
        if (!wait_for(*f, std::chrono::seconds(30)))
            return send(res, 504, api::error_json(504, "probe still queued or running; see /api/v1/probes"));
        send(res, 200, api::probe_result_json(f->get()));
    });
    std::atomic<bool> blackbox_busy{false};
    api->add_get("/probe", [&](const httplib::Request& req, httplib::Response& res) {
        if (!token) return send(res, 503, api::error_json(503, "peer probing is off: " + no_probing));
        auto kind = probe_kind_from_string(req.get_param_value("module"));
        if (!kind || !scheduler.runnable(*kind))
            return send(res, 400, api::error_json(400, "module must be a probe kind this daemon runs (tcp_lat, tcp_bw, rdma_write_lat, rdma_write_bw, rdma_multirail_bw, ucx_put_lat, ucx_put_bw)"));
        auto job = scheduler.find_job(req.get_param_value("target"), req.get_param_value("rail"), *kind);
        if (!job) return send(res, 404, api::error_json(404, "target must be a configured peer"));
        double scrape_timeout = 10;
        try {
            if (req.has_header("X-Prometheus-Scrape-Timeout-Seconds"))
                scrape_timeout = std::stod(req.get_header_value("X-Prometheus-Scrape-Timeout-Seconds"));
        } catch (const std::exception&) {
        }
        // Leave room for the answer to travel; never beyond a minute.
        scrape_timeout = std::clamp(scrape_timeout - 0.5, 0.1, 60.0);
        bool expected = false;
        if (!blackbox_busy.compare_exchange_strong(expected, true)) {
            res.set_header("Retry-After", "1");
            return send(res, 429, api::error_json(429, "a /probe is already running"));
        }
        auto bound = std::chrono::milliseconds(static_cast<int64_t>(scrape_timeout * 1000));
        const auto asked = ProbeClock::now();
        job->deadline = asked + bound;
        auto f = scheduler.submit(*job);
        ProbeResult r;
        if (f && wait_for(*f, bound + std::chrono::milliseconds(200))) {
            r = f->get();
        } else {
            r.kind = *kind;
            r.peer = job->peer.name;
            r.rail = job->rail ? job->rail->name : "";
            r.success = false;
            r.reason = f ? reason::timeout : reason::peer_busy;
            r.detail = f ? "still queued or running at the scrape timeout" : "probe queue full";
            r.duration_seconds = std::chrono::duration<double>(ProbeClock::now() - asked).count();
        }
        blackbox_busy = false;
        res.status = 200;
        res.set_content(api::render_probe_result(r), api::kMetricsContentType);
    });

    engine.collect_once();
    std::thread engine_thread([&] { engine.run(); });
    watcher->start();
    if (data_port) data_port->start();
    if (token) scheduler.start();
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
                // Probe settings and peers follow the reload; the token and data port are
                // read at start only.
                scheduler.stop();
                sched_cfg = current;
                scheduler.apply_config(current);
                if (token) scheduler.start();
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
    scheduler.stop();
    sessions.stop();
    if (data_port) data_port->stop();
    watcher->stop();
    engine.stop();
    engine_thread.join();
    return 0;
}

}  // namespace
}  // namespace rocewatch

int main(int argc, char** argv) {
    using namespace rocewatch;
    if (argc == 2 && std::string(argv[1]) == kUcxSessionFlag) {
#ifdef ROCEWATCH_HAVE_UCX
        return run_ucx_session_child();
#else
        return 1;
#endif
    }
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
