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

#include <httplib.h>

#include "api/peer_client.hpp"
#include "api/probe_view.hpp"
#include "trickling_server.hpp"

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

// A peer answers 503 for several reasons (another session running, its probe budget spent,
// peer probing off, no snapshot yet, its front end saturated): the result says which, in the
// peer's words, and when it asks to be tried again, not always "another probe session".
TEST(PeerClient, APeersRefusalSaysWhyInItsWords) {
    httplib::Server server;
    std::string body, type;
    std::string retry_after;
    server.Post("/api/v1/peer/rdma", [&](const httplib::Request&, httplib::Response& res) {
        res.status = 503;
        if (!retry_after.empty()) res.set_header("Retry-After", retry_after);
        res.set_content(body, type);
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread t([&] { server.listen_after_bind(); });  // bound and listening: calls queue until it runs
    const auto refusal = [&](std::string b, std::string ct, std::string after = "", std::string reason = "peer_busy") {
        body = std::move(b);
        type = std::move(ct);
        retry_after = std::move(after);
        auto r = api::post_session(peer_at(static_cast<uint16_t>(port)), "t", "/api/v1/peer/rdma", {{"x", 1}},
                                   Deadline::after(3s));
        EXPECT_FALSE(r.body);
        EXPECT_EQ(r.reason, reason) << r.detail;
        return r.detail;
    };
    const auto spent = refusal(R"({"reason":"peer_busy","detail":"probe budget spent: 60 runs in the last minute"})",
                               "application/json", "30");
    EXPECT_NE(spent.find("the peer says probe budget spent: 60 runs in the last minute (retry after 30 s)"),
              std::string::npos)
        << spent;
    // An older peer with probing off says so only in words: busy, as it was.
    const auto off_old = refusal(R"({"error":"peer probing is off: no token file","status":503})", "application/json");
    EXPECT_NE(off_old.find("the peer says peer probing is off: no token file"), std::string::npos) << off_old;
    // Ours names the reason: a failure (it will not take part), not a busy peer to wait for.
    const auto off =
        refusal(R"({"error":"peer probing is off: no token file","status":503,"reason":"peer_probing_off"})",
                "application/json", "", "peer_probing_off");
    EXPECT_NE(off.find("the peer says peer probing is off: no token file"), std::string::npos) << off;
    const auto saturated = refusal("server busy, retry\n", "text/plain");
    EXPECT_NE(saturated.find("the peer says server busy, retry"), std::string::npos) << saturated;
    const auto bare = refusal("", "text/plain");
    EXPECT_NE(bare.find("the peer is unavailable (HTTP 503)"), std::string::npos) << bare;
    server.stop();
    t.join();
}

// A peer (or whoever answers at its address) that trickles its answer a byte at a time: each
// read returns within httplib's read timeout, so only the request's own deadline ends it. It
// held a 2 s hello, the one scheduler thread and SIGTERM for a minute.
TEST(PeerClient, ATricklingPeerIsCutOffAtTheDeadline) {
    rocewatch::testing::TricklingServer peer("GET", "/api/v1/peer/hello");
    ASSERT_GT(peer.port(), 0);
    const auto t0 = std::chrono::steady_clock::now();
    const auto st = api::fetch_hello(peer_at(static_cast<uint16_t>(peer.port())), "t", t0 + 700ms);
    const double took = seconds_since(t0);
    EXPECT_FALSE(st.hello_ok);
    EXPECT_EQ(st.hello_error, "timeout");
    EXPECT_GE(took, 0.6);
    EXPECT_LT(took, 2.0) << "the hello outlived its deadline";
}

// An answer past 1 MiB is cut off, not read whole, and nothing is inflated: the client asks
// for no encoding, and a gzip body sent anyway is not JSON to it. A 408 KB gzip hello took the
// daemon to 787 MB.
TEST(PeerClient, AnAnswerIsBoundedAndNeverInflated) {
    httplib::Server server;
    std::string body, encoding, asked_encoding;
    server.Get("/api/v1/peer/hello", [&](const httplib::Request& req, httplib::Response& res) {
        asked_encoding = req.get_header_value("Accept-Encoding");
        if (!encoding.empty()) res.set_header("Content-Encoding", encoding);
        res.set_content(body, "application/json");
    });
    server.Post("/api/v1/peer/rdma",
                [&](const httplib::Request&, httplib::Response& res) { res.set_content(body, "application/json"); });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread t([&] { server.listen_after_bind(); });
    const auto peer = peer_at(static_cast<uint16_t>(port));

    body = "[" + std::string(2 << 20, ' ') + "]";
    auto st = api::fetch_hello(peer, "t", std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(st.hello_error, "protocol_error");
    auto r = api::post_session(peer, "t", "/api/v1/peer/rdma", {{"x", 1}}, Deadline::after(5s));
    EXPECT_EQ(r.reason, "protocol_error");
    EXPECT_NE(r.detail.find("larger than 1 MiB"), std::string::npos) << r.detail;
    EXPECT_EQ(asked_encoding, "") << "no Accept-Encoding";

    // What gzip of a JSON object looks like on the wire: the magic bytes, not JSON.
    body = std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8);
    encoding = "gzip";
    st = api::fetch_hello(peer, "t", std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(st.hello_error, "protocol_error");
    server.stop();
    t.join();
}

// A peer of another peer protocol (a node not yet upgraded): the hello fails with
// version_mismatch, and says which version the peer runs and which protocol each side speaks.
TEST(PeerClient, APeerOfAnotherProtocolSaysWhichVersionItRuns) {
    httplib::Server server;
    server.Get("/api/v1/peer/hello", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"version":"0.9.0","protocol_version":1,"data_port":9880,"interfaces":{}})",
                        "application/json");
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread t([&] { server.listen_after_bind(); });
    auto peer = peer_at(static_cast<uint16_t>(port));
    peer.name = "node-old";
    const auto st = api::fetch_hello(peer, "t", std::chrono::steady_clock::now() + 5s);
    EXPECT_FALSE(st.hello_ok);
    EXPECT_EQ(st.hello_error, "version_mismatch");
    EXPECT_EQ(st.hello_detail, "node-old runs rocewatch 0.9.0, peer protocol 1; this node speaks " +
                                   std::to_string(api::kPeerProtocolVersion));
    server.stop();
    t.join();
}

}  // namespace
}  // namespace rocewatch
