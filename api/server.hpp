// The one HTTP server: REST API, /metrics, health probes, behind a hardened front gate.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "api/http_message.hpp"
#include "api/options.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch::api {

// Where handlers get the data they serve. Implementations hand out the latest published
// snapshot (an atomic shared_ptr load); nullptr until the first one exists.
class SnapshotSource {
public:
    virtual ~SnapshotSource() = default;
    virtual std::shared_ptr<const Snapshot> latest() const = 0;
};

// Effective configuration as JSON (the composition root wires config_to_json).
using ConfigView = std::function<nlohmann::json()>;

class ApiServer {
public:
    // Binds at once, so a taken port fails here, loudly (std::runtime_error), not later
    // on the listener thread; a bad web config fails here too (WebConfigError, which is a
    // std::runtime_error). `src` must outlive the server.
    static std::unique_ptr<ApiServer> create(ApiOptions opts, const SnapshotSource& src, ConfigView config_view,
                                             std::shared_ptr<spdlog::logger> log);
    ~ApiServer();
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    int port() const;  // the bound port (the ephemeral one when options said 0)
    bool tls() const;  // serving HTTPS (the web config has tls_server_config)

    // Where the web config asks for basic auth, peers' daemons still get in with the peer
    // token (Bearer, or as a basic auth password), as they do on the peer routes. Before start().
    void accept_peer_token(std::string token_hex);
    // Whether an Authorization header names a user of the web config's basic_auth_users
    // (false when it has none): such a user may use the token-guarded routes too.
    bool web_user(const std::string& authorization_header) const;
    void start();  // serves on its own threads; returns once it accepts connections
    void stop();   // idempotent; also done by the destructor
    // The source has a new snapshot: /metrics, while scraped, renders it now. Any thread.
    void snapshot_published();

    // Extension point (probe endpoints): extra routes, registered before start(). The
    // pattern is a std::regex the whole path must match and doubles as the `handler` label of the request
    // counter, so keep it a fixed string, not something built from input.
    // `description`: what GET / says the route does.
    void add_get(const std::string& pattern, std::string description, Handler h);
    void add_post(const std::string& pattern, std::string description, Handler h);

    struct Impl;

private:
    explicit ApiServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace rocewatch::api
