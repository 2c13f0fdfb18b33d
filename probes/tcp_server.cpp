// The probe data port: a cheap acceptor and one epoll loop for handshakes; a granted session
// (echo or sink) leaves the loop for a thread of its own (tcp_workers.hpp).
//
// Every connection is accepted at once and sent a challenge (a fresh nonce), and its handshake
// deadline counts from then; its request must prove the token over that nonce (an HMAC), so
// the token never crosses the wire and a request seen on it opens no later session. One
// that has not sent its request yet holds no session slot: sessions are admitted only
// after the token checks out. Waiting connections are capped in all and per source
// address; at a cap the oldest waiting one (from the address holding the most) is closed
// to make room, so a flood of idle connections costs its sender its own slots and never
// the slot a real probe needs.
#include "probes/tcp_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/logger.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "probes/budget.hpp"
#include "probes/errors.hpp"
#include "probes/hmac.hpp"
#include "probes/tcp_workers.hpp"
#include "probes/tcp_socket.hpp"
#include "util/thread_name.hpp"

namespace rocewatch {

namespace {

using namespace tcpsock;
using tcpserver::Counters;
using tcpserver::SessionWorkers;

struct Session {
    enum class Phase { handshake, sink, echo, closing };

    Fd fd;
    std::string peer;    // "addr:port" for logs
    std::string source;  // the address alone: what the per-source cap counts
    Phase phase = Phase::handshake;
    tcpwire::Challenge challenge;  // sent on accept; the request's mac is over its nonce
    std::array<uint8_t, tcpwire::kRequestSize> hdr{};
    size_t hdr_got = 0;
    std::vector<uint8_t> out;  // pending write; nothing is read while it is non-empty
    size_t out_off = 0;
    Phase after_out = Phase::closing;
    tcpwire::Reply grant;
    SteadyClock::time_point deadline{};  // end of handshake, then end of the grant + grace
    SteadyClock::time_point last_progress{};
    bool dead = false;
    bool pending = false;       // accepted, request not yet granted: counted by the caps
    bool data_session = false;  // counted against max_sessions
    ProbeBudget::Bulk bulk;     // a sink session: bulk moves through this node (the worker holds it on)
    uint32_t events = 0;        // what epoll watches for now
};

// One run of the server thread: from start() until the stop eventfd fires.
class DataPortLoop {
public:
    DataPortLoop(int listen_fd, int stop_fd, const ProbeToken& token, const TcpServerLimits& limits, Counters& counters,
                 std::shared_ptr<spdlog::logger> log)
        : listen_fd_(listen_fd),
          stop_fd_(stop_fd),
          token_(token),
          limits_(limits),
          counters_(counters),
          log_(std::move(log)),
          handshake_timeout_(from_seconds(limits.handshake_timeout_seconds)),
          idle_timeout_(from_seconds(limits.idle_timeout_seconds)),
          grace_(from_seconds(limits.grace_seconds)),
          max_session_(from_seconds(limits.max_session_seconds)),
          workers_(counters, log_, idle_timeout_, limits.budget) {
        limits_.max_pending = std::max<uint32_t>(limits_.max_pending, 1);
        limits_.max_pending_per_source = std::max<uint32_t>(limits_.max_pending_per_source, 1);
    }
    ~DataPortLoop() {
        close_sessions();
        workers_.stop_all();
    }

    void run();

private:
    bool register_fds();
    int wait_ms();
    bool serve_events(int n);
    void on_ready(Session& s, uint32_t revents);
    // ---- accept and admission
    void accept_ready();
    void admit(Fd fd, const sockaddr_storage& peer);
    void make_room(const std::string& source);
    void drop_oldest_pending(const std::string& source);
    std::string busiest_source() const;
    // ---- handshake and sessions
    bool on_handshake(Session& s);
    bool grant(Session& s, const tcpwire::Request& req);
    void hand_over(Session& s);
    uint32_t data_sessions() const;
    // ---- output
    bool flush(Session& s);
    bool queue(Session& s, const uint8_t* p, size_t n, Session::Phase next);
    bool refuse(Session& s, tcpwire::Code code);
    // ---- endings
    void expire();
    void close(Session& s);
    void leave_pending(Session& s);
    void sweep();
    void close_sessions();
    bool ctl(int op, int fd, uint32_t events, void* tag) const;
    void sync_interest(Session& s);

