// Event thread and dump logic behind NetlinkWatcher: rtnetlink events trigger a re-dump.
#include "daemon/netlink/watcher.hpp"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <poll.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "daemon/netlink/parse.hpp"
#include "util/clock.hpp"
#include "util/thread_name.hpp"

namespace rocewatch {
namespace {

using std::chrono::milliseconds;

// Large enough that an `ip -batch` of thousands of address changes, or every VF of a
// SR-IOV NIC flapping at once, fits before the thread gets to read; ENOBUFS is the
// fallback, not the plan. SO_RCVBUF is capped by net.core.rmem_max, hence SO_RCVBUFFORCE.
constexpr int kEventBufferBytes = 8 * 1024 * 1024;
// A burst (a bond failover, a script configuring many addresses) arrives as many events
// within microseconds of each other: wait for a short quiet gap so one re-dump covers it,
// but never delay the view by more than kMaxCoalesce under a steady stream.
constexpr int kQuietMs = 10;
constexpr milliseconds kMaxCoalesce{100};
// After a failed dump or a socket error: retry this often, never spin.
constexpr int kRetryMs = 1000;
// NLM_F_DUMP_INTR means the tables changed while the kernel was walking them.
constexpr int kMaxDumpAttempts = 3;

struct MsgDeleter {
    void operator()(nl_msg* m) const noexcept { nlmsg_free(m); }
};
struct CbDeleter {
    void operator()(nl_cb* c) const noexcept { nl_cb_put(c); }
};

std::string nl_error(const std::string& what, int err) { return "netlink: " + what + ": " + nl_geterror(err); }

struct DumpResult {
    std::vector<Link> links;
    std::vector<std::pair<int, Address>> addrs;
    size_t skipped = 0;
    std::optional<std::string> error;  // an exception caught inside the C callback
};

// Called by libnl for each message of a dump. Exceptions must not cross libnl's C frames.
int collect(nl_msg* msg, void* arg) noexcept {
    auto* r = static_cast<DumpResult*>(arg);
    try {
        const nlmsghdr* h = nlmsg_hdr(msg);
        if (h->nlmsg_type == RTM_NEWLINK) {
            if (auto l = parse_link_message(h))
                r->links.push_back(std::move(*l));
            else
                ++r->skipped;
        } else if (h->nlmsg_type == RTM_NEWADDR) {
            if (auto a = parse_addr_message(h))
                r->addrs.push_back(std::move(*a));
            else
                ++r->skipped;  // also families we do not report (e.g. MCTP)
        }
        return NL_OK;
    } catch (const std::exception& e) {
        r->error = e.what();
    } catch (...) {
        r->error = "unknown exception while parsing";
    }
    return NL_STOP;
}

// Sends one dump request and collects the answer. Returns false when the kernel flagged
// the dump as interrupted (the data is complete but may mix before/after a change).
bool request_dump(nl_sock* sk, int type, DumpResult& r) {
    const char* what = type == RTM_GETLINK ? "link dump" : "address dump";
    std::unique_ptr<nl_msg, MsgDeleter> msg(nlmsg_alloc_simple(type, NLM_F_REQUEST | NLM_F_DUMP));
    if (!msg) throw std::runtime_error(std::string("netlink: out of memory building ") + what);
    int err = 0;
    if (type == RTM_GETLINK) {
        ifinfomsg hdr{};
        hdr.ifi_family = AF_UNSPEC;
        err = nlmsg_append(msg.get(), &hdr, sizeof hdr, NLMSG_ALIGNTO);
        // We re-dump on every burst of events and never read the counters: leaving out
        // IFLA_STATS/IFLA_STATS64 roughly halves each link message. Kernels that predate
        // the flag ignore it.
        if (err == 0) err = nla_put_u32(msg.get(), IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    } else {
        ifaddrmsg hdr{};
        hdr.ifa_family = AF_UNSPEC;
        err = nlmsg_append(msg.get(), &hdr, sizeof hdr, NLMSG_ALIGNTO);
    }
    if (err < 0) throw std::runtime_error(nl_error(std::string("building ") + what, err));
    if ((err = nl_send_auto(sk, msg.get())) < 0)
        throw std::runtime_error(nl_error(std::string("sending ") + what + " request", err));

    std::unique_ptr<nl_cb, CbDeleter> cb(nl_cb_alloc(NL_CB_DEFAULT));
    if (!cb) throw std::runtime_error("netlink: out of memory allocating callbacks");
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, &collect, &r);
    err = nl_recvmsgs(sk, cb.get());
    if (r.error) throw std::runtime_error("netlink: " + std::string(what) + ": " + *r.error);
    if (err == -NLE_DUMP_INTR) return false;
    if (err < 0) throw std::runtime_error(nl_error(std::string("receiving ") + what, err));
    return true;
}

}  // namespace

void NetlinkWatcher::NlSockDeleter::operator()(nl_sock* s) const noexcept { nl_socket_free(s); }

NetlinkWatcher::NetlinkWatcher(std::shared_ptr<spdlog::logger> log, OnChange on_change)
    : log_(std::move(log)), on_change_(std::move(on_change)) {}

std::unique_ptr<NetlinkWatcher> NetlinkWatcher::create(std::shared_ptr<spdlog::logger> log, OnChange on_change) {
    if (!log) log = std::make_shared<spdlog::logger>("netlink", std::make_shared<spdlog::sinks::null_sink_mt>());
    // Not make_unique: the constructor is private so create() is the only way in.
    std::unique_ptr<NetlinkWatcher> w(new NetlinkWatcher(std::move(log), std::move(on_change)));
    w->open();
    try {
        (void)w->dump();
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("initial netlink dump failed: ") + e.what());
    }
    return w;
}

