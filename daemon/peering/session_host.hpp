// The passive side of peer probe sessions (RDMA, UCX): one at a time, on its own thread.
//
// A peer's POST claims the host, opens its endpoints, answers, and hands the serve step to
// the session thread, so the HTTP worker returns at once. A second session while one runs
// is refused (503, the peer records peer_busy): a node is never the target of two probes'
// traffic at once, and a flood of requests costs no more than one session's resources.
//
// Each claim gets a fresh random id, which the answer carries. A peer whose run failed on
// its side (a QP in error, a dead UCX process) ends the session with that id at once,
// instead of leaving this node waiting for a closing write that never comes and busy for
// every other peer until the session's deadline.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "util/hex.hpp"
#include "util/thread_name.hpp"

namespace rocewatch {

class SessionHost {
public:
    SessionHost() = default;
    ~SessionHost() { stop(); }
    SessionHost(const SessionHost&) = delete;
    SessionHost& operator=(const SessionHost&) = delete;

    // Reserves the host for one session; false while another is claimed or running. The
    // session's id is id(), and its serve step must honour cancel_flag() (Deadline::cancel).
    bool try_claim() {
        std::lock_guard lock(mu_);
        if (busy_ || stopping_) return false;
        busy_ = true;
        cancel_.store(false);
        id_ = new_id();
        return true;
    }
    std::string id() const {
        std::lock_guard lock(mu_);
        return id_;
    }
    const std::atomic<bool>* cancel_flag() const { return &cancel_; }
    // Ends the running session `id` early; false when no session by that id is running.
    bool cancel(const std::string& id) {
        std::lock_guard lock(mu_);
        if (!busy_ || id.empty() || id != id_) return false;
        cancel_.store(true);
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
            name_this_thread("peer-session");
            serve();
            std::lock_guard l(mu_);
            busy_ = false;
        });
    }
    bool busy() const {
        std::lock_guard lock(mu_);
        return busy_;
    }
    // Refuses new sessions and ends the running one early.
    void stop() {
        std::thread t;
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
            cancel_.store(true);
            t = std::move(thread_);
        }
        if (t.joinable()) t.join();
    }

private:
    static std::string new_id() {
        static thread_local std::mt19937_64 gen{std::random_device{}()};
        const uint64_t v = gen();
        std::array<uint8_t, sizeof v> bytes{};
        std::memcpy(bytes.data(), &v, sizeof v);
        return to_hex(bytes);
    }

    mutable std::mutex mu_;
    bool busy_ = false;
    bool stopping_ = false;
    std::atomic<bool> cancel_{false};
    std::string id_;
    std::thread thread_;
};

}  // namespace rocewatch
