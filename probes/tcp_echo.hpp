// The data port's echo sessions (the latency probe's far end), a thread each.
//
// A blocking recv/send loop answers a ping-pong as fast as a dedicated tool does, where an
// event loop adds a readiness wake-up and a second syscall to every round trip (~5% of a
// veth round trip, see bench/). At most max_sessions of them run at once.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "probes/deadline.hpp"
#include "probes/tcp_server.hpp"
#include "util/fd.hpp"

namespace rocewatch::tcpserver {

class EchoWorkers {
public:
    EchoWorkers(Counters& counters, std::shared_ptr<spdlog::logger> log, SteadyClock::duration idle_timeout,
                ProbeBudget* budget = nullptr)
        : counters_(counters), log_(std::move(log)), idle_timeout_(idle_timeout), budget_(budget) {}
    ~EchoWorkers() { stop_all(); }
    EchoWorkers(const EchoWorkers&) = delete;
    EchoWorkers& operator=(const EchoWorkers&) = delete;

    // Echoes `grant.message_size`-byte messages on `fd` until the peer closes, the grant's
    // bytes or `end` run out, or it idles. The connection counts as active until the
    // worker ends; without a thread to run on it is closed at once (counted as cut).
    void start(Fd fd, const std::string& peer, const tcpwire::Reply& grant, SteadyClock::time_point end);
    // Joins the workers that have finished.
    void reap();
    uint32_t live() const { return live_.load(); }
    // Wakes every worker (a blocked recv/send returns at once) and joins it.
    void stop_all();

private:
    // The worker only uses the fd; it is closed here after the join, so stop_all() can
    // shutdown() it to wake a blocked worker.
    struct Worker {
        Fd fd;
        std::thread thread;
        std::atomic<bool> done{false};
    };
    void serve(Worker& w, const std::string& peer, const tcpwire::Reply& grant, SteadyClock::time_point end);

    Counters& counters_;
    std::shared_ptr<spdlog::logger> log_;
    SteadyClock::duration idle_timeout_;
    ProbeBudget* budget_;  // charged each session's bytes, both ways; nullptr: none
    std::vector<std::unique_ptr<Worker>> workers_;
    std::atomic<uint32_t> live_{0};
};

}  // namespace rocewatch::tcpserver
