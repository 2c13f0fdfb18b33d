// epoll loop with per-connection deadlines: accept, gate, buffer, dispatch, write, linger, close.
#include "api/front_end.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <unordered_map>
#include <vector>

#include "util/http_text.hpp"
#include "api/http_wire.hpp"
#include "api/request_gate.hpp"
#include "util/clock.hpp"
#include "util/log_safe.hpp"
#include "tls/openssl.hpp"
#include "util/thread_name.hpp"

namespace rocewatch::api {

RW_USING_OPENSSL

namespace {

using namespace std::chrono_literals;

constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;
// After a close we read and discard what the client still sends for this long, so the
// close does not become a reset that destroys the answer before the client reads it.
constexpr auto kLinger = 250ms;
constexpr size_t kLingerBytes = 256u << 10;

enum class State {
    handshake,  // TLS: the handshake has not finished
    head,       // reading a request head (or waiting, idle, for the next one)
    body,       // head accepted, reading Content-Length bytes
    busy,       // a worker has the request
    writing,    // sending the answer
    draining,   // answer sent and our side shut: discarding input until EOF or kLinger
};

struct Conn {
    int fd = -1;
    SSL* ssl = nullptr;  // TLS: owned, freed by close_conn
    uint64_t id = 0;
    std::string source;  // remote address: the per-source cap's key
    int remote_port = -1;
    std::string local_ip;
    int local_port = -1;
    State state = State::head;
    std::string in;
    HeadCheck head;       // State::body: the accepted head
    bool recheck = true;  // State::head: new bytes may change the verdict
    std::string out;
    size_t out_off = 0;
    std::string unsent;  // the part of a "100 Continue" the socket did not take: sent first
    bool close_after = false;
    unsigned served = 0;                    // answers written on this connection
    SteadyClock::time_point waiting_since;  // start of the current wait for a request (eviction order)
    SteadyClock::time_point deadline = SteadyClock::time_point::max();
    uint32_t interest = 0;
    size_t drained = 0;
};

struct Completion {
    uint64_t ticket;
    std::string response;
    bool close;
};

}  // namespace

struct FrontEnd::Impl {
    Impl(const ApiOptions& o, int lfd, HttpStats& s, std::shared_ptr<spdlog::logger> l, Dispatch d, WebGuard* w)
        : opts(o), listen_fd(lfd), stats(s), log(std::move(l)), dispatch(std::move(d)), web(w) {}

    const ApiOptions opts;
    const int listen_fd;
    HttpStats& stats;
    std::shared_ptr<spdlog::logger> log;
    Dispatch dispatch;
    WebGuard* web;  // null or without TLS: plain HTTP
    FrontEnd::AllowFor allow_for;

    int epfd = -1;
    int wakefd = -1;
    std::thread thread;
    std::atomic<bool> stopping{false};

    std::mutex done_mu;
    std::vector<Completion> done;
    // The front end's own thread, and whether it completed a request itself (served on the
    // spot, a scrape from the prerendered cache): those answers are written at the end of the
    // loop's turn, without the eventfd's write, epoll_wait and read a worker's answer needs.
    std::atomic<std::thread::id> front_thread{};
    bool completed_here = false;

    std::unordered_map<uint64_t, Conn> conns;
    std::unordered_map<std::string, size_t> per_source;
    uint64_t next_id = 2;
    SteadyClock::time_point next_deadline = SteadyClock::time_point::max();
    SteadyClock::time_point accept_paused_until = SteadyClock::time_point::min();
    bool accept_armed = true;

