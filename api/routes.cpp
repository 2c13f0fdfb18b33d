// The API's routes: built-in endpoints, /metrics with gzip once, errors as JSON, and how a
// request is answered (basic auth, routing, error answers, the headers every answer carries).
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "api/cluster_view.hpp"
#include "api/http_wire.hpp"
#include "api/replies.hpp"
#include "api/json_view.hpp"
#include "api/metrics.hpp"
#include "api/probe_view.hpp"
#include "api/request_gate.hpp"
#include "api/server_impl.hpp"
#include "daemon/rules/rules.hpp"
#include "util/log_safe.hpp"

namespace rocewatch::api {

void ApiServer::Impl::add_route(std::string pattern, std::string label, std::string method, std::string description,
                                Handler h) {
    if (stats) throw std::logic_error("api: routes must be added before start()");
    routes.push_back(
        {std::move(label), std::regex(pattern), std::move(method), std::move(description), std::move(h), 0});
}

void ApiServer::Impl::register_builtin_routes() {
    add_route("/", "/", "GET", "this list", [this](const Request&, Response& res) {
        nlohmann::json eps = nlohmann::json::array();
        for (const auto& r : routes)
            eps.push_back(
                {{"path", r.label},
                 {"methods", r.method == "GET" ? nlohmann::json{"GET", "HEAD"} : nlohmann::json{r.method}},
                 {"description", r.description.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.description)}});
#ifdef ROCEWATCH_VERSION
        const char* version = ROCEWATCH_VERSION;
#else
        const char* version = "unknown";
#endif
        send_json(res, 200, {{"service", "rocewatch"}, {"version", version}, {"endpoints", std::move(eps)}});
    });
    add_route("/healthz", "/healthz", "GET", "liveness: 200 while the process serves",
              [](const Request&, Response& res) { res.set_content("ok\n", "text/plain"); });
    add_route("/readyz", "/readyz", "GET", "readiness: 200 once the first full collection is done, else 503",
              [this](const Request&, Response& res) {
                  auto s = src.latest();
                  if (s && s->daemon.ready) {
                      res.set_content("ready\n", "text/plain");
                      return;
                  }
                  send_json(res, 503, error_json(503, "not ready: the first full collection has not finished"));
              });
    add_route("/metrics", "/metrics", "GET", "Prometheus metrics",
              [this](const Request& req, Response& res) { serve_metrics(req, res); });
    register_rest_routes();
}