NetlinkWatcher::~NetlinkWatcher() {
    stop();
    if (stop_fd_ >= 0) ::close(stop_fd_);
}

void NetlinkWatcher::open() {
    auto connect = [](const char* role) {
        NlSockPtr sk(nl_socket_alloc());
        if (!sk) throw std::runtime_error(std::string("netlink: cannot allocate the ") + role + " socket");
        if (int err = nl_connect(sk.get(), NETLINK_ROUTE); err < 0)
            throw std::runtime_error(nl_error(std::string("cannot open the NETLINK_ROUTE ") + role + " socket", err));
        return sk;
    };
    dump_sock_ = connect("dump");

    // Events get their own socket: multicast messages arriving on the dump socket would
    // interleave with dump replies and break libnl's sequence checks.
    event_sock_ = connect("event");
    nl_socket_disable_seq_check(event_sock_.get());
    if (int err = nl_socket_add_memberships(event_sock_.get(), RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
                                            0);
        err < 0)
        throw std::runtime_error(nl_error("cannot subscribe to link/address events", err));
    if (int err = nl_socket_set_nonblocking(event_sock_.get()); err < 0)
        throw std::runtime_error(nl_error("cannot make the event socket non-blocking", err));

    const int fd = nl_socket_get_fd(event_sock_.get());
    if (int err = nl_socket_set_buffer_size(event_sock_.get(), kEventBufferBytes, 0); err < 0)
        log_->warn("netlink: cannot enlarge the event socket buffer: {}", nl_geterror(err));
    // Beyond rmem_max only with CAP_NET_ADMIN; without it we keep what SO_RCVBUF gave.
    int want = kEventBufferBytes;
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
        log_->debug("netlink: SO_RCVBUFFORCE refused ({}), event buffer capped by rmem_max", std::strerror(errno));
    int got = 0;
    socklen_t len = sizeof got;
    if (::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) == 0)
        log_->debug("netlink: event socket receive buffer {} bytes", got);

    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) throw std::runtime_error(std::string("netlink: eventfd failed: ") + std::strerror(errno));
}

std::vector<Link> NetlinkWatcher::dump() {
    std::lock_guard lk(dump_mutex_);
    DumpResult r;
    try {
        for (int attempt = 1;; ++attempt) {
            r = DumpResult{};
            const bool links_ok = request_dump(dump_sock_.get(), RTM_GETLINK, r);
            const bool addrs_ok = request_dump(dump_sock_.get(), RTM_GETADDR, r);
            if (links_ok && addrs_ok) break;
            if (attempt == kMaxDumpAttempts) {
                // Still usable; and the change that interrupted us also sent an event, so
                // the event thread dumps again.
                log_->warn("netlink: dump interrupted by changes {} times in a row; using the last one", attempt);
                break;
            }
        }
    } catch (...) {
        // A failed dump can leave the rest of a multi-part reply queued on the socket,
        // which would poison the next request's sequence check: start over with a new one.
        if (NlSockPtr fresh{nl_socket_alloc()}; fresh && nl_connect(fresh.get(), NETLINK_ROUTE) == 0)
            dump_sock_ = std::move(fresh);
        throw;
    }
    if (r.skipped != 0) log_->debug("netlink: skipped {} unparsable or unsupported messages", r.skipped);

    std::vector<Link> view = assemble_links(std::move(r.links), r.addrs);
    std::lock_guard vl(view_mutex_);
    history_.observe_view(view, Clock::now());
    view_ = view;
    return view;
}

std::vector<LinkEvent> NetlinkWatcher::link_events() const {
    std::lock_guard lk(view_mutex_);
    return history_.events();
}

std::vector<Link> NetlinkWatcher::links() const {
    std::lock_guard lk(view_mutex_);
    return view_;
}

uint64_t NetlinkWatcher::events() const { return events_.load(std::memory_order_relaxed); }
uint64_t NetlinkWatcher::resyncs() const { return resyncs_.load(std::memory_order_relaxed); }

void NetlinkWatcher::set_event_buffer_size_for_testing(int bytes) {
    if (int err = nl_socket_set_buffer_size(event_sock_.get(), bytes, 0); err < 0)
        log_->warn("netlink: cannot set the event socket buffer: {}", nl_geterror(err));
}