    void run();
    void wake();
    void on_wake();
    void write_completed();
    void accept_ready(SteadyClock::time_point now);
    void admit(int fd, const sockaddr_storage& ss, SteadyClock::time_point now);
    bool make_room(SteadyClock::time_point now);
    void refuse_at_once(int fd, const std::string& why);
    void on_event(Conn& c, uint32_t events, SteadyClock::time_point now);
    void handshake(Conn& c, SteadyClock::time_point now);
    ssize_t conn_recv(Conn& c, char* buf, size_t n);
    ssize_t conn_send(Conn& c, const char* buf, size_t n);
    void send_now(Conn& c, const std::string& bytes);
    void read_ready(Conn& c, SteadyClock::time_point now);
    void advance(Conn& c, SteadyClock::time_point now);
    static void skip_blank_lines(Conn& c);
    void maybe_continue(Conn& c);
    [[nodiscard]] bool advance_alive(Conn& c, SteadyClock::time_point now);
    void hand_over(Conn& c, size_t need, SteadyClock::time_point now);
    void reject(Conn& c, const HeadCheck& why, SteadyClock::time_point now);
    std::string answer_headers() const;
    void begin_write(Conn& c, std::string bytes, bool close, SteadyClock::time_point now);
    void write_ready(Conn& c, SteadyClock::time_point now);
    void after_write(Conn& c, SteadyClock::time_point now);
    void drain(Conn& c);
    void sweep(SteadyClock::time_point now);
    void expire(Conn& c, SteadyClock::time_point now);
    void set_deadline(Conn& c, SteadyClock::time_point d);
    void set_interest(Conn& c, uint32_t ev);
    void close_conn(uint64_t id);
    void close_all();
};

FrontEnd::FrontEnd(const ApiOptions& opts, int listen_fd, HttpStats& stats, std::shared_ptr<spdlog::logger> log,
                   Dispatch dispatch, WebGuard* web)
    : impl_(std::make_unique<Impl>(opts, listen_fd, stats, std::move(log), std::move(dispatch), web)) {
    auto& im = *impl_;
    im.epfd = ::epoll_create1(EPOLL_CLOEXEC);
    im.wakefd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (im.epfd < 0 || im.wakefd < 0) {
        const int err = errno;
        if (im.epfd >= 0) ::close(im.epfd);
        if (im.wakefd >= 0) ::close(im.wakefd);
        throw std::runtime_error(std::string("api: cannot create the event loop: ") + std::strerror(err));
    }
    // accept4 must never block this thread, whoever made the listener.
    ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenTag;
    ::epoll_ctl(im.epfd, EPOLL_CTL_ADD, listen_fd, &ev);
    ev.data.u64 = kWakeTag;
    ::epoll_ctl(im.epfd, EPOLL_CTL_ADD, im.wakefd, &ev);
}

FrontEnd::~FrontEnd() {
    stop();
    ::close(impl_->epfd);
    ::close(impl_->wakefd);
}

void FrontEnd::start() {
    auto& im = *impl_;
    if (im.thread.joinable()) return;
    im.thread = std::thread([&im] {
        name_this_thread("http-front");
        im.run();
    });
}

void FrontEnd::stop() {
    auto& im = *impl_;
    if (!im.thread.joinable()) return;
    im.stopping = true;
    im.wake();
    im.thread.join();
}

void FrontEnd::complete(uint64_t ticket, std::string response, bool close) {
    auto& im = *impl_;
    {
        std::lock_guard lk(im.done_mu);
        im.done.push_back({ticket, std::move(response), close});
    }
    if (std::this_thread::get_id() == im.front_thread.load())
        im.completed_here = true;
    else
        im.wake();
}

void FrontEnd::Impl::wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wakefd, &one, sizeof one);
}

void FrontEnd::Impl::run() {
    front_thread.store(std::this_thread::get_id());
    std::vector<epoll_event> events(256);
    while (!stopping) {
        auto now = SteadyClock::now();
        int timeout_ms = 1000;
        if (next_deadline != SteadyClock::time_point::max())
            timeout_ms = static_cast<int>(
                std::clamp<long long>(std::chrono::ceil<std::chrono::milliseconds>(next_deadline - now).count(), 0,
                                      1000));
        if (!accept_armed) timeout_ms = std::min(timeout_ms, 100);
        const int n = ::epoll_wait(epfd, events.data(), static_cast<int>(events.size()), timeout_ms);
        if (n < 0 && errno != EINTR) {
            log->error("api: epoll_wait failed: {}", std::strerror(errno));
            std::this_thread::sleep_for(10ms);
        }
        now = SteadyClock::now();
        for (int i = 0; i < n; ++i) {
            const uint64_t tag = events[static_cast<size_t>(i)].data.u64;
            if (tag == kListenTag) {
                accept_ready(now);
            } else if (tag == kWakeTag) {
                on_wake();
            } else if (auto it = conns.find(tag); it != conns.end()) {
                on_event(it->second, events[static_cast<size_t>(i)].events, now);
            }
        }
        if (std::exchange(completed_here, false)) write_completed();
        if (now >= next_deadline || !accept_armed) sweep(now);
    }
    close_all();
}