    int listen_fd_;
    int stop_fd_;
    const ProbeToken& token_;
    TcpServerLimits limits_;
    Counters& counters_;
    std::shared_ptr<spdlog::logger> log_;
    // Wrong tokens are logged at most once per kAuthLogEvery: anyone who reaches the port can
    // present one, and each was a warning line. The stats count every one.
    static constexpr std::chrono::seconds kAuthLogEvery{10};
    std::optional<SteadyClock::time_point> auth_logged_;
    uint64_t auth_unlogged_ = 0;
    SteadyClock::duration handshake_timeout_;
    SteadyClock::duration idle_timeout_;
    SteadyClock::duration grace_;
    SteadyClock::duration max_session_;
    SessionWorkers workers_;
    Fd ep_;
    std::vector<std::unique_ptr<Session>> sessions_;  // in accept order: the oldest first
    std::unordered_map<std::string, uint32_t> pending_by_source_;
    uint32_t pending_total_ = 0;
    SteadyClock::time_point accept_paused_until_{};
    bool listening_ = true;
    // The stop eventfd and the listening socket are told apart from sessions by address.
    int stop_tag_ = 0;
    int listen_tag_ = 0;
};

bool DataPortLoop::ctl(int op, int fd, uint32_t events, void* tag) const {
    epoll_event e{};
    e.events = events;
    e.data.ptr = tag;
    return ::epoll_ctl(ep_.get(), op, fd, &e) == 0;
}

void DataPortLoop::sync_interest(Session& s) {
    const uint32_t want = s.out.empty() ? EPOLLIN : EPOLLOUT;
    if (want != s.events && ctl(EPOLL_CTL_MOD, s.fd.get(), want, &s)) s.events = want;
}

// epoll rather than poll: registrations persist, nothing is rebuilt per wake-up.
bool DataPortLoop::register_fds() {
    ep_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (ep_.valid() && ctl(EPOLL_CTL_ADD, stop_fd_, EPOLLIN, &stop_tag_) &&
        ctl(EPOLL_CTL_ADD, listen_fd_, EPOLLIN, &listen_tag_))
        return true;
    if (log_) log_->error("probe port: epoll setup: {}", std::strerror(errno));
    return false;
}

void DataPortLoop::run() {
    if (!register_fds()) return;
    std::vector<epoll_event> events(64);
    for (;;) {
        const int n = ::epoll_wait(ep_.get(), events.data(), static_cast<int>(events.size()), wait_ms());
        if (n < 0 && errno != EINTR) {
            if (log_) log_->error("probe port: epoll_wait failed: {}", std::strerror(errno));
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        bool stop = false;
        try {
            bool accept_now = false;
            for (int i = 0; i < n; ++i) {
                const epoll_event& e = events[static_cast<size_t>(i)];
                if (e.data.ptr == &stop_tag_)
                    stop = true;
                else if (e.data.ptr == &listen_tag_)
                    accept_now = true;
                else
                    on_ready(*static_cast<Session*>(e.data.ptr), e.events);
            }
            if (stop) break;
            workers_.reap();
            expire();
            if (accept_now) accept_ready();
            sweep();
        } catch (const std::exception& e) {
            // bad_alloc and the like: drop every session rather than the server.
            if (log_) log_->error("probe port: {}; closing {} sessions", e.what(), sessions_.size());
            close_sessions();
        }
    }
}

// Until the earliest session deadline (at most a second), and the accept pause.
int DataPortLoop::wait_ms() {
    const auto now = SteadyClock::now();
    auto wake = now + std::chrono::seconds(1);
    for (const auto& s : sessions_) wake = std::min({wake, s->deadline, s->last_progress + idle_timeout_});
    const bool want_listen = now >= accept_paused_until_;
    if (want_listen != listening_ && ctl(EPOLL_CTL_MOD, listen_fd_, want_listen ? uint32_t{EPOLLIN} : 0u, &listen_tag_))
        listening_ = want_listen;
    if (!want_listen) wake = std::min(wake, accept_paused_until_);
    const auto wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wake - now).count();
    return wait_ns <= 0 ? 0 : static_cast<int>((wait_ns + 999'999) / 1'000'000);
}

void DataPortLoop::on_ready(Session& s, uint32_t revents) {
    if (s.dead) return;
    bool alive = true;
    if (!s.out.empty())
        alive = (revents & EPOLLERR) == 0 && flush(s);
    else if (s.phase == Session::Phase::handshake)
        alive = on_handshake(s);
    else
        alive = false;
    if (!alive) {
        close(s);
    } else if ((s.phase == Session::Phase::echo || s.phase == Session::Phase::sink) && s.out.empty()) {
        // The EPOLL_CTL_DEL keeps a late event from reaching the moved-out session.
        (void)ctl(EPOLL_CTL_DEL, s.fd.get(), 0, &s);
        hand_over(s);
    } else {
        sync_interest(s);
    }
}

// ---------------------------------------------------------------- accept and admission

void DataPortLoop::accept_ready() {
    // A batch per wake-up keeps sessions served while a flood knocks; epoll says again.
    for (int i = 0; i < 256; ++i) {
        sockaddr_storage peer{};
        socklen_t plen = sizeof peer;
        const int c = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) return;
            // Out of fds or memory: back off instead of spinning on a readable socket.
            if (log_) log_->warn("probe port: accept: {}", std::strerror(errno));
            accept_paused_until_ = SteadyClock::now() + std::chrono::milliseconds(100);
            return;
        }
        admit(Fd(c), peer);
    }
}

void DataPortLoop::admit(Fd fd, const sockaddr_storage& peer) {
    auto s = std::make_unique<Session>();
    s->source = host_string(peer);
    make_room(s->source);
    s->fd = std::move(fd);
    s->peer = endpoint_string(peer);
    // A nonce no earlier connection had: a request copied off the wire proves nothing here.
    if (::getrandom(s->challenge.nonce.data(), s->challenge.nonce.size(), GRND_NONBLOCK) !=
        static_cast<ssize_t>(s->challenge.nonce.size())) {
        if (log_) log_->warn("probe port: no random nonce for {}: {}", s->peer, std::strerror(errno));
        return;  // s closes the connection
    }
    s->last_progress = SteadyClock::now();
    s->deadline = s->last_progress + handshake_timeout_;
    s->events = EPOLLIN;
    if (!ctl(EPOLL_CTL_ADD, s->fd.get(), EPOLLIN, s.get())) {
        if (log_) log_->warn("probe port: epoll_ctl add: {}", std::strerror(errno));
        return;  // s closes the connection
    }
    s->pending = true;
    ++pending_total_;
    ++pending_by_source_[s->source];
    ++counters_.connections;
    ++counters_.active;
    Session& ref = *s;
    sessions_.push_back(std::move(s));
    // The challenge fits an empty socket's buffer: it goes out now, and the request follows.
    const auto c = tcpwire::encode(ref.challenge);
    if (!queue(ref, c.data(), c.size(), Session::Phase::handshake))
        close(ref);
    else
        sync_interest(ref);
}

void DataPortLoop::make_room(const std::string& source) {
    if (auto it = pending_by_source_.find(source);
        it != pending_by_source_.end() && it->second >= limits_.max_pending_per_source)
        drop_oldest_pending(source);
    if (pending_total_ >= limits_.max_pending) drop_oldest_pending(busiest_source());
}

std::string DataPortLoop::busiest_source() const {
    auto most = pending_by_source_.begin();
    for (auto it = pending_by_source_.begin(); it != pending_by_source_.end(); ++it)
        if (it->second > most->second) most = it;
    return most == pending_by_source_.end() ? std::string() : most->first;
}

void DataPortLoop::drop_oldest_pending(const std::string& source) {
    for (auto& s : sessions_) {
        if (s->dead || !s->pending || s->source != source) continue;
        ++counters_.dropped;
        if (log_) log_->debug("probe port: closing {} to make room (no request yet)", s->peer);
        close(*s);
        return;
    }
}

// ---------------------------------------------------------------- handshake and sessions

bool DataPortLoop::on_handshake(Session& s) {
    const ssize_t n = ::recv(s.fd.get(), s.hdr.data() + s.hdr_got, s.hdr.size() - s.hdr_got, MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    if (n == 0) return false;
    s.hdr_got += static_cast<size_t>(n);
    if (s.hdr_got < s.hdr.size()) return true;
    const auto req = tcpwire::decode_request(s.hdr.data(), s.hdr.size());
    if (!req) {
        ++counters_.bad_requests;
        if (log_) log_->debug("probe port: {} is not speaking the probe protocol", s.peer);
        return false;
    }
    if (req->version != tcpwire::kVersion) {
        ++counters_.bad_requests;
        return refuse(s, tcpwire::Code::unsupported_version);
    }
    const auto want = tcpwire::request_mac(token_, s.challenge, *req);
    if (!want || !token_equal(*want, req->mac)) {
        ++counters_.auth_refused;
        const auto now = SteadyClock::now();
        if (log_ && (!auth_logged_ || now - *auth_logged_ >= kAuthLogEvery)) {
            if (auth_unlogged_ > 0)
                log_->warn("probe port: {} presented a wrong token ({} more refused since the last such line)", s.peer,
                           auth_unlogged_);
            else
                log_->warn("probe port: {} presented a wrong token", s.peer);
            auth_logged_ = now;
            auth_unlogged_ = 0;
        } else {
            ++auth_unlogged_;
        }
        return refuse(s, tcpwire::Code::auth_refused);
    }
    const bool echo = req->mode == tcpwire::Mode::echo;
    if ((!echo && req->mode != tcpwire::Mode::sink) ||
        (echo && (req->message_size == 0 || req->message_size > limits_.max_message_size))) {
        ++counters_.bad_requests;
        return refuse(s, tcpwire::Code::bad_request);
    }
    // An echo through a queue of bandwidth-probe bulk measures the queue: busy, so the prober
    // tries again in a few seconds (ProbeScheduler::kBusyRetry).
    if (echo && limits_.budget && limits_.budget->moving_bulk()) {
        ++counters_.busy;
        if (log_) log_->debug("probe port: {} refused an echo session: a bandwidth probe's bulk is moving", s.peer);
        return refuse(s, tcpwire::Code::busy);
    }
    if (data_sessions() >= limits_.max_sessions) {
        ++counters_.busy;
        return refuse(s, tcpwire::Code::busy);
    }
    if (limits_.budget)
        if (auto why = limits_.budget->admit(BudgetSide::peer)) {
            ++counters_.busy;
            if (log_) log_->debug("probe port: {} refused: {}", s.peer, *why);
            return refuse(s, tcpwire::Code::busy);
        }
    return grant(s, *req);
}

// The request checked out: the connection becomes a data session within the grant.
bool DataPortLoop::grant(Session& s, const tcpwire::Request& req) {
    const bool echo = req.mode == tcpwire::Mode::echo;
    s.grant.code = tcpwire::Code::ok;
    s.grant.duration_ms = std::min<uint32_t>(req.duration_ms,
                                             to_ms(echo ? limits_.max_echo_seconds : limits_.max_session_seconds));
    s.grant.max_bytes = std::min(req.max_bytes, limits_.max_bytes_per_session);
    s.grant.message_size = echo ? req.message_size : 0;
    leave_pending(s);
    s.data_session = true;
    s.deadline = SteadyClock::now() + std::chrono::milliseconds(s.grant.duration_ms) +
                 from_seconds(limits_.grace_seconds);
    if (echo)
        set_int_opt(s.fd.get(), IPPROTO_TCP, TCP_NODELAY, 1);
    else if (limits_.budget)
        s.bulk = limits_.budget->bulk();
    ++counters_.sessions;
    if (log_)
        log_->debug("probe port: {} {} session, {} ms, {} bytes", s.peer, tcpwire::to_string(req.mode),
                    s.grant.duration_ms, s.grant.max_bytes);
    const auto b = tcpwire::encode(s.grant);
    const bool alive = queue(s, b.data(), b.size(), echo ? Session::Phase::echo : Session::Phase::sink);
    // Answering the request within the delayed-ACK timeout put the socket in interactive
    // ("pingpong") mode, in which the kernel holds ACKs back to ride on replies that a sink
    // never sends; the sender, short of ACKs, sent in paced bursts from a full send queue.
    // Leaving that mode took four streams over veth from 0.70 of iperf3 -P 4 to par (issue 14).
    if (!echo) set_int_opt(s.fd.get(), IPPROTO_TCP, TCP_QUICKACK, 1);
    return alive;
}

// The reply is out: the session leaves the event loop for its own thread.
void DataPortLoop::hand_over(Session& s) {
    s.dead = true;
    s.data_session = false;
    if (s.phase == Session::Phase::sink)
        workers_.start_sink(std::move(s.fd), s.peer, s.grant, {s.deadline, grace_, max_session_}, std::move(s.bulk));
    else
        workers_.start_echo(std::move(s.fd), s.peer, s.grant, s.deadline);
}

uint32_t DataPortLoop::data_sessions() const {
    return workers_.live() + static_cast<uint32_t>(std::count_if(sessions_.begin(), sessions_.end(), [](const auto& s) {
               return s->data_session && !s->dead;
           }));
}

// ---------------------------------------------------------------- output

// Writes what is queued; false when the session is finished or broken.
bool DataPortLoop::flush(Session& s) {
    while (s.out_off < s.out.size()) {
        const ssize_t w = ::send(s.fd.get(), s.out.data() + s.out_off, s.out.size() - s.out_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            s.out_off += static_cast<size_t>(w);
            s.last_progress = SteadyClock::now();
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) return true;
        return false;
    }
    s.out.clear();
    s.out_off = 0;
    s.phase = s.after_out;
    return s.phase != Session::Phase::closing;
}

bool DataPortLoop::queue(Session& s, const uint8_t* p, size_t n, Session::Phase next) {
    s.out.assign(p, p + n);
    s.out_off = 0;
    s.after_out = next;
    return flush(s);
}

bool DataPortLoop::refuse(Session& s, tcpwire::Code code) {
    tcpwire::Reply rep;
    rep.code = code;
    const auto b = tcpwire::encode(rep);
    (void)queue(s, b.data(), b.size(), Session::Phase::closing);
    // Closed whether or not the 24 bytes went out: a refused peer gets no second chance.
    return false;
}

// ---------------------------------------------------------------- endings

// Handshake timeout (from accept), end of a grant whose reply is still going out, idleness.
void DataPortLoop::expire() {
    const auto now = SteadyClock::now();
    for (auto& sp : sessions_) {
        Session& s = *sp;
        if (s.dead) continue;
        const bool over_time = now >= s.deadline;
        const bool idle = now >= s.last_progress + idle_timeout_;
        if (!over_time && !idle) continue;
        ++counters_.cut;
        if (log_)
            log_->debug("probe port: closing {} ({})", s.peer,
                        s.phase == Session::Phase::handshake ? "no request in time"
                                                             : (over_time ? "grant expired" : "idle"));
        close(s);
    }
}

void DataPortLoop::close(Session& s) {
    if (s.dead) return;
    s.dead = true;
    s.bulk.reset();
    leave_pending(s);
}

void DataPortLoop::leave_pending(Session& s) {
    if (!s.pending) return;
    s.pending = false;
    --pending_total_;
    if (auto it = pending_by_source_.find(s.source); it != pending_by_source_.end() && --it->second == 0)
        pending_by_source_.erase(it);
}

// Closing the fd drops it from the epoll set. A session handed to a worker has no fd
// left here and stays active until its worker ends.
void DataPortLoop::sweep() {
    std::erase_if(sessions_, [this](const auto& s) {
        if (!s->dead) return false;
        if (s->fd.valid()) --counters_.active;
        return true;
    });
}

void DataPortLoop::close_sessions() {
    for (auto& s : sessions_) close(*s);
    sweep();
}

}  // namespace

// ---------------------------------------------------------------- the server

std::unique_ptr<TcpProbeServer> TcpProbeServer::create(const std::string& bind_addr, uint16_t port,
                                                       const ProbeToken& token, TcpServerLimits limits,
                                                       std::shared_ptr<spdlog::logger> log) {
    // "" and "::" listen on every address: IPv6 any with dual stack, IPv4 any where IPv6 is off.
    const bool every = bind_addr.empty() || bind_addr == "::" || bind_addr == "[::]";
    std::optional<Endpoint> ep = numeric_endpoint(every ? "::" : bind_addr, port);
    if (!ep) throw std::runtime_error("probe data port: not a numeric address: '" + bind_addr + "'");
    // Every handshake needs the HMAC: a data port that could not check one is not opened.
    if (auto why = load_hmac()) throw std::runtime_error("probe data port: " + *why);
    Fd fd(::socket(ep->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid() && every && errno == EAFNOSUPPORT) {
        ep = numeric_endpoint("0.0.0.0", port);
        fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    }
    if (!fd.valid()) throw std::runtime_error(errno_detail("probe data port: socket", errno));
    set_int_opt(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1);
    if (ep->family() == AF_INET6) set_int_opt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, every ? 0 : 1);
    if (limits.socket_buffer_bytes > 0) {
        set_int_opt(fd.get(), SOL_SOCKET, SO_RCVBUF, limits.socket_buffer_bytes);
        set_int_opt(fd.get(), SOL_SOCKET, SO_SNDBUF, limits.socket_buffer_bytes);
    }
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ep->addr), ep->len) != 0)
        throw std::runtime_error(errno_detail("probe data port: bind " + endpoint_string(ep->addr), errno));
    if (::listen(fd.get(), 128) != 0) throw std::runtime_error(errno_detail("probe data port: listen", errno));
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0)
        throw std::runtime_error(errno_detail("probe data port: getsockname", errno));
    const uint16_t actual = bound.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                                                       : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    Fd efd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!efd.valid()) throw std::runtime_error(errno_detail("probe data port: eventfd", errno));
    std::unique_ptr<TcpProbeServer> s(
        new TcpProbeServer(fd.release(), efd.release(), actual, token, limits, std::move(log)));
    if (s->log_) s->log_->info("probe data port listening on {}", endpoint_string(bound));
    return s;
}

