// Ends an HTTP client's request at its deadline: httplib's timeouts bound each read and write,
// not the request, so a server that trickles a byte a second keeps a client waiting for good.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace rocewatch {

// Stops `cli`'s request in flight at `deadline`, or once `cancel` rises (the daemon is
// stopping): cli.stop() shuts the socket down and the blocked read returns at once. A thread
// per request, waking at the deadline, or every `slice` to look at `cancel`.
class HttpWatchdog {
public:
    HttpWatchdog(httplib::Client& cli, std::chrono::steady_clock::time_point deadline,
                 const std::atomic<bool>* cancel = nullptr,
                 std::chrono::milliseconds slice = std::chrono::milliseconds(100)) {
        try {
            thread_ = std::thread([this, &cli, deadline, cancel, slice] {
                std::unique_lock lock(mu_);
                while (!done_) {
                    const auto now = std::chrono::steady_clock::now();
                    if ((cancel && cancel->load()) || now >= deadline) {
                        fired_ = true;
                        cli.stop();
                        return;
                    }
                    cv_.wait_until(lock, cancel ? std::min(deadline, now + slice) : deadline);
                }
            });
        } catch (const std::exception&) {  // no thread to spare: the per-read timeouts still end it
        }
    }
    ~HttpWatchdog() {
        {
            std::lock_guard lock(mu_);
            done_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    // Whether it stopped the request (the deadline passed or cancel rose).
    [[nodiscard]] bool fired() {
        std::lock_guard lock(mu_);
        return fired_;
    }
    HttpWatchdog(const HttpWatchdog&) = delete;
    HttpWatchdog& operator=(const HttpWatchdog&) = delete;

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    bool fired_ = false;
    std::thread thread_;
};

// A response body receiver that keeps at most `max` bytes in `body` and stops the transfer
// (setting `too_large`) past them, instead of reading an answer of any size whole.
inline httplib::ContentReceiverWithProgress bounded_body(std::string& body, size_t max, bool& too_large) {
    return [&body, max, &too_large](const char* data, size_t n, uint64_t, uint64_t) {
        if (body.size() + n > max) {
            too_large = true;
            return false;
        }
        body.append(data, n);
        return true;
    };
}

}  // namespace rocewatch