void FrontEnd::Impl::on_wake() {
    uint64_t v = 0;
    [[maybe_unused]] const auto r = ::read(wakefd, &v, sizeof v);
    write_completed();
}

void FrontEnd::Impl::write_completed() {
    std::vector<Completion> batch;
    {
        std::lock_guard lk(done_mu);
        batch.swap(done);
    }
    const auto now = SteadyClock::now();
    for (auto& d : batch) {
        auto it = conns.find(d.ticket);
        // Gone meanwhile (the client hung up, or it was evicted): nothing to write to.
        if (it == conns.end() || it->second.state != State::busy) continue;
        begin_write(it->second, std::move(d.response), d.close, now);
    }
}

// ---------------------------------------------------------------- accepting

void FrontEnd::Impl::accept_ready(SteadyClock::time_point now) {
    for (int i = 0; i < 64; ++i) {  // bounded, so one busy listener cannot starve the rest
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(fd, ss, now);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            // Out of descriptors: free one for the next try, and stop polling the listener
            // for a moment rather than spin on a backlog we cannot take.
            make_room(now);
            log->warn("api: accept failed: {}; pausing accepts for 100 ms", std::strerror(errno));
            accept_paused_until = now + 100ms;
            ::epoll_ctl(epfd, EPOLL_CTL_DEL, listen_fd, nullptr);
            accept_armed = false;
        }
        return;
    }
}

void FrontEnd::Impl::refuse_at_once(int fd, const std::string& why) {
    stats.count_rejected(RejectReason::overload);
    // Over TLS there is no answer before a handshake, which a refused client does not get.
    if (!web || !web->tls()) {
        const std::string r = raw_error_response(503, why);
        [[maybe_unused]] const auto n = ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
}

void FrontEnd::Impl::admit(int fd, const sockaddr_storage& ss, SteadyClock::time_point now) {
    int port = -1;
    std::string source = address_of(ss, port);
    if (auto it = per_source.find(source); it != per_source.end() && it->second >= opts.max_connections_per_source) {
        log->debug("api: refused a connection from {}: {} open from there already", source,
                   opts.max_connections_per_source);
        refuse_at_once(fd, "too many connections from this address");
        return;
    }
    if (conns.size() >= opts.max_connections && !make_room(now)) {
        refuse_at_once(fd, "server busy, retry");
        return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Conn c;
    c.fd = fd;
    c.id = next_id++;
    c.source = std::move(source);
    c.remote_port = port;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) c.local_ip = address_of(local, c.local_port);
    c.waiting_since = now;
    if (web && web->tls()) {
        c.ssl = SSL_new(web->current(now)->tls.get());
        if (!c.ssl || SSL_set_fd(c.ssl, fd) != 1) {
            log->error("api: cannot start TLS on a connection from {}: {}", c.source, tls::openssl_errors());
            if (c.ssl) SSL_free(c.ssl);
            ::close(fd);
            return;
        }
        SSL_set_accept_state(c.ssl);
        c.state = State::handshake;
    }
    ++per_source[c.source];
    auto& ref = conns.emplace(c.id, std::move(c)).first->second;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = ref.id;
    ::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    ref.interest = EPOLLIN;
    set_deadline(ref, now + opts.timeout);
}

// At the total cap, the connection that has waited longest for a request makes room: an
// attacker's idle connections age out first, and a scraper always gets in.
bool FrontEnd::Impl::make_room(SteadyClock::time_point) {
    Conn* oldest = nullptr;
    for (auto& [id, c] : conns)
        if ((c.state == State::head || c.state == State::body) && (!oldest || c.waiting_since < oldest->waiting_since))
            oldest = &c;
    if (!oldest) return false;
    if (!oldest->in.empty() || oldest->served == 0) {
        stats.count_rejected(RejectReason::overload);
        send_now(*oldest, raw_error_response(503, "server busy, retry"));
    }
    close_conn(oldest->id);
    return true;
}

// ---------------------------------------------------------------- reading and gating

void FrontEnd::Impl::on_event(Conn& c, uint32_t events, SteadyClock::time_point now) {
    if (c.state == State::handshake) {
        if (events & (EPOLLERR | EPOLLHUP)) {
            stats.count_rejected(RejectReason::tls_handshake);
            return close_conn(c.id);
        }
        return handshake(c, now);
    }
    if (c.state == State::busy) {
        // Only errors and hang-ups arrive here (no interest while a worker has it).
        if (events & (EPOLLERR | EPOLLHUP)) close_conn(c.id);
        return;
    }
    if (c.state == State::writing) {
        if (events & (EPOLLERR | EPOLLHUP)) return close_conn(c.id);
        return write_ready(c, now);
    }
    if (c.state == State::draining) return drain(c);
    read_ready(c, now);
}

void FrontEnd::Impl::read_ready(Conn& c, SteadyClock::time_point now) {
    char buf[8192];
    // Never hold more than one byte over the head limit (that byte is enough to say 431),
    // and in a body never read past its end: the next pipelined request stays in the kernel.
    const size_t want = c.state == State::body
                            ? c.head.head_bytes + c.head.content_length - c.in.size()
                            : opts.max_header_bytes + 1 - std::min(c.in.size(), opts.max_header_bytes);
    const ssize_t n = conn_recv(c, buf, std::min(sizeof buf, want));
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) return close_conn(c.id);  // closed or reset: nobody to answer
    const bool idle = c.state == State::head && c.in.empty();
    c.recheck = c.recheck || std::memchr(buf, '\n', static_cast<size_t>(n)) != nullptr ||
                c.in.size() + static_cast<size_t>(n) > opts.max_header_bytes;
    c.in.append(buf, static_cast<size_t>(n));
    if (c.state == State::head) skip_blank_lines(c);
    if (idle && !c.in.empty() && c.served > 0) {
        // The first byte of a kept-alive connection's next request: its own deadline starts.
        c.waiting_since = now;
        set_deadline(c, now + opts.timeout);
    }
    if (!c.in.empty() && !advance_alive(c, now)) return;
    // TLS keeps decrypted bytes of a record beyond `want` to itself, where epoll does not
    // see them: read on while it has some and the connection still reads.
    if (c.ssl && SSL_pending(c.ssl) > 0 && (c.state == State::head || c.state == State::body)) read_ready(c, now);
}

