// The data port's sessions once granted, a thread each: echo sessions (the latency probe's far
// end) and sink sessions (the bandwidth probe's far end).
//
// A blocking recv/send loop answers a ping-pong as fast as a dedicated tool does, where an
// event loop adds a readiness wake-up and a second syscall to every round trip (~5% of a
// veth round trip, see bench/). A sink reads as iperf3's receiver does, blocking on its one
// socket until it has a whole 128 KiB; in the shared event loop every segment that arrived on
// any stream woke it, and four streams ran at 0.91 of iperf3 -P 4 (docs/figures.md, stop 37).
// At most max_sessions of them run at once.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "probes/budget.hpp"
#include "probes/deadline.hpp"
#include "probes/tcp_server.hpp"
#include "util/fd.hpp"

namespace rocewatch::tcpserver {

// When a sink session ends for time.
struct SinkTimes {
    SteadyClock::time_point deadline;  // the grant's end plus grace
    SteadyClock::duration grace;       // past the deadline, reading goes on while bytes came this recently
    SteadyClock::duration longest;     // ... for at most this much more (the longest grant)
};

class SessionWorkers {
public:
    SessionWorkers(Counters& counters, std::shared_ptr<spdlog::logger> log, SteadyClock::duration idle_timeout,
                   ProbeBudget* budget = nullptr)
        : counters_(counters), log_(std::move(log)), idle_timeout_(idle_timeout), budget_(budget) {}
    ~SessionWorkers() { stop_all(); }
    SessionWorkers(const SessionWorkers&) = delete;
    SessionWorkers& operator=(const SessionWorkers&) = delete;

    // Echoes `grant.message_size`-byte messages on `fd` until the peer closes, the grant's
    // bytes or `end` run out, or it idles.
    void start_echo(Fd fd, const std::string& peer, const tcpwire::Reply& grant, SteadyClock::time_point end);
    // Counts what arrives on `fd` until the peer closes (then reports, code ok), goes past the
    // grant's bytes or its time (reports limit_reached), or idles; `bulk` is held until then.
    void start_sink(Fd fd, const std::string& peer, const tcpwire::Reply& grant, SinkTimes times,
                    ProbeBudget::Bulk bulk);
    // Joins the workers that have finished.
    void reap();
    uint32_t live() const { return live_.load(); }
    // Wakes every worker (a blocked recv/send returns at once) and joins it.
    void stop_all();

private:
    // The worker closes its fd the moment its session ends (a peer pushing past its grant
    // finds the connection gone at once, not when the loop next reaps), under `mu`, so that
    // stop_all()'s shutdown() to wake a blocked worker never reaches a number reused since.
    struct Worker {
        std::mutex mu;
        Fd fd;  // under mu
        std::thread thread;
        std::atomic<bool> done{false};
    };
    // Runs `body` on a thread of its own. The connection counts as active until the worker
    // ends; without a thread to run on it is closed at once (counted as cut).
    void launch(Fd fd, const char* what, std::function<void(Worker&)> body);
    void echo(Worker& w, const std::string& peer, const tcpwire::Reply& grant, SteadyClock::time_point end);
    void sink(Worker& w, const std::string& peer, const tcpwire::Reply& grant, SinkTimes times);

    Counters& counters_;
    std::shared_ptr<spdlog::logger> log_;
    SteadyClock::duration idle_timeout_;
    ProbeBudget* budget_;  // charged each session's bytes (an echo's both ways); nullptr: none
    std::vector<std::unique_ptr<Worker>> workers_;
    std::atomic<uint32_t> live_{0};
};

}  // namespace rocewatch::tcpserver
