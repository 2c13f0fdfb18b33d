// cpp-httplib server with a front gate, a bounded worker pool, and the API's routes.
#include "api/server.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

#include "api/http_stats.hpp"
#include "api/json_view.hpp"
#include "api/metrics.hpp"
#include "api/request_gate.hpp"

namespace rocewatch::api {

namespace {

using Steady = std::chrono::steady_clock;

// Set while a job runs on a thread that must not serve it (queue full, or stopping):
// httplib's job is an opaque closure over the socket, so the queue cannot close the
// socket itself; it runs the job with this set and the gate answers 503 and closes.
thread_local const RejectReason* t_reject = nullptr;

class RejectScope {
   public:
    explicit RejectScope(const RejectReason& r) : prev_(t_reject) { t_reject = &r; }
    ~RejectScope() { t_reject = prev_; }
    RejectScope(const RejectScope&) = delete;
    RejectScope& operator=(const RejectScope&) = delete;

   private:
    const RejectReason* prev_;
};

constexpr RejectReason kOverload = RejectReason::overload;
constexpr RejectReason kShuttingDown = RejectReason::shutting_down;

// Waits for `events` on fd until `deadline`: >0 ready (or hung up), 0 timed out, <0 error.
int wait_io(int fd, short events, Steady::time_point deadline) {
    for (;;) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Steady::now()).count();
        if (left <= 0) return 0;
        pollfd p{fd, events, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60'000)));
        if (r < 0 && errno == EINTR) continue;
        if (r == 0 && Steady::now() < deadline) continue;
        return r;
    }
}

// Best-effort write of a whole buffer before `deadline`; never blocks past it.
void send_until(int fd, std::string_view data, Steady::time_point deadline) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            data.remove_prefix(static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_io(fd, POLLOUT, deadline) > 0) continue;
        return;
    }
}

std::string raw_error_response(int status, const std::string& message) {
    const std::string body = dump_json(error_json(status, message));
    std::string r = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
    r += "Content-Type: application/json\r\n";
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    if (status == 405) r += "Allow: GET, HEAD, POST\r\n";
    if (status == 503) r += "Retry-After: 1\r\n";
    r += "Connection: close\r\n\r\n";
    return r + body;
}

std::string address_of(const sockaddr_storage& ss, int& port) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
        port = ntohs(a.sin_port);
        return inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf) ? buf : "";
    }
    if (ss.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
        port = ntohs(a.sin6_port);
        return inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf) ? buf : "";
    }
    port = -1;
    return {};
}

// httplib's own SocketStream is not in the Debian header (the library is compiled), and
// its Server::process_and_close_socket is private, so the gate cannot hand the socket
// back to it. Instead the gate hands httplib this stream: it first replays the head the
// gate already read, then reads the socket against one deadline for the whole request
// (a per-read timeout would let a client trickle a body in forever), and writes against
// one deadline for the whole response (a client that stops reading is cut off).
class GateStream final : public httplib::Stream {
   public:
    // `read_budget`: head plus the largest body allowed. The gate already holds the body
    // to Content-Length <= max_body_bytes; this bound holds even if httplib read more.
    GateStream(int fd, std::string pending, size_t read_budget, Steady::time_point read_deadline,
               std::chrono::milliseconds write_timeout)
        : fd_(fd),
          pending_(std::move(pending)),
          budget_(read_budget),
          read_deadline_(read_deadline),
          write_timeout_(write_timeout) {}

    using httplib::Stream::write;

    bool is_readable() const override { return off_ < pending_.size() || wait_io(fd_, POLLIN, read_deadline_) > 0; }
    bool is_writable() const override { return wait_io(fd_, POLLOUT, write_deadline()) > 0; }

