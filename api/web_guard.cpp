// Loads the web config, builds its TLS context and basic auth, and reloads them when files change.
#include "api/web_guard.hpp"

#include <sys/stat.h>

namespace rocewatch::api {

using namespace std::chrono_literals;

WebGuard::WebGuard(std::string path, std::shared_ptr<spdlog::logger> log)
    : path_(std::move(path)), log_(std::move(log)) {
    if (!log_) log_ = std::make_shared<spdlog::logger>("api");
    if (path_.empty()) {
        state_ = std::make_shared<WebState>(
            WebState{{}, nullptr, std::make_shared<BasicAuth>(std::map<std::string, std::string>{})});
        return;
    }
    state_ = load();
    tls_ = state_->tls != nullptr;
    stamps_ = stamps_of(&state_->config);
    next_check_ = SteadyClock::now() + 1s;
    reload_.last_success = std::chrono::system_clock::now();
}

std::optional<WebReloadStatus> WebGuard::reload_status() const {
    if (path_.empty()) return std::nullopt;
    std::lock_guard lk(mu_);
    return reload_;
}

std::shared_ptr<const WebState> WebGuard::load() const {
    auto st = std::make_shared<WebState>();
    st->config = load_web_config(path_);
    if (st->config.tls) st->tls = make_server_tls_context(*st->config.tls, path_);
    st->auth = std::make_shared<BasicAuth>(st->config.users);
    return st;
}

std::vector<WebGuard::Stamp> WebGuard::stamps_of(const WebConfig* c) const {
    std::vector<std::string> files{path_};
    if (c)
        for (auto& f : referenced_files(*c)) files.push_back(std::move(f));
    std::vector<Stamp> out;
    for (auto& f : files) {
        Stamp s;
        s.path = std::move(f);
        struct stat sb {};
        if (::stat(s.path.c_str(), &sb) == 0) {
            s.mtime_ns = static_cast<long long>(sb.st_mtim.tv_sec) * 1'000'000'000LL + sb.st_mtim.tv_nsec;
            s.size = static_cast<long long>(sb.st_size);
            s.inode = static_cast<unsigned long long>(sb.st_ino);
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::shared_ptr<const WebState> WebGuard::current(SteadyClock::time_point now) {
    std::lock_guard lk(mu_);
    if (path_.empty() || now < next_check_) return state_;
    next_check_ = now + 1s;
    // The files the running state was built from; a changed config may name other files,
    // which the load below reads (and stamps) anew.
    const auto seen = stamps_of(&state_->config);
    if (seen == stamps_ || seen == refused_) return state_;
    try {
        auto next = load();
        if ((next->tls != nullptr) != tls_)
            throw WebConfigError(path_ + ": tls_server_config: switching TLS " + (tls_ ? "off" : "on") +
                                 " takes a restart of rocewatchd; the running web config stays");
        // The same users: the credentials verified so far stay verified (a certificate
        // rotation must not send every scraper through bcrypt and the general lane again).
        if (next->config.users == state_->config.users) {
            auto kept = std::make_shared<WebState>(*next);
            kept->auth = state_->auth;
            next = std::move(kept);
        }
        state_ = std::move(next);
        stamps_ = stamps_of(&state_->config);
        refused_.clear();
        reload_ = {true, std::chrono::system_clock::now()};
        log_->info("api: web config {} reloaded (TLS {}, {} basic auth user(s))", path_, tls_ ? "on" : "off",
                   state_->config.users.size());
    } catch (const std::exception& e) {
        refused_ = seen;
        reload_.ok = false;
        log_->error("api: web config not reloaded, the running one stays: {}", e.what());
    }
    return state_;
}

}  // namespace rocewatch::api