TcpProbeServer::TcpProbeServer(int listen_fd, int stop_fd, uint16_t port, const ProbeToken& token,
                               TcpServerLimits limits, std::shared_ptr<spdlog::logger> log)
    : listen_fd_(listen_fd), stop_fd_(stop_fd), port_(port), token_(token), limits_(limits), log_(std::move(log)) {}

TcpProbeServer::~TcpProbeServer() {
    stop();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
}

void TcpProbeServer::start() {
    std::lock_guard lk(lifecycle_mutex_);
    if (thread_.joinable()) return;
    uint64_t drain = 0;
    while (::read(stop_fd_, &drain, sizeof drain) > 0) {
    }
    thread_ = std::thread([this] {
        name_this_thread("data-port");
        DataPortLoop loop(listen_fd_, stop_fd_, token_, limits_, counters_, log_);
        loop.run();
    });
}

void TcpProbeServer::stop() {
    std::lock_guard lk(lifecycle_mutex_);
    if (!thread_.joinable()) return;
    const uint64_t one = 1;
    while (::write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
    thread_.join();
}

TcpProbeServer::Stats TcpProbeServer::stats() const {
    Stats s;
    s.connections = counters_.connections.load();
    s.sessions = counters_.sessions.load();
    s.auth_refused = counters_.auth_refused.load();
    s.busy = counters_.busy.load();
    s.bad_requests = counters_.bad_requests.load();
    s.cut = counters_.cut.load();
    s.dropped = counters_.dropped.load();
    s.bytes_received = counters_.bytes_received.load();
    s.bytes_echoed = counters_.bytes_echoed.load();
    s.active = counters_.active.load();
    return s;
}

}  // namespace rocewatch