    ssize_t read(char* ptr, size_t size) override {
        if (consumed_ >= budget_) return -1;
        size = std::min(size, budget_ - consumed_);
        if (off_ < pending_.size()) {
            const size_t n = std::min(size, pending_.size() - off_);
            std::memcpy(ptr, pending_.data() + off_, n);
            off_ += n;
            consumed_ += n;
            return static_cast<ssize_t>(n);
        }
        for (;;) {
            if (wait_io(fd_, POLLIN, read_deadline_) <= 0) return -1;
            const ssize_t n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            if (n > 0) consumed_ += static_cast<size_t>(n);
            return n;
        }
    }

    ssize_t write(const char* ptr, size_t size) override {
        for (;;) {
            if (wait_io(fd_, POLLOUT, write_deadline()) <= 0) return -1;
            const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            return n;
        }
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        port = -1;
        if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) ip = address_of(ss, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        port = -1;
        if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) ip = address_of(ss, port);
    }
    socket_t socket() const override { return fd_; }

   private:
    Steady::time_point write_deadline() const {
        if (!write_deadline_) write_deadline_ = Steady::now() + write_timeout_;
        return *write_deadline_;
    }

    int fd_;
    std::string pending_;
    size_t off_ = 0;
    size_t budget_;
    size_t consumed_ = 0;
    Steady::time_point read_deadline_;
    std::chrono::milliseconds write_timeout_;
    mutable std::optional<Steady::time_point> write_deadline_;
};

// httplib's ThreadPool queue is unbounded: a connection flood would pile up sockets
// and memory without limit. This one holds at most `max_queued` connections beyond
// those idle workers are about to take; the next one is refused on the accept thread.
class BoundedTaskQueue final : public httplib::TaskQueue {
   public:
    BoundedTaskQueue(size_t threads, size_t max_queued) : max_queued_(max_queued) {
        for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ~BoundedTaskQueue() override { shutdown(); }
    BoundedTaskQueue(const BoundedTaskQueue&) = delete;
    BoundedTaskQueue& operator=(const BoundedTaskQueue&) = delete;

    void enqueue(std::function<void()> fn) override {
        const RejectReason* why = nullptr;
        {
            std::lock_guard lk(mu_);
            if (stopping_)
                why = &kShuttingDown;
            else if (jobs_.size() >= idle_ + max_queued_)
                why = &kOverload;
            else
                jobs_.push_back(std::move(fn));
        }
        if (!why) {
            cv_.notify_one();
            return;
        }
        RejectScope scope(*why);
        run(fn);
    }

    void shutdown() override {
        {
            std::lock_guard lk(mu_);
            if (stopping_ && workers_.empty()) return;
            stopping_ = true;
        }
        cv_.notify_all();
        for (auto& t : workers_) t.join();
        workers_.clear();
        // Connections still waiting get a 503 and are closed, not leaked.
        std::deque<std::function<void()>> left;
        {
            std::lock_guard lk(mu_);
            left.swap(jobs_);
        }
        RejectScope scope(kShuttingDown);
        for (auto& fn : left) run(fn);
    }

   private:
    static void run(const std::function<void()>& fn) noexcept {
        try {
            fn();
        } catch (...) {  // the gate catches its own; nothing may kill a worker
        }
    }

    void work() {
        for (;;) {
            std::function<void()> fn;
            {
                std::unique_lock lk(mu_);
                ++idle_;
                cv_.wait(lk, [this] { return stopping_ || !jobs_.empty(); });
                --idle_;
                if (stopping_) return;
                fn = std::move(jobs_.front());
                jobs_.pop_front();
            }
            run(fn);
        }
    }

    const size_t max_queued_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    size_t idle_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

struct Route {
    std::string label;        // handler label and what GET / lists
    std::regex re;
    std::string method;       // "GET" (also serves HEAD) or "POST"
    std::string description;
    size_t stat_index = 0;
};

}  // namespace

class GatedServer;

struct ApiServer::Impl {
    Impl(ApiOptions o, const SnapshotSource& s, ConfigView cv, std::shared_ptr<spdlog::logger> l)
        : opts(std::move(o)), src(s), config_view(std::move(cv)), log(std::move(l)) {}

    ApiOptions opts;
    const SnapshotSource& src;
    ConfigView config_view;
    std::shared_ptr<spdlog::logger> log;