// Empty lines before a request line are ignored (RFC 9112 2.2): a client may end a body with
// a CRLF more than its Content-Length, and the request after it was refused. They are not the
// start of a request either: they move no deadline, so a trickle of them keeps no connection.
void FrontEnd::Impl::skip_blank_lines(Conn& c) {
    size_t blank = 0;
    while (std::string_view(c.in).substr(blank, 2) == "\r\n") blank += 2;
    if (blank > 0) c.in.erase(0, blank);
}

// advance(), then whether `c` still exists: a refusal or a 503 that cannot be written (the
// client reset the connection) closes it, and `c` is then freed; nothing may touch it after.
bool FrontEnd::Impl::advance_alive(Conn& c, SteadyClock::time_point now) {
    const uint64_t id = c.id;
    advance(c, now);
    return conns.contains(id);
}

// A client that waits for "100 Continue" before its body (curl does for a POST, up to a
// second) gets it as the head arrives, not once the body is in (which never comes). Only
// to HTTP/1.1 (RFC 9110 10.1.1). What the socket does not take now goes before the answer
// (begin_write): TLS keeps a record it could not send and counts it into the next write.
void FrontEnd::Impl::maybe_continue(Conn& c) {
    const std::string_view head = std::string_view(c.in).substr(0, c.head.head_bytes);
    const std::string_view request_line = head.substr(0, head.find("\r\n"));
    if (!request_line.ends_with(" HTTP/1.1") || !iequals(header_value(head, "Expect"), "100-continue")) return;
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    const ssize_t n = conn_send(c, kContinue.data(), kContinue.size());
    if (n < static_cast<ssize_t>(kContinue.size())) c.unsent = kContinue.substr(n > 0 ? static_cast<size_t>(n) : 0);
}

