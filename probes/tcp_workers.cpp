// The data port's granted sessions, a blocking thread each.
#include "probes/tcp_workers.hpp"

#include <spdlog/logger.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <system_error>

#include "probes/tcp_socket.hpp"
#include "util/thread_name.hpp"

namespace rocewatch::tcpserver {

namespace {

// Moves one message in or out on a blocking socket; every call ends by the grant's end and
// within the idle limit. `why` says what ended the session when a call fails.
class EchoIo {
public:
    EchoIo(int fd, SteadyClock::time_point end, SteadyClock::duration idle)
        : fd_(fd), timeout_(fd, Deadline{end}, idle), idle_(idle), last_progress_(SteadyClock::now()) {}

    // False when the session is over (peer closed, error, grant expired, idle).
    bool transfer(std::vector<uint8_t>& msg, bool in) {
        for (size_t off = 0; off < msg.size();) {
            const ssize_t n = call(msg, off, in);
            if (n <= 0) return false;
            off += static_cast<size_t>(n);
        }
        return true;
    }
    const char* why = "peer closed";

private:
    ssize_t call(std::vector<uint8_t>& msg, size_t off, bool in) {
        for (;;) {
            const auto now = SteadyClock::now();
            if (!timeout_.arm(now)) {
                why = "grant expired";
                return -1;
            }
            if (now - last_progress_ >= idle_) {
                why = "idle";
                return -1;
            }
            const ssize_t n = in ? ::recv(fd_, msg.data() + off, msg.size() - off, 0)
                                 : ::send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
            if (n > 0) last_progress_ = SteadyClock::now();
            if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
        }
    }

