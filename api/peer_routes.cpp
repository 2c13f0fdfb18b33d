// The routes peers and probe users call: hello, the passive session sides, the probe book,
// on-demand runs (POST /api/v1/probes/run) and the blackbox-style GET /probe.
#include "api/peer_routes.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <future>

#include "api/metrics.hpp"
#include "api/probe_view.hpp"
#include "api/replies.hpp"
#include "daemon/model/probe.hpp"
#include "probes/budget.hpp"
#include "probes/errors.hpp"
#include "probes/session.hpp"
#include "util/log_safe.hpp"

namespace rocewatch::api {
namespace {

using Req = Request;
using Res = Response;

// On-demand probe requests (GET /probe and POST /api/v1/probes/run together) waiting at once,
// at most: the scheduler runs their probes one after the other, so a multi-target Prometheus
// job's concurrent scrapes queue instead of failing. Beyond this many, 429. Each waits on an
// HTTP worker; /metrics and /healthz keep their reserved workers whatever waits
// (worker_pool.hpp), and 3 leaves the default pool of 4 one general worker for the REST
// routes (a POST run used to count apart, and with three scrapes took that one too).
constexpr int kMaxProbeWaiting = 3;

// The handlers' shared state; at most one POST run, and kMaxProbeWaiting on-demand waits
// (the POST run among them) at a time.
struct State {
    explicit State(PeerRoutes routes) : r(std::move(routes)) {}
    PeerRoutes r;
    std::atomic<bool> run_busy{false};
    std::atomic<int> probes_waiting{0};

