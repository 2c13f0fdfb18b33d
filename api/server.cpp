// ApiServer's lifecycle: bind, start the front end and the workers, serve gated requests, stop.
#include "api/server.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "api/http_wire.hpp"
#include "api/probe_view.hpp"
#include "api/server_impl.hpp"
#include "util/log_safe.hpp"
#include "util/host_port.hpp"
#include "util/resolve.hpp"

namespace rocewatch::api {

// On a worker: parse, route and write the answer into memory; the front end sends it.
// Nothing here waits on the client.
void ApiServer::Impl::serve(GatedRequest& r) {
    std::string response;
    try {
        Request req = parse_request(r.bytes);
        req.remote_addr = std::move(r.remote_ip);
        req.remote_port = r.remote_port;
        Response res;
        const size_t stat = answer(req, res);
        const AnswerFraming framing{
            .close = r.last,
            .keep_alive_timeout_s =
                std::max<long>(1, std::chrono::duration_cast<std::chrono::seconds>(opts.keep_alive_timeout).count()),
            .keep_alive_max = opts.keep_alive_max_requests};
        response = write_answer(req, res, accepts_gzip(header_list(r.bytes, "Accept-Encoding")), framing);
        // Counted once the whole answer is in memory, before the front end sends a byte of
        // it: a client that has the answer finds it counted in /metrics.
        stats->count_request(stat, res.status);
        // The path is URL-decoded: %0d%0a would forge log lines.
        log->debug("api: {} {} {}", req.method, log_safe(req.path, 200), res.status);
    } catch (const std::exception& e) {
        log->error("api: request failed: {}", e.what());
    } catch (...) {
        log->error("api: request failed: unknown exception");
    }
    const bool failed = response.empty();
    if (failed) response = raw_error_response(500, "internal error; the daemon log has the details");
    front->complete(r.ticket, std::move(response), failed || r.last);
}

// A /metrics scrape whose body is rendered already costs a copy and the deflate of the small
// HTTP-counters tail (tens of microseconds): the front end's thread serves it itself, without
// handing it to a worker and the answer back (0.3-0.4 ms of a 1.3 ms scrape at 8 NICs,
// bench/scrape_vs_node_exporter.py). Basic auth (a bcrypt hash may take milliseconds to
// check) and a body still to render go to the workers. A snapshot published between this
// check and the handler is rendered by the handler: one render, and only in that window.
bool ApiServer::Impl::serve_on_front_end(const GatedRequest& r) {
    if (!is_metrics_request(r.bytes) || web->current()->auth->enabled()) return false;
    const auto s = src.latest();
    return s && metrics.ready(s, accepts_gzip(header_list(r.bytes, "Accept-Encoding")));
}

// Without basic auth, or with credentials verified before (the cache, no bcrypt) or the peer
// token: what the front end may judge without a worker. The lane reserved for scrapes is for
// these (a flood of wrong passwords to /metrics, a bcrypt check each on a worker, queues with
// everything else and cannot take the lane from a scraper), and so are the gate's 405s, which
// name the methods a path serves.
bool ApiServer::Impl::credentials_known(std::string_view head) const {
    const auto st = web->current();
    if (!st->auth->enabled()) return true;
    const std::string authz = header_list(head, "Authorization");
    return st->auth->known(authz) || credentials_match(authz, peer_token_hex);
}

ApiServer::ApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ApiServer::~ApiServer() { stop(); }

namespace {

void check_options(const ApiOptions& o) {
    if (o.threads < 1) throw std::invalid_argument("api: threads must be at least 1");
    if (o.reserved_threads < 0) throw std::invalid_argument("api: reserved_threads must not be negative");
    if (o.timeout.count() <= 0) throw std::invalid_argument("api: timeout must be positive");
    if (o.keep_alive_timeout.count() <= 0) throw std::invalid_argument("api: keep_alive_timeout must be positive");
    if (o.keep_alive_max_requests < 1) throw std::invalid_argument("api: keep_alive_max_requests must be at least 1");
    if (o.max_connections < 1 || o.max_connections_per_source < 1)
        throw std::invalid_argument("api: connection caps must be at least 1");
    if (o.max_header_bytes < 64) throw std::invalid_argument("api: max_header_bytes must be at least 64");
    if (o.port < 0 || o.port > 65535) throw std::invalid_argument("api: port out of range");
}

// A listening socket on host:port (port 0: any free one), the first address of the host that
// binds. SO_REUSEADDR for quick restarts, never SO_REUSEPORT, which would let a second daemon
// bind the same port and silently take half the scrapes; an IPv6 wildcard takes IPv4 too. A
// backlog of 512, so that bursts of connections reach the front end instead of being dropped
// by the kernel and retried by clients seconds later. -1 with `why` when none binds.
int bind_listener(const std::string& host, int port, std::string& why) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string bare = host.size() >= 2 && host.front() == '[' && host.back() == ']'
                                 ? host.substr(1, host.size() - 2)
                                 : host;
    if (const int rc = ::getaddrinfo(bare.empty() ? nullptr : bare.c_str(), std::to_string(port).c_str(), &hints, &res);
        rc != 0) {
        why = ::gai_strerror(rc);
        return -1;
    }
    int fd = -1;
    why = "no address to bind";
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            why = std::strerror(errno);
            continue;
        }
        int yes = 1, no = 0;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (a->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 512) != 0) {
            why = std::strerror(errno);
            ::close(fd);
            fd = -1;
        }
    }
    ::freeaddrinfo(res);
    return fd;
}

}  // namespace

