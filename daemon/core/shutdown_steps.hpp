// Runs the daemon's stop steps in order and names, while it lasts, a step that takes long:
// a stop that waits on something (a probe, a session, a child) says what in the journal,
// instead of only being killed by systemd's stop timeout.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "util/thread_name.hpp"

namespace rocewatch {

class ShutdownSteps {
public:
    explicit ShutdownSteps(spdlog::logger& log, std::chrono::milliseconds report_every = std::chrono::seconds(2))
        : log_(log), every_(report_every) {
        try {
            watch_ = std::thread([this] {
                name_this_thread("shutdown");
                watch();
            });
        } catch (const std::exception&) {  // no thread to spare: the steps still run
        }
    }
    ~ShutdownSteps() {
        {
            std::lock_guard lock(mu_);
            done_ = true;
        }
        cv_.notify_all();
        if (watch_.joinable()) watch_.join();
    }
    ShutdownSteps(const ShutdownSteps&) = delete;
    ShutdownSteps& operator=(const ShutdownSteps&) = delete;

    template <typename F>
    void step(const char* name, F&& stop) {
        {
            std::lock_guard lock(mu_);
            current_ = name;
            started_ = std::chrono::steady_clock::now();
        }
        stop();
        const auto took = std::chrono::steady_clock::now() - started_;
        if (took >= every_)
            log_.warn("shutdown: stopping {} took {} ms", name,
                      std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
        std::lock_guard lock(mu_);
        current_ = nullptr;
    }

private:
    void watch() {
        std::unique_lock lock(mu_);
        while (!done_) {
            cv_.wait_for(lock, every_);
            if (done_ || !current_) continue;
            const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
            if (secs >= std::chrono::duration<double>(every_).count())
                log_.warn("shutdown: still stopping {} after {:.1f} s", current_, secs);
        }
    }

    spdlog::logger& log_;
    std::chrono::milliseconds every_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    const char* current_ = nullptr;
    std::chrono::steady_clock::time_point started_{};
    std::thread watch_;
};

}  // namespace rocewatch
