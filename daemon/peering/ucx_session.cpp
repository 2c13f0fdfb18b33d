// UCX probes as the daemon runs them: every UCX endpoint lives in a child process.
#include "daemon/peering/ucx_session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <vector>

#include "api/probe_view.hpp"
#include "probes/errors.hpp"
#include "probes/result.hpp"

extern char** environ;

namespace rocewatch {
namespace {

using nlohmann::json;

// The child's environment: ours, with UCX's memory hooks off unless the operator chose.
std::vector<std::string> child_environment() {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
    auto set_default = [&](const std::string& name, const std::string& value) {
        bool have = std::ranges::any_of(env, [&](const std::string& v) { return v.starts_with(name + "="); });
        if (!have) env.push_back(name + "=" + value);
    };
    bool user_chose = std::ranges::any_of(env, [](const std::string& v) {
        return v.starts_with("UCX_MEM_EVENTS=") || v.starts_with("UCX_MEM_MMAP_HOOK_MODE=") ||
               v.starts_with("UCX_MEM_MALLOC_HOOKS=");
    });
    if (!user_chose) {
        env.emplace_back("UCX_MEM_MMAP_HOOK_MODE=none");
        env.emplace_back("UCX_MEM_EVENTS=no");
    }
    // UCX logs every refused connect as an ERROR; our result says it once, with context.
    set_default("UCX_LOG_LEVEL", "fatal");
    return env;
}

}  // namespace

// ---------------------------------------------------------------- the child process

std::string find_ucx_session_exe(const std::string& self_exe, const std::string& libexec_dir) {
    std::vector<std::string> candidates;
    std::error_code ec;
    auto self = std::filesystem::read_symlink(self_exe, ec);
    if (ec) self = std::filesystem::path(self_exe);
    if (self.has_parent_path()) candidates.push_back((self.parent_path() / kUcxSessionExe).string());
    if (!libexec_dir.empty()) candidates.push_back((std::filesystem::path(libexec_dir) / kUcxSessionExe).string());
    for (const auto& c : candidates)
        if (::access(c.c_str(), X_OK) == 0) return c;
    return "";
}

std::string ucx_session_version(const std::string& exe, Deadline deadline) {
    if (exe.empty()) return "";
    std::string why;
    auto child = UcxChild::spawn(exe, why, "--version");
    if (!child) return "";
    auto line = child->receive(deadline, why);
    if (!line || !line->is_object()) return "";
    auto v = line->value("ucx_version", std::string());
    // A version is digits and dots; anything else is not one.
    if (v.size() > 32 || v.find_first_not_of("0123456789.") != std::string::npos) return "";
    return v;
}

std::unique_ptr<UcxChild> UcxChild::spawn(const std::string& exe, std::string& why, const std::string& flag) {
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) {
        why = errno_detail("pipe", errno);
        return nullptr;
    }
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
        why = errno_detail("pipe", errno);
        ::close(to_child[0]);
        ::close(to_child[1]);
        return nullptr;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, from_child[1], STDOUT_FILENO);
    // The child must not inherit our blocked signal mask (SIGTERM would never reach it).
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigset_t dfl;
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    auto env = child_environment();
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string arg0 = exe, arg1 = flag;
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, exe.c_str(), &fa, &attr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(to_child[0]);
    ::close(from_child[1]);
    if (rc != 0) {
        why = errno_detail("start UCX session process " + exe, rc);
        ::close(to_child[1]);
        ::close(from_child[0]);
        return nullptr;
    }
    std::unique_ptr<UcxChild> c(new UcxChild());
    c->pid_ = pid;
    c->in_ = to_child[1];
    c->out_ = from_child[0];
    return c;
}

UcxChild::~UcxChild() {
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
    if (pid_ > 0) {
        // A child that finished has exited; one still in a UCX call is ended here.
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
        }
    }
}

bool UcxChild::send(const json& line) {
    std::string s = line.dump() + "\n";
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::write(in_, s.data() + off, s.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        off += static_cast<size_t>(n);
    }
    return true;
}