std::unique_ptr<ApiServer> ApiServer::create(ApiOptions opts, const SnapshotSource& src, ConfigView config_view,
                                             std::shared_ptr<spdlog::logger> log) {
    check_options(opts);
    if (!log) log = std::make_shared<spdlog::logger>("api");  // no sinks: silent

    auto impl = std::make_unique<Impl>(std::move(opts), src, std::move(config_view), std::move(log));
    impl->web = std::make_unique<WebGuard>(impl->opts.web_config_file, impl->log);
    impl->register_builtin_routes();

    auto& o = impl->opts;
    const std::string where = host_port(o.host, static_cast<unsigned>(o.port));
    if (auto why = listen_host_error(o.host)) throw std::runtime_error("api: cannot listen on " + where + ": " + *why);
    std::string why;
    impl->listener = bind_listener(o.host, o.port, why);
    if (impl->listener < 0) throw std::runtime_error("api: cannot listen on " + where + ": " + why);
    int port = o.port;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(impl->listener, reinterpret_cast<sockaddr*>(&ss), &len) == 0) address_of(ss, port);
    impl->port = port;
    return std::unique_ptr<ApiServer>(new ApiServer(std::move(impl)));
}

int ApiServer::port() const { return impl_->port; }

void ApiServer::snapshot_published() { impl_->metrics.published(); }

bool ApiServer::tls() const { return impl_->web->tls(); }

void ApiServer::accept_peer_token(std::string token_hex) { impl_->peer_token_hex = std::move(token_hex); }

bool ApiServer::web_user(const std::string& authorization_header) const {
    const auto st = impl_->web->current();
    return st->auth->enabled() && st->auth->check(authorization_header).has_value();
}

void ApiServer::add_get(const std::string& pattern, std::string description, Handler h) {
    impl_->add_route(pattern, pattern, "GET", std::move(description), std::move(h));
}

void ApiServer::add_post(const std::string& pattern, std::string description, Handler h) {
    impl_->add_route(pattern, pattern, "POST", std::move(description), std::move(h));
}

void ApiServer::start() {
    auto& im = *impl_;
    if (im.stats) return;
    std::vector<std::string> labels;
    for (const auto& r : im.routes)
        if (std::find(labels.begin(), labels.end(), r.label) == labels.end()) labels.push_back(r.label);
    im.stats = std::make_unique<HttpStats>(labels);
    for (auto& r : im.routes) r.stat_index = im.stats->handler_index(r.label);

    im.pool = std::make_unique<WorkerPool>(static_cast<size_t>(im.opts.threads),
                                           static_cast<size_t>(im.opts.reserved_threads),
                                           im.opts.max_queued_connections);
    im.front = std::make_unique<FrontEnd>(
        im.opts, im.listener, *im.stats, im.log,
        [&im](GatedRequest&& r) {
            if (im.serve_on_front_end(r)) {
                im.serve(r);
                return true;
            }
            auto req = std::make_shared<GatedRequest>(std::move(r));
            const bool priority = req->priority && im.credentials_known(req->bytes);
            return im.pool->submit([&im, req] { im.serve(*req); }, priority);
        },
        im.web.get());
    im.front->set_allow_for([&im](std::string_view head) -> std::optional<std::vector<std::string>> {
        if (!im.credentials_known(head)) return std::nullopt;  // credentials not known: 401
        return im.methods_for(request_path(head));
    });
    im.front->start();
    im.metrics.start();
    im.log->info("api: listening on {}:{} ({}{})", im.opts.host, im.port, im.web->tls() ? "HTTPS" : "HTTP",
                 im.web->current()->auth->enabled() ? ", basic auth" : "");
}

void ApiServer::stop() {
    auto& im = *impl_;
    if (im.front) {
        // Connections first (a slow client is cut off now, not at its deadline), then the
        // workers, which finish the handler they are in; their answers are dropped.
        im.front->stop();
        im.pool->stop();
        im.front.reset();
        im.pool.reset();
        im.metrics.stop();
        im.log->info("api: stopped");
    }
    if (im.listener >= 0) ::close(im.listener);
    im.listener = -1;
}

}  // namespace rocewatch::api