    int fd_;
    tcpsock::CallTimeout timeout_;
    SteadyClock::duration idle_;
    SteadyClock::time_point last_progress_;
};

}  // namespace

void SessionWorkers::echo(Worker& w, const std::string& peer, const tcpwire::Reply& grant,
                          SteadyClock::time_point end) {
    std::vector<uint8_t> msg(grant.message_size);
    uint64_t echoed = 0;
    const char* why = "peer closed";
    if (tcpsock::make_blocking(w.fd.get())) {
        EchoIo io(w.fd.get(), end, idle_timeout_);
        while (io.transfer(msg, true)) {
            if (echoed + msg.size() > grant.max_bytes) {
                io.why = "over its byte grant";
                break;
            }
            if (!io.transfer(msg, false)) break;
            echoed += msg.size();
            counters_.bytes_echoed += msg.size();
        }
        why = io.why;
    }
    if (budget_) budget_->charge(BudgetSide::peer, 2 * echoed);
    if (std::string_view(why) != "peer closed") ++counters_.cut;
    if (log_) log_->debug("probe port: {} echo session ended ({}), {} bytes echoed", peer, why, echoed);
}

void SessionWorkers::sink(Worker& w, const std::string& peer, const tcpwire::Reply& grant, SinkTimes times) {
    // 128 KiB reads, as iperf3 makes: with 256 KiB the receiver spent more CPU per GB.
    std::vector<uint8_t> buf(128 * 1024);
    tcpwire::Report rep;
    rep.code = tcpwire::Code::limit_reached;
    const char* why = "peer closed";
    auto last_progress = SteadyClock::now();
    const int fd = w.fd.get();
    // Each recv waits at most kCancelSlice, so that time and idleness are looked at while
    // nothing comes; stop_all()'s shutdown ends a wait at once.
    const timeval slice{.tv_sec = 0, .tv_usec = static_cast<suseconds_t>(Deadline::kCancelSlice.count() * 1000)};
    // Woken once a whole buffer is queued (or the slice passes, or the peer closes), not at
    // every segment: each wake-up is the sender's CPU too, as on veth it delivers the segment
    // and wakes us (an IPI, dear in a VM). Best effort: without it, only more wake-ups.
    const int lowat = static_cast<int>(buf.size());
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
    if (!tcpsock::make_blocking(fd) || ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof slice) != 0) {
        why = "socket setup failed";
    } else {
        for (;;) {
            // One byte past the grant is enough to know the peer went over it.
            const uint64_t allowed = grant.max_bytes - rep.bytes;
            const size_t want = allowed >= buf.size() ? buf.size() : static_cast<size_t>(allowed + 1);
            // A whole buffer, unless the peer closes, or a slice passes with nothing or while
            // bytes dribble in (a byte every few ms would otherwise hold this loop for hours,
            // past every time limit below).
            size_t got = 0;
            ssize_t n = 0;
            const auto batch_end = SteadyClock::now() + Deadline::kCancelSlice;
            while (got < want && (n = ::recv(fd, buf.data() + got, want - got, 0)) > 0) {
                got += static_cast<size_t>(n);
                if (got < want && SteadyClock::now() >= batch_end) break;
            }
            const int err = n < 0 ? errno : 0;
            const auto now = SteadyClock::now();
            if (got > 0) {
                const int64_t ns = tcpsock::mono_ns(now);
                if (rep.bytes == 0) {  // what the first read took arrived before first_ns
                    rep.first_ns = ns;
                    rep.first_read = static_cast<uint32_t>(std::min<size_t>(got, tcpwire::kMaxFirstRead));
                }
                rep.last_ns = ns;
                rep.bytes += got;
                counters_.bytes_received += got;
                last_progress = now;
                if (rep.bytes > grant.max_bytes) {
                    why = "over its byte grant";
                    if (log_) log_->warn("probe port: {} sent more than its grant of {} bytes", peer, grant.max_bytes);
                    break;
                }
            }
            if (n == 0) {
                rep.code = tcpwire::Code::ok;
                break;
            }
            if (n < 0 && err != EAGAIN && err != EINTR) {
                why = "connection error";
                break;
            }
            // The grant's end, except that past it reading goes on while bytes still arrive
            // (within a grace of the last), up to one more of the longest grant: the sender
            // stopped at the grant, and what a slow path still held drains after it (cutting
            // that turned a slow path's low figure into "peer closed").
            if (now >=
                std::min(std::max(times.deadline, last_progress + times.grace), times.deadline + times.longest)) {
                why = "grant expired";
                break;
            }
            if (now - last_progress >= idle_timeout_) {
                why = "idle";
                break;
            }
        }
        // The peer gets what we counted, if the socket takes 32 bytes now (nothing was ever
        // sent on it, so it does).
        const auto b = tcpwire::encode(rep);
        (void)::send(fd, b.data(), b.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (budget_ && rep.bytes) budget_->charge(BudgetSide::peer, rep.bytes);
    if (std::string_view(why) != "peer closed") ++counters_.cut;
    if (log_) log_->debug("probe port: {} sink session ended ({}), {} bytes", peer, why, rep.bytes);
}

void SessionWorkers::start_echo(Fd fd, const std::string& peer, const tcpwire::Reply& grant,
                                SteadyClock::time_point end) {
    launch(std::move(fd), "an echo session", [this, peer, grant, end](Worker& w) { echo(w, peer, grant, end); });
}

void SessionWorkers::start_sink(Fd fd, const std::string& peer, const tcpwire::Reply& grant, SinkTimes times,
                                ProbeBudget::Bulk bulk) {
    // Held by the worker until its session ends: echoes are refused while bulk moves.
    auto held = std::make_shared<ProbeBudget::Bulk>(std::move(bulk));
    launch(std::move(fd), "a sink session", [this, peer, grant, times, held](Worker& w) {
        sink(w, peer, grant, times);
        held->reset();
    });
}

void SessionWorkers::launch(Fd fd, const char* what, std::function<void(Worker&)> body) {
    auto w = std::make_unique<Worker>();
    w->fd = std::move(fd);
    Worker* wp = w.get();
    ++live_;
    try {
        wp->thread = std::thread([this, wp, what, body = std::move(body)] {
            name_this_thread("data-worker");
            try {
                body(*wp);
            } catch (const std::exception& e) {
                if (log_) log_->error("probe port: {}: {}", what, e.what());
            }
            {
                std::lock_guard lk(wp->mu);
                wp->fd.reset();
            }
            --live_;
            --counters_.active;
            wp->done = true;
        });
    } catch (const std::system_error& e) {
        --live_;
        --counters_.active;
        ++counters_.cut;
        if (log_) log_->warn("probe port: no thread for {}: {}", what, e.what());
        return;  // w closes the connection
    }
    workers_.push_back(std::move(w));
}

void SessionWorkers::reap() {
    for (auto& w : workers_)
        if (w->done && w->thread.joinable()) w->thread.join();
    // Only the joined ones: a worker can finish between the loop above and here, and erasing
    // it unjoined destroys a joinable std::thread, which is std::terminate (seen with 64
    // daemons probing each other: "terminate called without an active exception").
    std::erase_if(workers_, [](const auto& w) { return !w->thread.joinable(); });
}

void SessionWorkers::stop_all() {
    for (auto& w : workers_) {
        std::lock_guard lk(w->mu);
        if (w->fd.valid()) ::shutdown(w->fd.get(), SHUT_RDWR);
    }
    for (auto& w : workers_)
        if (w->thread.joinable()) w->thread.join();
    workers_.clear();
}

}  // namespace rocewatch::tcpserver
