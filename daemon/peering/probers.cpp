// Which function runs each probe kind as this daemon runs it: the one kind -> runner table.
#include "daemon/peering/probers.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <stdexcept>

#include "api/peer_client.hpp"
#include "daemon/cluster/rail_match.hpp"
#include "daemon/config/config_loader.hpp"
#include "daemon/peering/rdma_runner.hpp"
#include "daemon/peering/token.hpp"
#include "daemon/rules/rail_resolve.hpp"
#include "http/resolve.hpp"
#include "daemon/peering/ucx_session.hpp"
#include "probes/errors.hpp"
#include "probes/result.hpp"
#include "probes/tcp.hpp"

namespace rocewatch {
namespace {

ProbeResult failed(const ProbeJob& job, const std::string& reason, const std::string& detail) {
    ProbeResult r = failed_result(job.kind, reason, detail);
    r.peer = job.peer.name;
    r.rail = job.rail ? job.rail->name : "";
    return r;
}

using Prober = ProbeResult (*)(const ProberContext&, const std::string& token_hex, const ProbeJob&, const PeerHello&,
                               Deadline);

// TCP goes to the peer's data port: over the rail's addresses, or to the control host of
// a peer without rails, its name resolved within the probe's own deadline.
ProbeResult tcp_prober(const ProberContext& ctx, const std::string&, const ProbeJob& job, const PeerHello& hello,
                       Deadline d) {
    const auto cfg = ctx.config();
    TcpProbeTarget t;
    t.peer = job.peer.name;
    t.rail = job.rail ? job.rail->name : "";
    if (job.rail) {
        t.address = job.rail->remote_address;
        // The probe proves its rail's path, not whichever path the routing table picks: with
        // two rails in one subnet a source address alone leaves the kernel free to send over
        // the other rail's link. SO_BINDTODEVICE pins the netdev; since Linux 5.7 a socket
        // not yet bound to a device needs no CAP_NET_RAW for it (only re-binding does), so
        // the unit's capability set suffices.
        t.bind_interface = job.rail->local_interface;
        t.bind_address = job.rail->local_address;
    } else {
        auto where = parse_listen_address(job.peer.address);
        std::string why = "the peer's address " + job.peer.address + " is not host:port";
        auto numeric = where ? http::resolve_host(where->host, d.at, why) : std::nullopt;
        if (!numeric) return failed(job, d.expired() ? reason::timeout : reason::peer_unreachable, why);
        t.address = *numeric;
    }
    t.port = hello.data_port;
    t.token = ctx.token;
    if (job.kind == ProbeKind::tcp_bw) {
        TcpBwSettings bs;
        bs.streams = cfg->probes.tcp_bw.streams;
        bs.duration_seconds = std::chrono::duration<double>(cfg->probes.tcp_bw.duration).count();
        return tcp_bandwidth(t, bs, d);
    }
    TcpLatSettings ls;
    ls.message_size = cfg->probes.tcp_lat.size;
    ls.iterations = cfg->probes.tcp_lat.count;
    ls.max_duration_seconds = std::max(0.1, d.remaining_seconds() - 0.5);
    return tcp_latency(t, ls, d);
}

SessionExchange exchange_with(const Config& cfg, const ProbeJob& job, const std::string& token_hex, const char* path) {
    return [peer = job.peer, token_hex, path, tr = api::peer_transport(cfg.cluster)](const nlohmann::json& request,
                                                                                     Deadline d) {
        return api::post_session(peer, token_hex, path, request, d, tr);
    };
}

ProbeResult rdma_prober(const ProberContext& ctx, const std::string& token_hex, const ProbeJob& job, const PeerHello&,
                        Deadline d) {
    auto s = ctx.snapshot();
    const auto cfg = ctx.config();
    return run_rdma_job(*cfg, s.get(), job, exchange_with(*cfg, job, token_hex, "/api/v1/peer/rdma"), d);
}

[[maybe_unused]] ProbeResult ucx_prober(const ProberContext& ctx, const std::string& token_hex, const ProbeJob& job,
                                        const PeerHello&, Deadline d) {
    const auto cfg = ctx.config();
    auto s = ctx.snapshot();
    return run_ucx_job(*cfg, job, ctx.ucx_session_exe, exchange_with(*cfg, job, token_hex, "/api/v1/peer/ucx"), d,
                       s ? rail_tx_counters(*cfg, *s, job.peer) : std::vector<std::pair<std::string, RdmaTxCounter>>{});
}

struct Entry {
    ProbeKind kind;
    Prober run;
};

// Like blackbox_exporter's Probers map: adding a kind is one line here.
constexpr Entry kProbers[] = {
    {ProbeKind::tcp_lat, tcp_prober},
    {ProbeKind::tcp_bw, tcp_prober},
    {ProbeKind::rdma_write_lat, rdma_prober},
    {ProbeKind::rdma_write_bw, rdma_prober},
    {ProbeKind::rdma_multirail_bw, rdma_prober},
#ifdef ROCEWATCH_HAVE_UCX
    {ProbeKind::ucx_put_lat, ucx_prober},
    {ProbeKind::ucx_put_bw, ucx_prober},
#endif
};

const Entry* find_prober(ProbeKind k) {
    auto it = std::ranges::find(kProbers, k, &Entry::kind);
    return it == std::end(kProbers) ? nullptr : &*it;
}

}  // namespace

namespace {

std::string bind_host(const std::string& listen_host) {
    if (listen_host.empty() || listen_host == "0.0.0.0" || listen_host == "::") return "";
    std::string why;
    auto numeric = http::resolve_host(listen_host, std::chrono::steady_clock::now() + std::chrono::seconds(5), why);
    if (!numeric) throw std::runtime_error("listen host " + listen_host + ": " + why);
    return *numeric;
}

}  // namespace

std::string ucx_session_child_version(const std::string& exe) {
#ifdef ROCEWATCH_HAVE_UCX
    return ucx_session_version(exe, Deadline::after_seconds(5));
#else
    (void)exe;
    return "";
#endif
}

std::string data_listen_host(const ProbesConfig& p, const std::string& listen_host) {
    return p.data_listen.value_or(listen_host);
}

std::optional<std::string> data_port_reach_warning(const ProbesConfig& p, const std::string& listen_host) {
    if (p.data_listen || listen_host.empty() || listen_host == "0.0.0.0" || listen_host == "::") return std::nullopt;
    return "the probe data port (" + std::to_string(p.data_port) + ") listens on " + listen_host +
           " only, the host of listen: peers' TCP probes over the rails go to this node's rail addresses and "
           "will be refused there (connection_refused); set probes.data_listen = \"\" to serve them on every "
           "address (the HTTP API stays on listen), or listen on 0.0.0.0 or ::";
}

Probing start_probing(const Config& cfg, const std::string& listen_host, const std::shared_ptr<spdlog::logger>& log,
                      ProbeBudget* budget) {
    const char* creds = std::getenv("CREDENTIALS_DIRECTORY");
    TokenLookup found = find_probe_token(cfg.probes.token_file, creds ? creds : "");
    Probing p{found.token, found.why, nullptr};
    if (p.token) {
        TcpServerLimits limits;
        // A peer may ask for no longer than we would run: a sink for our bandwidth probe's
        // duration, an echo for our latency probe's whole deadline (an echo capped at the
        // bandwidth duration cut latency runs short, silently).
        limits.max_session_seconds = std::chrono::duration<double>(cfg.probes.tcp_bw.duration).count();
        limits.max_echo_seconds = std::chrono::duration<double>(cfg.probes.tcp_lat.timeout).count();
        limits.max_sessions = std::max<uint32_t>(limits.max_sessions, cfg.probes.tcp_bw.streams);
        limits.max_message_size = std::max<uint32_t>(cfg.probes.tcp_lat.size, 64);
        limits.budget = budget;
        try {
            const std::string host = data_listen_host(cfg.probes, listen_host);
            p.data_port = TcpProbeServer::create(bind_host(host), cfg.probes.data_port, *p.token, limits, log);
            log->info("peer probing on: token from {}, data port {} on {}", found.source, cfg.probes.data_port,
                      host.empty() ? "every address" : host);
            if (auto why = data_port_reach_warning(cfg.probes, listen_host)) log->warn("{}", *why);
        } catch (const std::exception& e) {
            p.why_off = std::string("probe data port: ") + e.what();
            p.token.reset();
        }
    }
    if (!p.token) log->warn("peer probing is off: {}", p.why_off);
    return p;
}

Probers::Probers(ProberContext ctx) : ctx_(std::move(ctx)), token_hex_(token_to_hex(ctx_.token)) {}

bool Probers::available(ProbeKind k) const { return find_prober(k) != nullptr; }

ProbeResult Probers::run(const ProbeJob& job, const PeerHello& hello, Deadline deadline) const {
    const Entry* e = find_prober(job.kind);
    if (!e) return failed(job, reason::protocol_error, std::string("no runner for ") + to_string(job.kind));
    try {
        return e->run(ctx_, token_hex_, job, hello, deadline);
    } catch (const std::exception& ex) {
        return failed(job, reason::protocol_error, ex.what());
    }
}

ProbeSchedulerDeps Probers::scheduler_deps() const {
    return ProbeSchedulerDeps{
        .run = [this](const ProbeJob& job, const PeerHello& hello, Deadline d) { return run(job, hello, d); },
        .hello =
            [this](const PeerConfig& peer, SteadyClock::time_point d) {
                return api::fetch_hello(peer, token_hex_, d, api::peer_transport(ctx_.config()->cluster));
            },
        .rail_utilisation =
            [this](const ProbeJob& job) {
                auto s = ctx_.snapshot();
                return s ? probe_utilisation(*s, job.peer, job.rail ? &*job.rail : nullptr) : std::nullopt;
            },
        .available = [this](ProbeKind k) { return available(k); },
        .match_rails =
            [this](const PeerConfig&, const PeerHello& hello) {
                std::vector<PeerRailConfig> rails;
                auto s = ctx_.snapshot();
                auto c = ctx_.config();
                if (!s || !c) return rails;
                for (const auto& m : match_rails(local_rails(*s, *c), hello, local_addresses(*s)).matched)
                    rails.push_back(rail_config(m));
                return rails;
            },
        .admit = [this] { return ctx_.budget ? ctx_.budget->admit(BudgetSide::own) : std::optional<std::string>{}; },
        .charge =
            [this](uint64_t bytes) {
                if (ctx_.budget) ctx_.budget->charge(BudgetSide::own, bytes);
            },
        .mark_bulk =
            [this] {
                return ctx_.budget
                           ? std::static_pointer_cast<void>(std::make_shared<ProbeBudget::Bulk>(ctx_.budget->bulk()))
                           : std::shared_ptr<void>();
            },
        .moving_bulk = [this] { return ctx_.budget && ctx_.budget->moving_bulk(); },
    };
}

std::vector<SessionKind> Probers::session_kinds() const {
    std::vector<SessionKind> kinds{
        {"/api/v1/peer/rdma", "RDMA",
         [](const Config& c, const Snapshot& s, const nlohmann::json& r, const std::atomic<bool>* x) {
             auto a = accept_rdma_session(c, s, r, x);
             return std::make_pair(std::move(a.reply), std::move(a.serve));
         }}};
    if (available(ProbeKind::ucx_put_lat))
        kinds.push_back({"/api/v1/peer/ucx", "UCX",
                         [exe = ctx_.ucx_session_exe](const Config& c, const Snapshot&, const nlohmann::json& r,
                                                      const std::atomic<bool>* x) {
                             auto a = accept_ucx_session(c, r, exe, x);
                             return std::make_pair(std::move(a.reply), std::move(a.serve));
                         }});
    return kinds;
}

}  // namespace rocewatch