std::optional<json> UcxChild::receive(Deadline deadline, std::string& why) {
    constexpr size_t kMaxLine = 1 << 20;
    for (;;) {
        if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            auto j = json::parse(line, nullptr, false);
            if (j.is_discarded() || !j.is_object()) {
                why = "protocol_error";
                return std::nullopt;
            }
            return j;
        }
        if (buffer_.size() > kMaxLine) {
            why = "protocol_error";
            return std::nullopt;
        }
        pollfd p{out_, POLLIN, 0};
        const timespec ts = deadline.remaining_timespec();
        int rc = ::ppoll(&p, 1, &ts, nullptr);
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0 && !deadline.expired()) continue;  // the end of a slice
        if (rc <= 0) {
            why = rc == 0 ? reason::timeout : reason::internal_error;
            return std::nullopt;
        }
        char buf[4096];
        ssize_t n = ::read(out_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            why = reason::peer_closed;
            return std::nullopt;
        }
        buffer_.append(buf, static_cast<size_t>(n));
    }
}

// ---------------------------------------------------------------- active side

ProbeResult run_ucx_job(const Config& cfg, const ProbeJob& job, const std::string& exe, const SessionExchange& exchange,
                        Deadline deadline, const std::vector<std::pair<std::string, RdmaTxCounter>>& rails) {
    const auto t0 = SteadyClock::now();
    const ProbeKind kind = job.kind;
    std::string granted_id;  // the peer's session, once granted: ended early if our side fails
    auto done = [&](ProbeResult r) {
        r.kind = kind;
        if (!r.success) end_session(exchange, granted_id);
        r.duration_seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
        return r;
    };
    try {
        const bool lat = kind == ProbeKind::ucx_put_lat;
        json session{{"kind", to_string(kind)},
                     {"message_size", lat ? cfg.probes.ucx_lat.size : cfg.probes.ucx_bw.message_size},
                     {"iterations", lat ? uint64_t{cfg.probes.ucx_lat.count} : uint64_t{0}},
                     {"seconds", lat ? 0.0 : as_seconds(cfg.probes.ucx_bw.duration)},
                     {"timeout", deadline.remaining_seconds()}};
        std::string why;
        auto child = UcxChild::spawn(exe, why);
        if (!child) return done(failed_result(kind, reason::local_resources, why));
        json first = session;
        first["role"] = "active";
        child->send(first);
        // Opening a UCX context takes tens of milliseconds; a few seconds at most.
        auto opened = child->receive(deadline.min(Deadline::after(std::chrono::seconds(10))), why);
        if (!opened)
            return done(failed_result(kind, why, "the UCX session process did not open an endpoint (" + why + ")"));
        if (!opened->contains("endpoint"))
            return done(failed_result(kind, opened->value("reason", std::string(reason::internal_error)),
                                      "local UCX: " + opened->value("detail", std::string())));
        json request = session;
        request["endpoint"] = (*opened)["endpoint"];
        request["timeout"] = deadline.remaining_seconds() + 2;  // the peer waits a little longer than we do
        auto reply = exchange(request, deadline);
        if (!reply.body) return done(failed_result(kind, reply.reason, reply.detail));
        if (!reply.body->contains("endpoint"))
            return done(failed_result(kind, reason_from_peer(reply.body->value("reason", std::string())),
                                      "peer: " + reply.body->value("detail", std::string("refused the UCX session"))
                                                     .substr(0, kMaxPeerDetail)));
        granted_id = granted_session(*reply.body);
        // Which rails the run used: their counters around it (wire-up included, a few KB).
        std::vector<std::optional<uint64_t>> before;
        if (!lat)
            for (const auto& [name, c] : rails) before.push_back(read_tx_counter(c));
        child->send(json{{"remote", (*reply.body)["endpoint"]}});
        // The child keeps its own deadline; a second more for it to say so before it is killed.
        auto result = child->receive(Deadline{deadline.at + std::chrono::seconds(1), deadline.cancel}, why);
        if (!result || !result->contains("result"))
            return done(failed_result(kind, why.empty() ? reason::protocol_error : why,
                                      why == reason::peer_closed
                                          ? "the UCX session process died (see the daemon's log)"
                                          : "no result from the UCX session process (" + why + ")"));
        auto r = api::probe_result_from_json((*result)["result"], kind);
        for (size_t i = 0; i < before.size(); ++i) {
            auto after = read_tx_counter(rails[i].second);
            if (before[i] && after && *after >= *before[i]) r.bytes_per_rail[rails[i].first] = *after - *before[i];
            r.info["rail." + rails[i].first + ".counter"] = rails[i].second.source.empty() ? "none"
                                                                                           : rails[i].second.source;
        }
        return done(std::move(r));
    } catch (const std::exception& e) {
        return done(failed_result(kind, reason::internal_error, e.what()));
    }
}