    // The peer token as a Bearer token, or as the password of basic auth (any user name):
    // what Prometheus' `authorization` and `basic_auth` scrape settings send. A user of the
    // web config's basic_auth_users may ask for probes (`/probe`, `POST /api/v1/probes/run`)
    // with the credential it scrapes with, but is no peer daemon: the peer routes (hello,
    // sessions) take the token only.
    bool authorized(const Req& req) const {
        const std::string& h = req.get_header_value("Authorization");
        return credentials_match(h, r.token_hex) || (r.web_user && r.web_user(h));
    }
    bool peer_authorized(const Req& req) const {
        return credentials_match(req.get_header_value("Authorization"), r.token_hex);
    }
    // Before the token is checked: with no token of its own, no token is right, and a peer told
    // 401 would look for a token mismatch. `reason` tells a prober it is not busy.
    bool probing_off(Res& res) const {
        if (!r.token_hex.empty()) return false;
        auto body = error_json(503, "peer probing is off: " + r.no_probing);
        body["reason"] = kReasonPeerProbingOff;
        send_json(res, 503, body);
        return true;
    }
};

// Clears a busy flag when the handler returns, however it returns.
struct Release {
    std::atomic<bool>& flag;
    ~Release() { flag = false; }
};

// One place of a counted bound, given back when the handler returns.
struct Slot {
    std::atomic<int>& n;
    bool held;
    Slot(std::atomic<int>& count, int bound) : n(count), held(++count <= bound) {}
    ~Slot() { --n; }
};

bool wait_for(const std::shared_future<ProbeResult>& f, std::chrono::milliseconds bound) {
    return f.wait_for(bound) == std::future_status::ready;
}

// The session asks for a bandwidth kind (the request was accepted, so it is an object).
bool moves_bulk(const nlohmann::json& request) {
    const auto kind = probe_kind_from_string(request.value("kind", std::string()));
    return kind && is_bandwidth_kind(*kind);
}

void session(State& st, const std::string& what, const SessionAccept& accept, const Req& req, Res& res) {
    if (st.probing_off(res)) return;
    if (!st.peer_authorized(req)) return send_unauthorized(res);
    auto s = snapshot_or_503(st.r.snapshots, res);
    if (!s) return;
    auto request = nlohmann::json::parse(req.body, nullptr, false);
    if (request.is_discarded())
        return send_json(res, 422, {{"reason", reason::protocol_error}, {"detail", "the body is not JSON"}});
    if (auto id = end_session_request(request); !id.empty()) {
        const bool ended = st.r.sessions.cancel(id);
        st.r.log->info("{} session {} {} by {}", what, log_safe(id),
                       ended ? "ended early" : "(not running) asked to end", req.remote_addr);
        return send_json(res, 200, {{"session", id}, {"ended", ended}});
    }
    if (!st.r.sessions.try_claim()) {
        res.set_header("Retry-After", "5");
        return send_json(res, 503, {{"reason", reason::peer_busy}, {"detail", "another probe session is running"}});
    }
    if (st.r.budget)
        if (auto why = st.r.budget->admit(BudgetSide::peer)) {
            st.r.sessions.release();
            res.set_header("Retry-After", "30");
            return send_json(res, 503, {{"reason", reason::peer_busy}, {"detail", *why}});
        }
    auto [reply, serve] = accept(s->config ? *s->config : *st.r.config, *s, request, st.r.sessions.cancel_flag());
    if (!serve) {
        st.r.sessions.release();
        st.r.log->info("{} session from {} refused: {} ({})", what, req.remote_addr,
                       log_safe(reply.value("reason", "")), log_safe(reply.value("detail", ""), 512));
        return send_json(res, 422, reply);
    }
    reply["session"] = st.r.sessions.id();
    // A peer's bandwidth session moves bulk through this node as a sink session on the TCP
    // data port does: while it runs, our own latency probes and the data port's echo wait.
    auto bulk = std::make_shared<ProbeBudget::Bulk>();
    if (st.r.budget && moves_bulk(request)) *bulk = st.r.budget->bulk();
    st.r.sessions.run(
        [serve = std::move(serve), bulk, from = req.remote_addr, what, log = st.r.log, budget = st.r.budget] {
            auto r = serve();
            bulk->reset();
            if (budget) budget->charge(BudgetSide::peer, r.bytes);
            log->debug("{} session ({}) from {}: {} {}", what, to_string(r.kind), from, r.success ? "ok" : r.reason,
                       log_safe(r.detail, 512));
        });
    send_json(res, 200, reply);
}

// Answers 429 when `slot` is not held (kMaxProbeWaiting on-demand probes wait already).
bool full(const Slot& slot, Res& res) {
    if (slot.held) return false;
    res.set_header("Retry-After", "1");
    send_json(res, 429, error_json(429, std::to_string(kMaxProbeWaiting) + " probe requests are waiting already"));
    return true;
}

// POST /api/v1/probes/run {"peer", "rail", "kind"}: runs on the scheduler's thread; the
// HTTP worker only waits, bounded.
void run_now(State& st, const Req& req, Res& res) {
    if (st.probing_off(res)) return;
    if (!st.authorized(req)) return send_unauthorized(res);
    bool idle = false;
    if (!st.run_busy.compare_exchange_strong(idle, true)) {
        res.set_header("Retry-After", "1");
        return send_json(res, 429, error_json(429, "a probe run is already in progress"));
    }
    Release release{st.run_busy};
    Slot slot(st.probes_waiting, kMaxProbeWaiting);
    if (full(slot, res)) return;
    // Parameters come from the query only: clients (curl -d, Python's urllib) label a JSON body
    // as a form, and a body is never read as parameters.
    if (!req.params.empty())
        return send_json(res, 400,
                         error_json(400, "unknown query parameter \"" + req.params.front().first +
                                             "\" (this endpoint takes none)"));
    const char* kShape =
        "body must be a JSON object: {\"peer\": \"<name>\", \"rail\": \"<name>\", \"kind\": \"<kind>\"}";
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return send_json(res, 400, error_json(400, kShape));
    for (const char* key : {"peer", "rail", "kind"})
        if (body.contains(key) && !body[key].is_string())
            return send_json(res, 400, error_json(400, std::string(key) + " must be a string; " + kShape));
    for (const char* key : {"peer", "kind"})
        if (!body.contains(key))
            return send_json(res, 400, error_json(400, std::string(key) + " is missing; " + kShape));
    std::string peer = body.value("peer", ""), rail = body.value("rail", ""), kind_name = body.value("kind", "");
    auto kind = probe_kind_from_string(kind_name);
    if (kind && !rail.empty() && is_peer_level_kind(*kind))  // a 404 "no peer/rail" misled
        return send_json(res, 400,
                         error_json(400, kind_name + " runs per peer, over all its rails: leave out \"rail\""));
    if (!kind || !st.r.scheduler.runnable(*kind))
        return send_json(res, 400, error_json(400, "kind " + kind_name + " is not a probe this daemon runs"));
    auto job = st.r.scheduler.find_job(peer, rail, *kind);
    if (!job)
        return send_json(res, 404,
                         error_json(404, rail.empty() ? "no configured peer " + peer
                                                      : "no configured peer/rail " + peer + "/" + rail));
    // A per-rail kind says which rail: the first is not picked for the caller.
    if (job->rail && rail.empty())
        return send_json(res, 400, error_json(400, "rail is missing: " + kind_name + " runs over one rail of " + peer));
    auto f = st.r.scheduler.submit(*job);
    if (!f) {
        res.set_header("Retry-After", "5");
        return send_json(res, 503, error_json(503, "probe queue full; try again"));
    }
    if (!wait_for(*f, std::chrono::seconds(30)))
        return send_json(res, 504, error_json(504, "probe still queued or running; see /api/v1/probes"));
    send_json(res, 200, versioned(probe_result_json(f->get())));
}

ProbeResult not_run(const ProbeJob& job, bool queued, std::chrono::steady_clock::time_point asked) {
    ProbeResult r;
    r.kind = job.kind;
    r.peer = job.peer.name;
    r.rail = job.rail ? job.rail->name : "";
    r.success = false;
    r.reason = queued ? reason::timeout : reason::peer_busy;
    r.detail = queued ? "still queued or running at the scrape timeout" : "probe queue full";
    r.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    return r;
}

// GET /probe?target=&module=&rail=: Prometheus's multi-target pattern, as blackbox_exporter
// answers it: a module (probe kind) that is not enabled here is 400 (a job misconfigured);
// a target that is not a configured peer/rail is 200 with probe_success 0 and the reason,
// the probe's own failure. Bounded by the scrape timeout; concurrent scrapes queue.
void blackbox(State& st, const Req& req, Res& res) {
    if (st.probing_off(res)) return;
    if (!st.authorized(req)) return send_unauthorized(res);
    // Other parameters are let through, as blackbox_exporter does (a scrape config's `params`);
    // one of ours given twice is a job misconfigured, not a choice for us to make.
    if (const auto twice = repeated_param(req, {"target", "module", "rail"}); !twice.empty())
        return send_json(res, 400, error_json(400, twice + " given more than once"));
    const std::string module = req.get_param_value("module");
    const auto snap = st.r.snapshots.latest();
    const Config& cfg = snap && snap->config ? *snap->config : *st.r.config;
    auto kind = probe_kind_from_string(module);
    if (!kind || !st.r.scheduler.runnable(*kind)) {
        // The kinds a scrape may ask for here: enabled and runnable in this build.
        std::string runs;
        for (const auto& name : cfg.probes.enabled)
            if (auto k = probe_kind_from_string(name); k && st.r.scheduler.runnable(*k))
                runs += (runs.empty() ? "" : ", ") + name;
        return send_json(res, 400,
                         error_json(400,
                                    (module.empty() ? std::string("module is missing")
                                                    : "module " + module + " is not a probe kind this daemon runs") +
                                        ": /probe?target=PEER&module=KIND, KIND one of probes.enabled (" +
                                        (runs.empty() ? std::string("none") : runs) + ")"));
    }
    if (std::find(cfg.probes.enabled.begin(), cfg.probes.enabled.end(), module) == cfg.probes.enabled.end())
        return send_json(res, 400, error_json(400, "module " + module + " is not among this daemon's probes.enabled"));
    // No target is a job misconfigured (blackbox_exporter: 400 "Target parameter is missing"),
    // as is a per-rail kind without its rail to a peer of several rails: which one is not
    // picked for the scrape. A peer's only rail needs no naming.
    const std::string target = req.get_param_value("target");
    if (target.empty())
        return send_json(res, 400, error_json(400, "target is missing: /probe?target=PEER&module=KIND"));
    const std::string rail = req.get_param_value("rail");
    const auto asked = std::chrono::steady_clock::now();
    auto job = st.r.scheduler.find_job(target, rail, *kind);
    if (job && job->rail && rail.empty() && job->peer.rails.size() > 1)
        return send_json(res, 400,
                         error_json(400, "rail is missing: " + module + " runs over one rail of " + target +
                                             ", which has " + std::to_string(job->peer.rails.size())));
    if (!job) {
        ProbeResult r;
        r.kind = *kind;
        r.peer = target;
        r.success = false;
        r.reason = reason::unknown_target;
        r.detail = "target (and rail) must name a configured peer (and its rail)";
        res.status = 200;
        return res.set_content(render_probe_result(r), kMetricsContentType);
    }
    Slot slot(st.probes_waiting, kMaxProbeWaiting);
    if (full(slot, res)) return;
    const double seconds = probe_timeout_seconds(req.get_header_value("X-Prometheus-Scrape-Timeout-Seconds"));
    const auto bound = std::chrono::milliseconds(std::llround(seconds * 1000));
    job->deadline = asked + bound;
    auto f = st.r.scheduler.submit(*job);
    const ProbeResult r = f && wait_for(*f, bound + std::chrono::milliseconds(200))
                              ? f->get()
                              : not_run(*job, f.has_value(), asked);
    res.status = 200;
    res.set_content(render_probe_result(r), kMetricsContentType);
}

}  // namespace

double probe_timeout_seconds(const std::string& header) {
    constexpr double kDefault = 10;
    double asked = kDefault;
    if (!header.empty()) {
        char* end = nullptr;
        asked = std::strtod(header.c_str(), &end);
        if (end == header.c_str() || *end != '\0' || !std::isfinite(asked)) asked = kDefault;
    }
    return std::clamp(asked - 0.5, 0.1, 60.0);
}

void add_peer_routes(ApiServer& api, PeerRoutes routes) {
    auto st = std::make_shared<State>(std::move(routes));
    api.add_get("/api/v1/peer/hello",
                "for peer daemons (peer token): this node's version, data port, interfaces and rails",
                [st](const Req& req, Res& res) {
                    if (st->probing_off(res)) return;
                    if (!st->peer_authorized(req)) return send_unauthorized(res);
                    if (!only_params(req, res, {})) return;
                    if (auto s = snapshot_or_503(st->r.snapshots, res))
                        send_json(res, 200, versioned(hello_json(*s, st->r.data_port)));
                });
    // The passive side of a peer's RDMA or UCX probe: endpoints opened (RDMA: at RTR) before
    // we answer, the serve step on the session host's thread. Our own [probes.*] budget caps
    // it. {"end_session": id} from a peer whose side failed ends it.
    for (const auto& k : st->r.session_kinds)
        api.add_post(k.path, "for peer daemons (peer token): the passive side of a " + k.what + " probe session",
                     [st, k](const Req& req, Res& res) { session(*st, k.what, k.accept, req, res); });
    api.add_get("/api/v1/probes", "peers, their hellos, latest probe results, the probe budget",
                [st](const Req& req, Res& res) {
                    if (!only_params(req, res, {})) return;
                    if (auto s = snapshot_or_503(st->r.snapshots, res)) send_json(res, 200, probes_json(*s));
                });
    api.add_post("/api/v1/probes/run", "run one probe now (peer token): {\"peer\", \"rail\", \"kind\"}",
                 [st](const Req& req, Res& res) { run_now(*st, req, res); });
    api.add_get("/probe", "one probe, blackbox_exporter style: ?target=PEER&module=KIND[&rail=R]",
                [st](const Req& req, Res& res) { blackbox(*st, req, res); });
}

}  // namespace rocewatch::api