void ApiServer::Impl::register_rest_routes() {
    add_route("/api/v1/status", "/api/v1/status", "GET", "overall health, counts, collection and daemon status",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {})) return;
                  if (auto s = snapshot_or_503(src, res)) send_json(res, 200, status_json(*s, Clock::now()));
              });
    add_route("/api/v1/devices", "/api/v1/devices", "GET", "RDMA devices with ports, GIDs and counters",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {})) return;
                  if (auto s = snapshot_or_503(src, res)) send_json(res, 200, devices_json(*s));
              });
    add_route(R"(/api/v1/devices/([^/]+))", "/api/v1/devices/{name}", "GET", "one RDMA device",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {})) return;
                  auto s = snapshot_or_503(src, res);
                  if (!s) return;
                  const std::string name = req.matches[1];
                  if (auto j = device_json(*s, name))
                      send_json(res, 200, *j);
                  else
                      send_json(res, 404, error_json(404, "no RDMA device named " + name));
              });
    add_route("/api/v1/interfaces", "/api/v1/interfaces", "GET", "network interfaces, addresses and their RDMA ports",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {})) return;
                  if (auto s = snapshot_or_503(src, res)) send_json(res, 200, interfaces_json(*s));
              });
    add_route("/api/v1/bonds", "/api/v1/bonds", "GET", "bonds and their slaves",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {})) return;
                  if (auto s = snapshot_or_503(src, res)) send_json(res, 200, bonds_json(*s));
              });
    add_route("/api/v1/peers", "/api/v1/peers", "GET",
              "peers this node probes (configured and from the inventory), their hellos and matched rails",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {})) return;
                  if (auto s = snapshot_or_503(src, res)) send_json(res, 200, peers_json(*s));
              });
    add_route("/api/v1/alerts", "/api/v1/alerts", "GET",
              "active (pending and firing) alerts; ?severity=, ?state=, ?scope=, ?rule=, ?object= filter them",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {"severity", "state", "scope", "rule", "object"})) return;
                  AlertFilter f;
                  if (req.has_param("severity")) {
                      const auto v = req.get_param_value("severity");
                      f.severity = severity_from_string(v);
                      if (!f.severity) {
                          send_json(res, 400, error_json(400, "severity must be info, warning or critical"));
                          return;
                      }
                  }
                  if (req.has_param("state")) {
                      const auto v = req.get_param_value("state");
                      if (v == "pending")
                          f.state = AlertState::pending;
                      else if (v == "firing")
                          f.state = AlertState::firing;
                      else {
                          send_json(res, 400, error_json(400, "state must be pending or firing"));
                          return;
                      }
                  }
                  if (req.has_param("scope")) {
                      f.scope = scope_from_string(req.get_param_value("scope"));
                      if (!f.scope) {
                          send_json(res, 400, error_json(400, "scope must be node, peer or path"));
                          return;
                      }
                  }
                  if (req.has_param("rule")) {
                      f.rule = req.get_param_value("rule");
                      // A rule id is one of a known set: a misspelt one would filter everything out.
                      if (std::ranges::find(all_rule_ids(), *f.rule) == all_rule_ids().end()) {
                          send_json(res, 400,
                                    error_json(400, "rule \"" + log_safe(*f.rule, 64) +
                                                        "\" is not a rule id (docs/alerts.md lists them)"));
                          return;
                      }
                  }
                  if (req.has_param("object")) f.object = req.get_param_value("object");
                  if (auto s = snapshot_or_503(src, res)) send_json(res, 200, alerts_json(*s, f));
              });
    add_route("/api/v1/alerts/history", "/api/v1/alerts/history", "GET", "alert transitions, oldest first; ?limit=N",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {"limit"})) return;
                  std::optional<size_t> limit;
                  if (req.has_param("limit")) {
                      const std::string v = req.get_param_value("limit");
                      if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
                          send_json(res, 400, error_json(400, "limit must be a non-negative integer"));
                          return;
                      }
                      limit = std::stoul(v);
                  }
                  if (auto s = snapshot_or_503(src, res)) send_json(res, 200, history_json(*s, limit));
              });
    add_route("/api/v1/config", "/api/v1/config", "GET", "effective configuration",
              [this](const Request& req, Response& res) {
                  if (!only_params(req, res, {})) return;
                  if (!config_view) {
                      send_json(res, 503, error_json(503, "configuration view not available"));
                      return;
                  }
                  send_json(res, 200, versioned(config_view()));
              });
}

size_t ApiServer::Impl::stat_index_for(const Request& req) const {
    const Route* path_match = nullptr;
    for (const auto& r : routes) {
        if (!std::regex_match(req.path, r.re)) continue;
        const bool method_ok = r.method == req.method || (r.method == "GET" && req.method == "HEAD");
        if (method_ok) return r.stat_index;
        if (!path_match) path_match = &r;
    }
    return path_match ? path_match->stat_index : stats->other_handler();
}

std::vector<std::string> ApiServer::Impl::methods_for(const std::string& path) const {
    std::vector<std::string> out;
    auto add = [&](const std::string& m) {
        if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    };
    for (const auto& r : routes) {
        if (!std::regex_match(path, r.re)) continue;
        add(r.method);
        if (r.method == "GET") add("HEAD");
    }
    return out;
}