// ---------------------------------------------------------------- passive side

UcxSessionAccept accept_ucx_session(const Config& cfg, const json& req, const std::string& exe,
                                    const std::atomic<bool>* cancel) {
    auto refuse = [](const std::string& reason, const std::string& detail) {
        return UcxSessionAccept{json{{"reason", reason}, {"detail", detail}}, {}};
    };
    try {
        if (!req.is_object()) return refuse(reason::protocol_error, "the request is not a JSON object");
        auto kind = probe_kind_from_string(req.value("kind", std::string()));
        if (!kind || !is_ucx_kind(*kind)) return refuse(reason::bad_target, "kind must be ucx_put_bw or ucx_put_lat");
        const bool lat = *kind == ProbeKind::ucx_put_lat;
        const SessionBudget b = lat ? SessionBudget{cfg.probes.ucx_lat.size, cfg.probes.ucx_lat.count, 0, 0}
                                    : SessionBudget{cfg.probes.ucx_bw.message_size, 0,
                                                    as_seconds(cfg.probes.ucx_bw.duration), 0};
        std::string bad;
        const auto ask = read_session_ask(req, bad);
        if (!ask) return refuse(reason::protocol_error, bad);
        const uint32_t size = ask->message_size;
        const uint64_t iterations = ask->iterations;
        const double secs = ask->seconds;
        const double timeout = ask->timeout;
        if (auto why = session_over_budget(lat, size, iterations, secs, b); !why.empty())
            return refuse(reason::bad_target, why);
        if (timeout <= 0 || !req.contains("endpoint"))
            return refuse(reason::protocol_error, "timeout or endpoint missing");
        const double max_session = as_seconds(probe_timing(cfg.probes, *kind).budget) + 5;
        const auto deadline = Deadline::after_seconds(std::min(timeout, max_session));

        std::string why;
        std::shared_ptr<UcxChild> child = UcxChild::spawn(exe, why);
        if (!child) return refuse(reason::local_resources, why);
        json first{{"role", "passive"},        {"kind", to_string(*kind)}, {"message_size", size},
                   {"iterations", iterations}, {"seconds", secs},          {"timeout", deadline.remaining_seconds()},
                   {"remote", req["endpoint"]}};
        child->send(first);
        auto opened = child->receive(deadline.min(Deadline::after(std::chrono::seconds(10))), why);
        if (!opened)
            return refuse(why == reason::peer_closed ? reason::protocol_error : why,
                          "the UCX session process " + std::string(why == reason::peer_closed
                                                                       ? "died on the request (a malformed worker "
                                                                         "address or rkey aborts UCX)"
                                                                       : "did not open an endpoint (" + why + ")"));
        if (!opened->contains("endpoint"))
            return refuse(opened->value("reason", std::string(reason::internal_error)),
                          opened->value("detail", std::string()));
        UcxSessionAccept a;
        a.reply = json{{"endpoint", (*opened)["endpoint"]}};
        const ProbeKind k = *kind;
        Deadline wait{deadline.at + std::chrono::seconds(1), cancel};
        a.serve = [child, wait, k]() {
            std::string why;
            auto result = child->receive(wait, why);
            if (wait.cancelled()) return failed_result(k, reason::peer_closed, "the peer ended the session");
            if (!result || !result->contains("result"))
                return failed_result(k, why, "no result from the UCX session process");
            return api::probe_result_from_json((*result)["result"], k);
        };
        return a;
    } catch (const std::exception& e) {
        return refuse(reason::protocol_error, e.what());
    }
}

}  // namespace rocewatch