    std::vector<Route> routes;
    std::unique_ptr<HttpStats> stats;  // made by start(), when the routes are final

    // The snapshot's metrics text, rendered once per published snapshot: a scrape then costs
    // a string copy, whatever the number of devices, and many scrapers cost no more work.
    std::mutex metrics_mu;
    std::shared_ptr<const Snapshot> metrics_for;
    std::shared_ptr<const std::string> metrics_text;
    std::shared_ptr<const std::string> snapshot_metrics(const std::shared_ptr<const Snapshot>& s) {
        std::lock_guard lock(metrics_mu);
        if (metrics_for != s) {
            metrics_text = std::make_shared<const std::string>(render_snapshot_metrics(*s));
            metrics_for = s;
        }
        return metrics_text;
    }
    std::unique_ptr<GatedServer> server;
    std::thread listener;
    int port = 0;

    // Sockets a worker is serving, so stop() can cut them short instead of waiting out
    // their timeouts.
    std::mutex active_mu;
    std::set<int> active;
    bool stopping = false;

    void add_route(std::string pattern, std::string label, std::string method, std::string description,
                   httplib::Server::Handler h);
    void register_builtin_routes();
    void install_handlers();
    size_t stat_index_for(const httplib::Request& req) const;
    std::vector<std::string> methods_for(const std::string& path) const;
    std::shared_ptr<const Snapshot> snapshot_or_503(httplib::Response& res) const;
    void serve_socket(int sock);
};

class GatedServer final : public httplib::Server {
   public:
    explicit GatedServer(ApiServer::Impl& impl) : impl_(impl) {}

    socket_t listen_socket() const { return svr_sock_; }
    // A bound but never started server: httplib's destructor does not close it.
    void close_unused_listener() {
        socket_t s = svr_sock_.exchange(INVALID_SOCKET);
        if (s != INVALID_SOCKET) ::close(s);
    }
    bool serve_one(httplib::Stream& strm) {
        bool closed = false;
        // close_connection=true: exactly one request per connection. httplib would read a
        // second keep-alive request on its own, past the gate; ending every connection
        // after one answer means every request a client sends is judged by the gate.
        return process_request(strm, /*close_connection=*/true, closed, std::function<void(httplib::Request&)>{});
    }

