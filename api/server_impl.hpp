// ApiServer's insides, shared by its lifecycle (server.cpp) and its routes (routes.cpp).
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "api/front_end.hpp"
#include "api/http_stats.hpp"
#include "api/metrics_cache.hpp"
#include "api/web_guard.hpp"
#include "api/server.hpp"
#include "api/worker_pool.hpp"

namespace rocewatch::api {

// httplib::Server for its routing, handlers and response writing only: it binds the
// listener (so a taken port fails in create()), but never accepts; the front end does.
class GatedServer final : public httplib::Server {
public:
    socket_t listen_socket() const { return svr_sock_; }
    // httplib's destructor does not close the listener; nor does it run while serving,
    // as write_content_with_provider reads svr_sock_ == INVALID_SOCKET as "stopping".
    void close_listener() {
        socket_t s = svr_sock_.exchange(INVALID_SOCKET);
        if (s != INVALID_SOCKET) ::close(s);
    }
    // One request, already gated and complete in `strm`. `last`: answer with
    // Connection: close. Returns whether the connection may serve another request.
    bool serve_one(httplib::Stream& strm, bool last) {
        bool closed = false;
        const bool ok = process_request(strm, last, closed, std::function<void(httplib::Request&)>{});
        return ok && !closed && !last;
    }
};

struct Route {
    std::string label;  // handler label and what GET / lists
    std::regex re;
    std::string method;  // "GET" (also serves HEAD) or "POST"
    std::string description;
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
    [[nodiscard]] bool may_take_reserved_lane(std::string_view head) const;

    GatedServer server;
    std::unique_ptr<WorkerPool> pool;
    std::unique_ptr<FrontEnd> front;
    int port = 0;

    // routes.cpp
    void add_route(std::string pattern, std::string label, std::string method, std::string description,
                   httplib::Server::Handler h);
    void register_builtin_routes();  // GET /, health, /metrics, then the REST routes
    void register_rest_routes();
    void install_handlers();
    size_t stat_index_for(const httplib::Request& req) const;
    std::vector<std::string> methods_for(const std::string& path) const;
    void serve_metrics(const httplib::Request& req, httplib::Response& res);

    // server.cpp
    void serve(GatedRequest& r);
    [[nodiscard]] bool serve_on_front_end(const GatedRequest& r);
};

}  // namespace rocewatch::api
