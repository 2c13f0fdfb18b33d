// The web config as the server lives with it: loaded at start, re-read when it or a file it
// names changes (certificate rotation needs no restart), a bad new version never replacing a good one.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "api/basic_auth.hpp"
#include "api/tls_context.hpp"
#include "api/web_config.hpp"
#include "util/clock.hpp"

namespace rocewatch::api {

struct WebState {
    WebConfig config;
    SslCtxPtr tls;                          // null: plain HTTP
    std::shared_ptr<const BasicAuth> auth;  // never null; !enabled(): no basic auth
};

// How the last look at a changed web config went, for /metrics.
struct WebReloadStatus {
    bool ok = true;                                        // false while the newest version on disk is refused
    std::chrono::system_clock::time_point last_success{};  // when the running version was loaded (start or reload)
};

class WebGuard {
public:
    // `path` empty: no web config (plain HTTP, no basic auth). Otherwise loads it now and
    // throws WebConfigError when it is bad: a daemon told to serve TLS never serves plain.
    WebGuard(std::string path, std::shared_ptr<spdlog::logger> log);

    const std::string& path() const { return path_; }
    // Fixed at start: switching TLS on or off takes a restart (a reload that tries is refused).
    bool tls() const { return tls_; }

    // The state to use now. At most once a second it looks (stat) whether the file or the
    // certificate, key or CA it names changed, and if so loads them; a version that fails
    // is logged once and the last good one stays.
    std::shared_ptr<const WebState> current(SteadyClock::time_point now = SteadyClock::now());
    // Nothing without a web config.
    std::optional<WebReloadStatus> reload_status() const;

private:
    struct Stamp {
        std::string path;
        long long mtime_ns = 0;
        long long size = -1;
        unsigned long long inode = 0;
        bool operator==(const Stamp&) const = default;
    };
    std::vector<Stamp> stamps_of(const WebConfig* c) const;
    std::shared_ptr<const WebState> load() const;

    const std::string path_;
    std::shared_ptr<spdlog::logger> log_;
    bool tls_ = false;
    mutable std::mutex mu_;
    std::shared_ptr<const WebState> state_;
    std::vector<Stamp> stamps_;   // of what state_ was built from
    std::vector<Stamp> refused_;  // of the last version that failed (logged once)
    SteadyClock::time_point next_check_;
    WebReloadStatus reload_;
};

}  // namespace rocewatch::api