void NetlinkWatcher::start() {
    std::lock_guard lk(lifecycle_mutex_);
    if (thread_.joinable()) return;
    uint64_t v = 0;
    while (::read(stop_fd_, &v, sizeof v) > 0) {
    }  // clear a stop request left from an earlier stop()
    thread_ = std::thread([this] {
        name_this_thread("netlink");
        run();
    });
}

void NetlinkWatcher::stop() {
    std::lock_guard lk(lifecycle_mutex_);
    if (!thread_.joinable()) return;
    const uint64_t one = 1;
    if (::write(stop_fd_, &one, sizeof one) != static_cast<ssize_t>(sizeof one))
        log_->error("netlink: cannot signal the event thread to stop: {}", std::strerror(errno));
    if (std::this_thread::get_id() == thread_.get_id()) {
        // Called from on_change(): joining ourselves would deadlock. The thread exits on
        // its next poll and the destructor (or a later stop()) joins it.
        log_->error("netlink: stop() called from the event thread; deferring the join");
        return;
    }
    thread_.join();
}

bool NetlinkWatcher::wait_for_stop(int timeout_ms) const {
    pollfd p{stop_fd_, POLLIN, 0};
    int n = 0;
    do {
        n = ::poll(&p, 1, timeout_ms);
    } while (n < 0 && errno == EINTR);
    return n > 0;
}

bool NetlinkWatcher::drain_events(bool& overrun) {
    const int fd = nl_socket_get_fd(event_sock_.get());
    // Messages are only counted here; the re-dump is what reads the state.
    alignas(nlmsghdr) char buf[32 * 1024];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
            if (errno == ENOBUFS) {  // the kernel dropped events; what is queued is still valid
                overrun = true;
                continue;
            }
            log_->error("netlink: reading the event socket failed: {}", std::strerror(errno));
            return false;
        }
        if (static_cast<size_t>(n) > sizeof buf) {  // truncated: one oversized message
            events_.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        uint64_t count = 0;
        size_t off = 0;
        const auto total = static_cast<size_t>(n);
        while (total - off >= sizeof(nlmsghdr)) {
            nlmsghdr h{};
            std::memcpy(&h, buf + off, sizeof h);
            if (h.nlmsg_len < sizeof(nlmsghdr) || h.nlmsg_len > total - off) break;
            ++count;
            // Each link message is a state the link passed through: kept in the history even
            // when the re-dump after the burst finds it changed back (down, MTU, up).
            if (h.nlmsg_type == RTM_NEWLINK)
                if (auto l = parse_link_message(reinterpret_cast<const nlmsghdr*>(buf + off))) {
                    std::lock_guard vl(view_mutex_);
                    history_.observe_link(*l, Clock::now(), false);
                }
            off += NLMSG_ALIGN(h.nlmsg_len);
            if (off > total) break;
        }
        events_.fetch_add(count, std::memory_order_relaxed);
    }
}

bool NetlinkWatcher::refresh() {
    try {
        (void)dump();
    } catch (const std::exception& e) {
        log_->error("netlink: re-dump failed, keeping the previous view: {}", e.what());
        return false;
    }
    if (on_change_) {
        try {
            on_change_();
        } catch (const std::exception& e) {
            log_->error("netlink: change callback threw: {}", e.what());
        } catch (...) {
            log_->error("netlink: change callback threw a non-standard exception");
        }
    }
    return true;
}

void NetlinkWatcher::run() {
    const int efd = nl_socket_get_fd(event_sock_.get());
    bool retry_pending = false;
    for (;;) {
        pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {efd, POLLIN, 0}};
        const int n = ::poll(fds, 2, retry_pending ? kRetryMs : -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            log_->error("netlink: poll failed: {}", std::strerror(errno));
            if (wait_for_stop(kRetryMs)) return;
            continue;
        }
        if (fds[0].revents != 0) return;

        bool dirty = retry_pending;  // a timeout with a retry pending means "dump again"
        bool overrun = false;
        bool ok = true;
        if (fds[1].revents != 0) {  // POLLERR here is the ENOBUFS overrun
            dirty = true;
            ok = drain_events(overrun);
            const auto deadline = SteadyClock::now() + kMaxCoalesce;
            while (ok) {
                const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now()).count();
                if (left <= 0) break;
                pollfd again[2] = {{stop_fd_, POLLIN, 0}, {efd, POLLIN, 0}};
                const int m = ::poll(again, 2, static_cast<int>(std::min<long long>(kQuietMs, left)));
                if (m < 0 && errno == EINTR) continue;
                if (m <= 0) break;  // quiet (or a poll error, which the outer poll reports)
                if (again[0].revents != 0) return;
                ok = drain_events(overrun);
            }
        }
        if (!ok && wait_for_stop(kRetryMs)) return;  // don't spin on a broken socket
        if (overrun) {
            resyncs_.fetch_add(1, std::memory_order_relaxed);
            log_->warn("netlink: event socket overrun (ENOBUFS), events were dropped; re-dumping");
        }
        if (dirty) retry_pending = !refresh();
    }
}

}  // namespace rocewatch