// Judges what is buffered: rejects, keeps reading, or hands a complete request over.
void FrontEnd::Impl::advance(Conn& c, SteadyClock::time_point now) {
    if (c.state == State::head) {
        if (!c.recheck) return;
        c.recheck = false;
        const auto verdict = check_request_head(c.in, opts);
        if (verdict.verdict == HeadCheck::Verdict::incomplete) return;
        if (verdict.verdict == HeadCheck::Verdict::reject) return reject(c, verdict, now);
        c.head = verdict;
        c.state = State::body;
        if (c.head.content_length > 0 && c.in.size() < c.head.head_bytes + c.head.content_length) maybe_continue(c);
    }
    const size_t need = c.head.head_bytes + c.head.content_length;
    if (c.state == State::body && c.in.size() >= need) hand_over(c, need, now);
}

void FrontEnd::Impl::hand_over(Conn& c, size_t need, SteadyClock::time_point now) {
    GatedRequest r;
    r.ticket = c.id;
    r.bytes = c.in.substr(0, need);
    c.in.erase(0, need);  // a pipelined next request, judged after this answer
    // HTTP/1.0 is served one request a connection (its keep-alive is an extension that
    // clients of this port have no need for).
    r.last = c.served + 1 >= opts.keep_alive_max_requests || stopping ||
             wants_close(header_list(r.bytes, "Connection")) || is_http10(r.bytes);
    r.priority = is_priority_request(r.bytes);
    r.remote_ip = c.source;
    r.remote_port = c.remote_port;
    r.local_ip = c.local_ip;
    r.local_port = c.local_port;
    c.state = State::busy;
    set_interest(c, 0);
    set_deadline(c, SteadyClock::time_point::max());
    if (!dispatch(std::move(r))) {
        stats.count_rejected(RejectReason::overload);
        begin_write(c, raw_error_response(503, "server busy, retry", "", answer_headers()), true, now);
    }
}

void FrontEnd::Impl::reject(Conn& c, const HeadCheck& why, SteadyClock::time_point now) {
    stats.count_rejected(why.reason);
    log->debug("api: rejected a request from {}: {} {} ({})", c.source, why.status, to_string(why.reason),
               log_safe(why.message));
    int status = why.status;
    std::string message = why.message, allow, headers = answer_headers();
    // A method refused before routing: Allow names what the path serves; a path nothing
    // serves is a 404, as it would be for a method we serve. Behind basic auth, only to a
    // client whose credentials are known: the others are asked for them, as routing would.
    const auto methods = status == 405 && allow_for ? allow_for(c.in) : std::vector<std::string>{};
    if (status == 405 && allow_for && !methods) {
        status = 401;
        message = "authentication required (basic auth; see the web config)";
        headers += "WWW-Authenticate: Basic realm=\"rocewatch\", charset=\"UTF-8\"\r\n";
    } else if (status == 405 && allow_for && request_path(c.in) == "*") {
        allow = "GET, HEAD, POST";  // OPTIONS *: the server as a whole, not a path
    } else if (status == 405 && allow_for) {
        const std::string path = request_path(c.in);
        for (const auto& m : *methods) allow += (allow.empty() ? "" : ", ") + m;
        if (methods->empty()) {
            status = 404;
            message = "no such endpoint: " + path + " (GET / lists them)";
        } else {
            message = "method not allowed on " + path + " (allowed: " + allow + ")";
        }
    }
    c.in.clear();
    begin_write(c, raw_error_response(status, message, allow, headers), true, now);
}

// What every routed answer carries (kAnswerHeaders and the web config's, an HSTS header say),
// for the answers the gate gives itself. The web config's names are spelled as its loader
// knows them and its values are one line (web_config.cpp refuses others).
std::string FrontEnd::Impl::answer_headers() const {
    const auto st = web ? web->current() : nullptr;
    const auto set_by_web = [&](std::string_view name) {
        return st && std::ranges::any_of(st->config.headers, [&](const auto& h) { return h.first == name; });
    };
    std::string h;
    for (const auto& [name, value] : kAnswerHeaders)
        if (!set_by_web(name)) h += std::string(name) + ": " + std::string(value) + "\r\n";
    if (st)
        for (const auto& [name, value] : st->config.headers) h += name + ": " + value + "\r\n";
    return h;
}

void FrontEnd::set_allow_for(AllowFor allow_for) { impl_->allow_for = std::move(allow_for); }

// ---------------------------------------------------------------- TLS