   private:
    bool process_and_close_socket(socket_t sock) override {
        impl_.serve_socket(sock);
        return true;
    }
    ApiServer::Impl& impl_;
};

namespace {

// Sends the answer, then closes gracefully: shut down our side and, when `linger` is
// set, read and discard what the client still sends for a short while, so the close
// does not turn into a reset that destroys the answer before the client reads it.
void answer_and_close(int fd, int status, const std::string& message, bool linger) {
    const auto now = Steady::now();
    send_until(fd, raw_error_response(status, message), now + std::chrono::milliseconds(linger ? 1000 : 0));
    ::shutdown(fd, SHUT_WR);
    if (linger) {
        const auto until = Steady::now() + std::chrono::milliseconds(250);
        char sink[4096];
        size_t drained = 0;
        while (drained < (256u << 10) && wait_io(fd, POLLIN, until) > 0) {
            const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
            if (n == 0) break;
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
                break;
            }
            drained += static_cast<size_t>(n);
        }
    } else {
        char sink[4096];
        while (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
    }
}

void send_json(httplib::Response& res, int status, const nlohmann::json& j) {
    res.status = status;
    res.set_content(dump_json(j), "application/json");
}

}  // namespace

void ApiServer::Impl::serve_socket(int sock) {
    if (t_reject) {
        // Refused on the accept thread or while stopping: answer without waiting on anyone.
        stats->count_rejected(*t_reject);
        answer_and_close(sock, 503, *t_reject == RejectReason::overload ? "server busy, retry" : "server stopping", false);
        ::close(sock);
        return;
    }
    {
        std::lock_guard lk(active_mu);
        if (stopping) {
            stats->count_rejected(RejectReason::shutting_down);
            answer_and_close(sock, 503, "server stopping", false);
            ::close(sock);
            return;
        }
        active.insert(sock);
    }

    try {
        // The gate: nothing reaches httplib until the whole head is in and judged.
        const auto deadline = Steady::now() + opts.timeout;
        std::string head;
        head.reserve(1024);
        HeadCheck verdict;
        bool recheck = true;
        bool client_gone = false;
        char buf[4096];
        for (;;) {
            if (recheck) {
                verdict = check_request_head(head, opts);
                if (verdict.verdict != HeadCheck::Verdict::incomplete) break;
            }
            const int r = wait_io(sock, POLLIN, deadline);
            if (r == 0) {
                verdict = HeadCheck{HeadCheck::Verdict::reject, 408, RejectReason::timeout,
                                    "request head not complete within " + std::to_string(opts.timeout.count()) + " ms", 0};
                break;
            }
            if (r < 0) {
                client_gone = true;
                break;
            }
            // Never read past one byte over the limit: that byte is enough to say 431.
            const size_t want = std::min(sizeof buf, opts.max_header_bytes + 1 - std::min(head.size(), opts.max_header_bytes));
            const ssize_t n = ::recv(sock, buf, want, MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            if (n <= 0) {
                client_gone = true;
                break;
            }
            // Re-judge only when a line ended or the limit was crossed: a client
            // dribbling bytes must not make us re-scan the head for every one.
            recheck = std::memchr(buf, '\n', static_cast<size_t>(n)) != nullptr ||
                      head.size() + static_cast<size_t>(n) > opts.max_header_bytes;
            head.append(buf, static_cast<size_t>(n));
        }

        if (client_gone) {
            // Closed or reset before sending a head: nothing to answer.
        } else if (verdict.verdict == HeadCheck::Verdict::reject) {
            stats->count_rejected(verdict.reason);
            log->debug("api: rejected connection: {} {} ({})", verdict.status, to_string(verdict.reason), verdict.message);
            answer_and_close(sock, verdict.status, verdict.message, true);
        } else {
            GateStream strm(sock, std::move(head), verdict.head_bytes + opts.max_body_bytes, deadline, opts.timeout);
            server->serve_one(strm);
        }
    } catch (const std::exception& e) {
        log->error("api: connection failed: {}", e.what());
    } catch (...) {
        log->error("api: connection failed: unknown exception");
    }

    {
        std::lock_guard lk(active_mu);
        active.erase(sock);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
}

void ApiServer::Impl::add_route(std::string pattern, std::string label, std::string method, std::string description,
                                httplib::Server::Handler h) {
    if (stats) throw std::logic_error("api: routes must be added before start()");
    Route r{std::move(label), std::regex(pattern), method, std::move(description), 0};
    routes.push_back(std::move(r));
    if (method == "POST")
        server->Post(pattern, std::move(h));
    else
        server->Get(pattern, std::move(h));
}

std::shared_ptr<const Snapshot> ApiServer::Impl::snapshot_or_503(httplib::Response& res) const {
    auto s = src.latest();
    if (!s) {
        res.set_header("Retry-After", "1");
        send_json(res, 503, error_json(503, "no snapshot yet: the first collection has not finished"));
    }
    return s;
}

void ApiServer::Impl::register_builtin_routes() {
    add_route("/", "/", "GET", "this list", [this](const httplib::Request&, httplib::Response& res) {
        nlohmann::json eps = nlohmann::json::array();
        for (const auto& r : routes)
            eps.push_back({{"path", r.label},
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
              [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
    add_route("/readyz", "/readyz", "GET", "readiness: 200 once the first full collection is done, else 503",
              [this](const httplib::Request&, httplib::Response& res) {
                  auto s = src.latest();
                  if (s && s->daemon.ready) {
                      res.set_content("ready\n", "text/plain");
                      return;
                  }
                  send_json(res, 503, error_json(503, "not ready: the first full collection has not finished"));
              });
    add_route("/metrics", "/metrics", "GET", "Prometheus metrics",
              [this](const httplib::Request&, httplib::Response& res) {
                  if (auto s = snapshot_or_503(res))
                      res.set_content(*snapshot_metrics(s) + render_http_metrics(*stats), kMetricsContentType);
              });
    add_route("/api/v1/status", "/api/v1/status", "GET", "overall health, counts, collection and daemon status",
              [this](const httplib::Request&, httplib::Response& res) {
                  if (auto s = snapshot_or_503(res)) send_json(res, 200, status_json(*s, Clock::now()));
              });
    add_route("/api/v1/devices", "/api/v1/devices", "GET", "RDMA devices with ports, GIDs and counters",
              [this](const httplib::Request&, httplib::Response& res) {
                  if (auto s = snapshot_or_503(res)) send_json(res, 200, devices_json(*s));
              });
    add_route(R"(/api/v1/devices/([^/]+))", "/api/v1/devices/{name}", "GET", "one RDMA device",
              [this](const httplib::Request& req, httplib::Response& res) {
                  auto s = snapshot_or_503(res);
                  if (!s) return;
                  const std::string name = req.matches[1];
                  if (auto j = device_json(*s, name))
                      send_json(res, 200, *j);
                  else
                      send_json(res, 404, error_json(404, "no RDMA device named " + name));
              });
    add_route("/api/v1/interfaces", "/api/v1/interfaces", "GET", "network interfaces, addresses and their RDMA ports",
              [this](const httplib::Request&, httplib::Response& res) {
                  if (auto s = snapshot_or_503(res)) send_json(res, 200, interfaces_json(*s));
              });
    add_route("/api/v1/bonds", "/api/v1/bonds", "GET", "bonds and their slaves",
              [this](const httplib::Request&, httplib::Response& res) {
                  if (auto s = snapshot_or_503(res)) send_json(res, 200, bonds_json(*s));
              });
    add_route("/api/v1/alerts", "/api/v1/alerts", "GET", "active (pending and firing) alerts",
              [this](const httplib::Request&, httplib::Response& res) {
                  if (auto s = snapshot_or_503(res)) send_json(res, 200, alerts_json(*s));
              });
    add_route("/api/v1/alerts/history", "/api/v1/alerts/history", "GET", "alert transitions, oldest first; ?limit=N",
              [this](const httplib::Request& req, httplib::Response& res) {
                  std::optional<size_t> limit;
                  if (req.has_param("limit")) {
                      const std::string v = req.get_param_value("limit");
                      if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
                          send_json(res, 400, error_json(400, "limit must be a non-negative integer"));
                          return;
                      }
                      limit = std::stoul(v);
                  }
                  if (auto s = snapshot_or_503(res)) send_json(res, 200, history_json(*s, limit));
              });
    add_route("/api/v1/config", "/api/v1/config", "GET", "effective configuration",
              [this](const httplib::Request&, httplib::Response& res) {
                  if (!config_view) {
                      send_json(res, 503, error_json(503, "configuration view not available"));
                      return;
                  }
                  send_json(res, 200, config_view());
              });
}

size_t ApiServer::Impl::stat_index_for(const httplib::Request& req) const {
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

void ApiServer::Impl::install_handlers() {
    auto& s = *server;
    s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // the handler wrote its own error
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
        return httplib::Server::HandlerResponse::Handled;
    }));
    s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        log->error("api: {} {} failed: {}", req.method, req.path, what);
        send_json(res, 500, error_json(500, "internal error; the daemon log has the details"));
    });
    s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        stats->count_request(stat_index_for(req), res.status);
        log->debug("api: {} {} {}", req.method, req.path, res.status);
    });
    s.set_default_headers({{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}});
    s.set_keep_alive_max_count(1);  // see GatedServer::serve_one
    s.set_payload_max_length(opts.max_body_bytes);
    s.set_read_timeout(opts.timeout);
    s.set_write_timeout(opts.timeout);
    // httplib's default sets SO_REUSEPORT, which lets a second daemon bind the same port
    // and silently take half the scrapes. SO_REUSEADDR alone still allows quick restarts.
    s.set_socket_options([](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    const size_t threads = static_cast<size_t>(opts.threads);
    const size_t queued = opts.max_queued_connections;
    s.new_task_queue = [threads, queued] { return new BoundedTaskQueue(threads, queued); };
}

// ---------------------------------------------------------------- ApiServer

ApiServer::ApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ApiServer::~ApiServer() { stop(); }

std::unique_ptr<ApiServer> ApiServer::create(ApiOptions opts, const SnapshotSource& src, ConfigView config_view,
                                             std::shared_ptr<spdlog::logger> log) {
    if (opts.threads < 1) throw std::invalid_argument("api: threads must be at least 1");
    if (opts.timeout.count() <= 0) throw std::invalid_argument("api: timeout must be positive");
    if (opts.max_header_bytes < 64) throw std::invalid_argument("api: max_header_bytes must be at least 64");
    if (opts.port < 0 || opts.port > 65535) throw std::invalid_argument("api: port out of range");
    if (!log) log = std::make_shared<spdlog::logger>("api");  // no sinks: silent

    auto impl = std::make_unique<Impl>(std::move(opts), src, std::move(config_view), std::move(log));
    impl->server = std::make_unique<GatedServer>(*impl);
    impl->install_handlers();
    impl->register_builtin_routes();

    auto& o = impl->opts;
    errno = 0;
    int port = -1;
    if (o.port == 0)
        port = impl->server->bind_to_any_port(o.host);
    else
        port = impl->server->bind_to_port(o.host, o.port) ? o.port : -1;
    if (port <= 0) {
        const int err = errno;
        throw std::runtime_error("api: cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " +
                                 (err ? std::strerror(err) : "bind failed"));
    }
    // httplib listens with a backlog of 5, compiled into the library; connections beyond
    // it are dropped by the kernel and retried by clients seconds later. Calling listen()
    // again on the bound socket raises it, so bursts reach our queue and its 503 instead.
    ::listen(impl->server->listen_socket(), 128);
    impl->port = port;
    return std::unique_ptr<ApiServer>(new ApiServer(std::move(impl)));
}

int ApiServer::port() const { return impl_->port; }

void ApiServer::add_get(const std::string& pattern, httplib::Server::Handler h) {
    impl_->add_route(pattern, pattern, "GET", "", std::move(h));
}

void ApiServer::add_post(const std::string& pattern, httplib::Server::Handler h) {
    impl_->add_route(pattern, pattern, "POST", "", std::move(h));
}

void ApiServer::start() {
    auto& im = *impl_;
    if (im.listener.joinable() || im.stats) return;
    std::vector<std::string> labels;
    for (const auto& r : im.routes)
        if (std::find(labels.begin(), labels.end(), r.label) == labels.end()) labels.push_back(r.label);
    im.stats = std::make_unique<HttpStats>(labels);
    for (auto& r : im.routes) r.stat_index = im.stats->handler_index(r.label);

    auto done = std::make_shared<std::atomic<bool>>(false);
    im.listener = std::thread([&im, done] {
        if (!im.server->listen_after_bind()) im.log->error("api: listener stopped with an error");
        done->store(true);
    });
    // httplib's stop() does nothing until the listener has marked itself running; wait
    // for that so a stop() right after start() cannot be lost.
    const auto until = Steady::now() + std::chrono::seconds(5);
    while (!im.server->is_running() && !done->load() && Steady::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    im.log->info("api: listening on {}:{}", im.opts.host, im.port);
}

void ApiServer::stop() {
    auto& im = *impl_;
    if (!im.listener.joinable()) {
        im.server->close_unused_listener();
        return;
    }
    {
        // Wake workers blocked on slow clients now rather than at their deadlines.
        std::lock_guard lk(im.active_mu);
        im.stopping = true;
        for (int fd : im.active) ::shutdown(fd, SHUT_RDWR);
    }
    im.server->stop();
    im.listener.join();
    im.log->info("api: stopped");
}

}  // namespace rocewatch::api
