// The passive side of peer probe sessions (RDMA, UCX): one at a time, on its own thread.
//
// A peer's POST claims the host, opens its endpoints, answers, and hands the serve step to
// the session thread, so the HTTP worker returns at once. A second session while one runs
// is refused (503, the peer records peer_busy): a node is never the target of two probes'
// traffic at once, and a flood of requests costs no more than one session's resources.
#pragma once

#include <functional>
#include <mutex>
#include <thread>

namespace rocewatch {

class SessionHost {
public:
    SessionHost() = default;
    ~SessionHost() { stop(); }
    SessionHost(const SessionHost&) = delete;
    SessionHost& operator=(const SessionHost&) = delete;

    // Reserves the host for one session; false while another is claimed or running.
    bool try_claim() {
        std::lock_guard lock(mu_);
        if (busy_ || stopping_) return false;
        busy_ = true;
        return true;
    }
    // Gives back a claim that did not become a session (the request was refused).
    void release() {
        std::lock_guard lock(mu_);
        busy_ = false;
    }
    // Runs `serve` on the session thread (after try_claim); the claim ends when it returns.
    // `serve` must end by its own deadline.
    void run(std::function<void()> serve) {
        std::lock_guard lock(mu_);
        if (thread_.joinable()) thread_.join();  // the previous session, already finished
        thread_ = std::thread([this, serve = std::move(serve)] {
            serve();
            std::lock_guard l(mu_);
            busy_ = false;
        });
    }
    bool busy() const {
        std::lock_guard lock(mu_);
        return busy_;
    }
    // Refuses new sessions and waits for the running one (bounded by its deadline).
    void stop() {
        std::thread t;
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
            t = std::move(thread_);
        }
        if (t.joinable()) t.join();
    }

private:
    mutable std::mutex mu_;
    bool busy_ = false;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace rocewatch