void FrontEnd::Impl::handshake(Conn& c, SteadyClock::time_point now) {
    ERR_clear_error();
    const int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
        c.state = State::head;
        set_interest(c, EPOLLIN);
        if (SSL_pending(c.ssl) > 0) read_ready(c, now);
        return;
    }
    const int err = SSL_get_error(c.ssl, r);
    if (err == SSL_ERROR_WANT_READ) return set_interest(c, EPOLLIN);
    if (err == SSL_ERROR_WANT_WRITE) return set_interest(c, EPOLLOUT);
    stats.count_rejected(RejectReason::tls_handshake);
    // Plain HTTP to the HTTPS port: say so in plain HTTP, as Go's servers do, rather than
    // leave the user looking at a reset.
    const bool plain_http = err == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_HTTP_REQUEST;
    log->debug("api: TLS handshake with {} failed: {}", c.source,
               err == SSL_ERROR_SSL ? tls::openssl_errors() : std::string("connection closed"));
    ERR_clear_error();
    if (plain_http) {
        static constexpr std::string_view kPlain =
            "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
            "Client sent an HTTP request to an HTTPS server.\n";
        [[maybe_unused]] const auto n = ::send(c.fd, kPlain.data(), kPlain.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::shutdown(c.fd, SHUT_WR);
    }
    close_conn(c.id);
}

// recv(2)'s contract over either transport: bytes, 0 at the end, or -1 with errno (EAGAIN
// when it would block; TLS that must write first also asks for EPOLLOUT).
ssize_t FrontEnd::Impl::conn_recv(Conn& c, char* buf, size_t n) {
    if (!c.ssl) return ::recv(c.fd, buf, n, 0);
    ERR_clear_error();
    const int r = SSL_read(c.ssl, buf, static_cast<int>(std::min<size_t>(n, 1u << 30)));
    if (r > 0) {
        if (c.interest & EPOLLOUT) set_interest(c, EPOLLIN);
        return r;
    }
    switch (SSL_get_error(c.ssl, r)) {
        case SSL_ERROR_WANT_READ: errno = EAGAIN; return -1;
        case SSL_ERROR_WANT_WRITE:
            set_interest(c, EPOLLIN | EPOLLOUT);
            errno = EAGAIN;
            return -1;
        case SSL_ERROR_ZERO_RETURN: return 0;
        default:
            ERR_clear_error();
            errno = ECONNRESET;
            return -1;
    }
}

