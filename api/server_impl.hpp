// ApiServer's insides, shared by its lifecycle (server.cpp) and its routes (routes.cpp).
#pragma once

#include <atomic>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "api/front_end.hpp"
#include "api/http_message.hpp"
#include "api/http_stats.hpp"
#include "api/metrics_cache.hpp"
#include "api/web_guard.hpp"
#include "api/server.hpp"
#include "api/worker_pool.hpp"

namespace rocewatch::api {

struct Route {
    std::string label;  // handler label and what GET / lists
    std::regex re;
    std::string method;  // "GET" (also serves HEAD) or "POST"
    std::string description;
    Handler handler;
    size_t stat_index = 0;
};

struct ApiServer::Impl {
    Impl(ApiOptions o, const SnapshotSource& s, ConfigView cv, std::shared_ptr<spdlog::logger> l)
        : opts(std::move(o)), src(s), config_view(std::move(cv)), log(std::move(l)), metrics([this] {
              return src.latest();
          }) {}

    ApiOptions opts;
    const SnapshotSource& src;
    ConfigView config_view;
    std::shared_ptr<spdlog::logger> log;

    std::vector<Route> routes;
    std::unique_ptr<HttpStats> stats;  // made by start(), when the routes are final
    MetricsCache metrics;

    std::unique_ptr<WebGuard> web;  // made by create(): a bad web config fails there
    std::string peer_token_hex;     // also opens the port when basic auth is on
    [[nodiscard]] bool credentials_known(std::string_view head) const;
    // Whether "libcrypt.so.1 not found" was logged: basic auth then answers 500, logged once.
    mutable std::atomic<bool> libcrypt_missing_logged{false};

    int listener = -1;  // bound by create(), accepted from by the front end
    std::unique_ptr<WorkerPool> pool;
    std::unique_ptr<FrontEnd> front;
    int port = 0;

    // routes.cpp
    void add_route(std::string pattern, std::string label, std::string method, std::string description, Handler h);
    void register_builtin_routes();  // GET /, health, /metrics, then the REST routes
    void register_rest_routes();
    // Basic auth, routing, the handler, error answers and the headers every answer carries;
    // returns the route's stat index (stats->other_handler() when none matched).
    size_t answer(Request& req, Response& res);
    [[nodiscard]] bool authorized(const Request& req, Response& res) const;
    void error_answer(const Request& req, Response& res) const;
    void common_headers(Response& res) const;
    size_t stat_index_for(const Request& req) const;
    std::vector<std::string> methods_for(const std::string& path) const;
    void serve_metrics(const Request& req, Response& res);

    // server.cpp
    void serve(GatedRequest& r);
    [[nodiscard]] bool serve_on_front_end(const GatedRequest& r);
};

}  // namespace rocewatch::api