bool ApiServer::Impl::authorized(const Request& req, Response& res) const {
    // The web config's basic auth guards every route; peers' daemons get in with the token.
    const auto st = web->current();
    if (!st->auth->enabled()) return true;
    const std::string authz = req.get_header_value("Authorization");
    try {
        if (st->auth->check(authz) || credentials_match(authz, peer_token_hex)) return true;
    } catch (const LibcryptMissing& e) {
        // No verdict on the password: a fault of this server, not of the client's credentials.
        // The token still lets a peer in; the log says it once, not once a scrape.
        if (credentials_match(authz, peer_token_hex)) return true;
        if (!libcrypt_missing_logged.exchange(true)) log->error("api: basic auth: {}", e.what());
        send_json(res, 500, error_json(500, "internal error; the daemon log has the details"));
        return false;
    }
    res.set_header("WWW-Authenticate", "Basic realm=\"rocewatch\", charset=\"UTF-8\"");
    send_json(res, 401,
              error_json(401, authz.empty() ? "authentication required (basic auth; see the web config)"
                                            : "wrong user name or password"));
    return false;
}

// An error status a handler set without a body, or no route: a JSON error, a 405 with Allow
// where the path is served by another method.
void ApiServer::Impl::error_answer(const Request& req, Response& res) const {
    std::string message = status_reason(res.status);
    if (res.status == 404) {
        const auto allowed = methods_for(req.path);
        if (!allowed.empty()) {
            std::string allow;
            for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
            res.status = 405;
            res.set_header("Allow", allow);
            message = "method " + req.method + " not allowed on " + req.path + " (allowed: " + allow + ")";
        } else {
            message = "no such endpoint: " + req.path + " (GET / lists them)";
        }
    }
    send_json(res, res.status, error_json(res.status, message));
}

void ApiServer::Impl::common_headers(Response& res) const {
    for (const auto& [name, value] : kAnswerHeaders)
        if (!res.has_header(name)) res.set_header(std::string(name), std::string(value));
    // Answers differ by Accept-Encoding (JSON and text go compressed to clients that take
    // gzip); ranges are ignored (RFC 9110 14.2), not served.
    if (!res.has_header("Vary")) res.set_header("Vary", "Accept-Encoding");
    res.erase_header("Accept-Ranges");
    res.set_header("Accept-Ranges", "none");
    for (const auto& [name, value] : web->current()->config.headers) {
        res.erase_header(name);
        res.set_header(name, value);
    }
}

size_t ApiServer::Impl::answer(Request& req, Response& res) {
    if (!authorized(req, res)) {
        common_headers(res);
        return stat_index_for(req);  // counted under the route the path names, as any answer
    }
    const bool get = req.method == "GET" || req.method == "HEAD";
    const Route* route = nullptr;
    for (const auto& r : routes)
        if ((r.method == "GET" ? get : r.method == req.method) && std::regex_match(req.path, req.matches, r.re)) {
            route = &r;
            break;
        }
    if (route) {
        std::string failure;
        try {
            route->handler(req, res);
            if (res.status == -1) res.status = 200;
        } catch (const std::exception& e) {
            failure = e.what();
        } catch (...) {
            failure = "unknown exception";
        }
        if (!failure.empty()) {
            log->error("api: {} {} failed: {}", req.method, log_safe(req.path, 200), failure);
            res = Response{};  // nothing of what the handler began goes out
            send_json(res, 500, error_json(500, "internal error; the daemon log has the details"));
        }
    } else {
        res.status = 404;
    }
    if (res.status >= 400 && res.content().empty()) error_answer(req, res);
    common_headers(res);
    return route ? route->stat_index : stat_index_for(req);
}

void ApiServer::Impl::serve_metrics(const Request& req, Response& res) {
    auto s = snapshot_or_503(src, res);
    if (!s) return;
    const bool gzip = accepts_gzip(req.get_header_value("Accept-Encoding"));
    const auto web_reload = web->reload_status();
    auto body = std::make_shared<const std::string>(
        metrics.body(s, render_http_metrics(*stats, web_reload ? &*web_reload : nullptr), gzip));
    // Coded here, once per snapshot and per request's tail: write_answer leaves a body with
    // a Content-Encoding as it is. Vary is set with the headers every answer carries.
    if (gzip) res.set_header("Content-Encoding", "gzip");
    res.set_shared_content(std::move(body), kMetricsContentType);
}

}  // namespace rocewatch::api