ssize_t FrontEnd::Impl::conn_send(Conn& c, const char* buf, size_t n) {
    if (!c.ssl) return ::send(c.fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    ERR_clear_error();
    const int r = SSL_write(c.ssl, buf, static_cast<int>(std::min<size_t>(n, 1u << 30)));
    if (r > 0) return r;
    switch (SSL_get_error(c.ssl, r)) {
        case SSL_ERROR_WANT_WRITE: errno = EAGAIN; return -1;
        case SSL_ERROR_WANT_READ:
            set_interest(c, EPOLLIN);
            errno = EAGAIN;
            return -2;
        default:
            ERR_clear_error();
            errno = EPIPE;
            return -1;
    }
}

// A last word before a close, never waited for: what the socket takes now.
void FrontEnd::Impl::send_now(Conn& c, const std::string& bytes) {
    if (c.state == State::handshake) return;  // no TLS session to speak in
    [[maybe_unused]] const auto n = conn_send(c, bytes.data(), bytes.size());
}

// ---------------------------------------------------------------- writing and closing

void FrontEnd::Impl::begin_write(Conn& c, std::string bytes, bool close, SteadyClock::time_point now) {
    c.state = State::writing;
    c.out = c.unsent.empty() ? std::move(bytes) : std::move(c.unsent) + bytes;
    c.unsent.clear();
    c.out_off = 0;
    c.close_after = close;
    set_deadline(c, now + opts.timeout);
    write_ready(c, now);
}

void FrontEnd::Impl::write_ready(Conn& c, SteadyClock::time_point now) {
    while (c.out_off < c.out.size()) {
        const ssize_t n = conn_send(c, c.out.data() + c.out_off, c.out.size() - c.out_off);
        if (n > 0) {
            c.out_off += static_cast<size_t>(n);
            continue;
        }
        if (n == -2) return;  // TLS must read first; conn_send asked for EPOLLIN
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return set_interest(c, EPOLLOUT);
        return close_conn(c.id);
    }
    after_write(c, now);
}

void FrontEnd::Impl::after_write(Conn& c, SteadyClock::time_point now) {
    ++c.served;
    std::string().swap(c.out);
    if (c.close_after) {
        if (c.ssl) SSL_shutdown(c.ssl);  // close_notify, best effort: the socket is non-blocking
        ::shutdown(c.fd, SHUT_WR);
        c.state = State::draining;
        c.drained = 0;
        set_interest(c, EPOLLIN);
        set_deadline(c, now + kLinger);
        return;
    }
    c.state = State::head;
    c.recheck = true;
    c.waiting_since = now;
    skip_blank_lines(c);
    set_interest(c, EPOLLIN);
    // An idle kept-alive connection may wait keep_alive_timeout for its next request; once
    // that request has begun, it has `timeout` to finish, as on a new connection.
    set_deadline(c, now + (c.in.empty() ? opts.keep_alive_timeout : opts.timeout));
    if (!c.in.empty() && !advance_alive(c, now)) return;
    if (c.ssl && SSL_pending(c.ssl) > 0 && c.state == State::head) read_ready(c, now);
}

void FrontEnd::Impl::drain(Conn& c) {
    char sink[4096];
    for (;;) {
        const ssize_t n = ::recv(c.fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) {
            c.drained += static_cast<size_t>(n);
            if (c.drained < kLingerBytes) continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        return close_conn(c.id);
    }
}

void FrontEnd::Impl::sweep(SteadyClock::time_point now) {
    if (!accept_armed && now >= accept_paused_until) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = kListenTag;
        ::epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);
        accept_armed = true;
    }
    std::vector<uint64_t> expired;
    next_deadline = SteadyClock::time_point::max();
    for (auto& [id, c] : conns) {
        if (c.deadline <= now)
            expired.push_back(id);
        else
            next_deadline = std::min(next_deadline, c.deadline);
    }
    for (uint64_t id : expired)
        if (auto it = conns.find(id); it != conns.end()) expire(it->second, now);
}

void FrontEnd::Impl::expire(Conn& c, SteadyClock::time_point now) {
    if (c.state == State::handshake) {
        stats.count_rejected(RejectReason::tls_handshake);
        return close_conn(c.id);
    }
    const bool mid_request = c.state == State::body || (c.state == State::head && (!c.in.empty() || c.served == 0));
    if (!mid_request) return close_conn(c.id);  // idle keep-alive over, stuck writer, or linger over
    HeadCheck why;
    why.reason = RejectReason::timeout;
    why.status = 408;
    why.message = (c.state == State::body ? "request body" : "request head") + std::string(" not complete within ") +
                  std::to_string((c.served == 0 || !c.in.empty() ? opts.timeout : opts.keep_alive_timeout).count()) +
                  " ms";
    reject(c, why, now);
}

void FrontEnd::Impl::set_deadline(Conn& c, SteadyClock::time_point d) {
    c.deadline = d;
    next_deadline = std::min(next_deadline, d);
}

void FrontEnd::Impl::set_interest(Conn& c, uint32_t ev) {
    if (c.interest == ev) return;
    epoll_event e{};
    e.events = ev;
    e.data.u64 = c.id;
    ::epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &e);
    c.interest = ev;
}

void FrontEnd::Impl::close_conn(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    auto& c = it->second;
    ::epoll_ctl(epfd, EPOLL_CTL_DEL, c.fd, nullptr);
    if (c.ssl) SSL_free(c.ssl);
    ::close(c.fd);
    if (auto s = per_source.find(c.source); s != per_source.end() && --s->second == 0) per_source.erase(s);
    conns.erase(it);
}

void FrontEnd::Impl::close_all() {
    std::vector<uint64_t> ids;
    ids.reserve(conns.size());
    for (const auto& [id, c] : conns) ids.push_back(id);
    for (uint64_t id : ids) {
        auto& c = conns.at(id);
        // A request a worker has not answered yet is lost to the stop: say so.
        if (c.state == State::busy) stats.count_rejected(RejectReason::shutting_down);
        ::shutdown(c.fd, SHUT_RDWR);
        close_conn(id);
    }
}

}  // namespace rocewatch::api
