// The control client against a real listening socket on loopback: a peer that accepts a
// session POST and never answers holds the probe until its deadline, unless the daemon is
// stopping, when the cancel flag ends the request at once.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "api/peer_client.hpp"

namespace rocewatch {
namespace {

using namespace std::chrono_literals;

// A listener on 127.0.0.1 that completes connections (the kernel's backlog) and never reads
// or answers: the peer whose answer is slow to come.
class SilentPeer {
public:
    SilentPeer() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 8) != 0) return;
        socklen_t len = sizeof a;
        if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) port_ = ntohs(a.sin_port);
    }
    ~SilentPeer() {
        if (fd_ >= 0) ::close(fd_);
    }
    SilentPeer(const SilentPeer&) = delete;
    SilentPeer& operator=(const SilentPeer&) = delete;
    uint16_t port() const { return port_; }

private:
    int fd_ = -1;
    uint16_t port_ = 0;
};

PeerConfig peer_at(uint16_t port) {
    PeerConfig p;
    p.name = "silent";
    p.address = "127.0.0.1:" + std::to_string(port);
    return p;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(PeerClient, SilentPeerTimesOutAtTheDeadline) {
    SilentPeer peer;
    ASSERT_NE(peer.port(), 0);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = api::post_session(peer_at(peer.port()), "t", "/api/v1/peer/rdma", {{"x", 1}}, Deadline::after(700ms));
    const double took = seconds_since(t0);
    EXPECT_FALSE(r.body);
    EXPECT_EQ(r.reason, "timeout") << r.detail;
    EXPECT_GE(took, 0.6);
    EXPECT_LT(took, 3.0);
}

TEST(PeerClient, CancelEndsASessionPostAtOnce) {
    SilentPeer peer;
    ASSERT_NE(peer.port(), 0);
    std::atomic<bool> cancel{false};
    std::thread stopper([&] {
        std::this_thread::sleep_for(300ms);
        cancel = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto r = api::post_session(peer_at(peer.port()), "t", "/api/v1/peer/rdma", {{"x", 1}},
                               Deadline{std::chrono::steady_clock::now() + 30s, &cancel});
    const double took = seconds_since(t0);
    stopper.join();
    EXPECT_FALSE(r.body);
    EXPECT_EQ(r.reason, "cancelled") << r.detail;
    // The deadline was 30 s away: the request ended within a cancel slice or two of the flag.
    EXPECT_LT(took, 5.0) << "the POST waited for the peer after the daemon began to stop";
}

}  // namespace
}  // namespace rocewatch
