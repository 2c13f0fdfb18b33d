// The data port's echo sessions, a blocking thread each.
#include "probes/tcp_echo.hpp"

#include <spdlog/logger.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <system_error>

#include "probes/budget.hpp"
#include "probes/tcp_socket.hpp"

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

void EchoWorkers::serve(Worker& w, const std::string& peer, const tcpwire::Reply& grant, SteadyClock::time_point end) {
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

void EchoWorkers::start(Fd fd, const std::string& peer, const tcpwire::Reply& grant, SteadyClock::time_point end) {
    auto w = std::make_unique<Worker>();
    w->fd = std::move(fd);
    Worker* wp = w.get();
    ++live_;
    try {
        wp->thread = std::thread([this, wp, peer, grant, end] {
            try {
                serve(*wp, peer, grant, end);
            } catch (const std::exception& e) {
                if (log_) log_->error("probe port: echo session: {}", e.what());
            }
            --live_;
            --counters_.active;
            wp->done = true;
        });
    } catch (const std::system_error& e) {
        --live_;
        --counters_.active;
        ++counters_.cut;
        if (log_) log_->warn("probe port: no thread for an echo session: {}", e.what());
        return;  // w closes the connection
    }
    workers_.push_back(std::move(w));
}

void EchoWorkers::reap() {
    for (auto& w : workers_)
        if (w->done && w->thread.joinable()) w->thread.join();
    // Only the joined ones: a worker can finish between the loop above and here, and erasing
    // it unjoined destroys a joinable std::thread, which is std::terminate (seen with 64
    // daemons probing each other: "terminate called without an active exception").
    std::erase_if(workers_, [](const auto& w) { return !w->thread.joinable(); });
}

void EchoWorkers::stop_all() {
    for (auto& w : workers_) ::shutdown(w->fd.get(), SHUT_RDWR);
    for (auto& w : workers_)
        if (w->thread.joinable()) w->thread.join();
    workers_.clear();
}

}  // namespace rocewatch::tcpserver
