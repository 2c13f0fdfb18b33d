// Pushes the daemon's firing and resolved alerts to Alertmanager on threads of its own, so that
// an Alertmanager that is down or slow never holds up collection or serving.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/alertmanager/alert_queue.hpp"
#include "daemon/alertmanager/payload.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"
#include "util/clock.hpp"

namespace rocewatch::alertmanager {

struct NotifierDeps {
    std::function<std::shared_ptr<const Snapshot>()> snapshots;  // the latest published one
    std::function<TimePoint()> now = [] { return Clock::now(); };
    std::shared_ptr<spdlog::logger> log;
};

// Two threads, started with the first configured url: the watcher reads the latest snapshot every second and queues the
// alerts the AlertBook says are due; the sender takes up to 64 at a time from the bounded queue and POSTs them to every
// configured Alertmanager within `timeout`. A failed POST is counted, not retried as such: every alert is queued again
// every resend_interval, and every 5 s while an Alertmanager fails, so all of them reach it within seconds of its
// return.
class Notifier {
public:
    Notifier(const Config& config, NotifierDeps deps);
    ~Notifier();
    Notifier(const Notifier&) = delete;
    Notifier& operator=(const Notifier&) = delete;

    // The threads run while at least one url is configured: from start(), or from the
    // apply_config() after it that names the first.
    void start();
    void stop();
    [[nodiscard]] bool running() const;
    // A reloaded config: urls, timing, credentials and labels apply from the next send.
    void apply_config(const Config& config);
    // Counters for /metrics; nothing while no url is configured.
    [[nodiscard]] std::optional<AlertmanagerStats> stats() const;

private:
    struct Target {
        std::string url;
        std::atomic<uint64_t> sent{0};
        std::atomic<uint64_t> errors{0};
        bool failing = false;  // sender thread only: to log changes, not every failure
        // Failed since its last catch-up: owes every alert in the book. Set by the sender,
        // read by the watcher, which sends the catch-ups to these targets only.
        std::atomic<bool> behind{false};
    };

    void start_threads_locked();
    void watch_loop();
    void send_loop();
    void send(Target& t, const AlertmanagerConfig& c, const std::string& body, size_t count);
    std::shared_ptr<const Config> config() const;

    NotifierDeps deps_;
    mutable std::mutex mu_;  // config_, targets_, wanted_ and the threads' handles
    bool wanted_ = false;    // start() was called
    std::shared_ptr<const Config> config_;
    std::vector<std::shared_ptr<Target>> targets_;
    AlertQueue queue_;
    AlertBook book_;  // watcher thread only
    std::atomic<uint64_t> dropped_{0};
    SteadyClock::time_point last_retry_{};  // watcher thread only: the last catch-up
    std::atomic<bool> stopping_{false};
    std::mutex wake_mu_;
    std::condition_variable wake_;
    std::thread watcher_;
    std::thread sender_;
};

}  // namespace rocewatch::alertmanager
