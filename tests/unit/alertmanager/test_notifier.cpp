// The bounded queue, and the notifier against a real HTTP server on loopback: delivered,
// counted, failing without blocking, and catching up once the server answers again.
#include <gtest/gtest.h>

#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "daemon/alertmanager/alert_queue.hpp"
#include "daemon/alertmanager/notifier.hpp"
#include "eventually.hpp"
#include "self_signed.hpp"
#include "trickling_server.hpp"

using namespace rocewatch;
using namespace rocewatch::alertmanager;
using namespace std::chrono_literals;
using rocewatch::testing::eventually;

namespace {

OutgoingAlert numbered(int i) {
    OutgoingAlert a;
    a.labels["n"] = std::to_string(i);
    return a;
}

// An Alertmanager stand-in recording every POSTed alert's labels.
class FakeAlertmanager {
public:
    explicit FakeAlertmanager(int port = 0) {
        server_.Post("/api/v2/alerts", [this](const httplib::Request& req, httplib::Response& res) {
            std::lock_guard lock(mu_);
            auth_ = req.get_header_value("Authorization");
            for (const auto& a : nlohmann::json::parse(req.body)) received_.push_back(a);
            res.status = 200;
        });
        port_ = port ? (server_.bind_to_port("127.0.0.1", port) ? port : -1) : server_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
        while (port_ > 0 && !server_.is_running()) std::this_thread::sleep_for(5ms);
    }
    ~FakeAlertmanager() { stop(); }
    void stop() {
        server_.stop();
        if (thread_.joinable()) thread_.join();
    }
    int port() const { return port_; }
    std::vector<nlohmann::json> received() {
        std::lock_guard lock(mu_);
        return received_;
    }
    std::string auth() {
        std::lock_guard lock(mu_);
        return auth_;
    }

private:
    httplib::Server server_;
    int port_ = 0;
    std::thread thread_;
    std::mutex mu_;
    std::vector<nlohmann::json> received_;
    std::string auth_;
};

// The latest snapshot, swapped by the test while the notifier's watcher reads it.
class Snapshots {
public:
    explicit Snapshots(std::shared_ptr<const Snapshot> s) : s_(std::move(s)) {}
    std::shared_ptr<const Snapshot> get() const {
        std::lock_guard lock(mu_);
        return s_;
    }
    void set(std::shared_ptr<const Snapshot> s) {
        std::lock_guard lock(mu_);
        s_ = std::move(s);
    }

private:
    mutable std::mutex mu_;
    std::shared_ptr<const Snapshot> s_;
};

std::shared_ptr<const Snapshot> snapshot_with_firing_alert() {
    auto s = std::make_shared<Snapshot>();
    s->host.hostname = "spark-a";
    s->alerts.push_back(Alert{.rule = "mtu_low",
                              .object = "enp1s0f0np0",
                              .severity = Severity::critical,
                              .state = AlertState::firing,
                              .summary = "MTU 1500",
                              .action = "set MTU 9000",
                              .details = {},
                              .since = Clock::now(),
                              .first_seen = Clock::now(),
                              .last_seen = Clock::now()});
    return s;
}

Config config_for(const std::string& url) {
    Config c;
    c.daemon.listen = "127.0.0.1:9879";
    c.alertmanager.urls = {url};
    c.alertmanager.resend_interval = 1h;  // only first sends and catch-up in these tests
    c.alertmanager.timeout = 1s;
    return c;
}

// A port that was free a moment ago: connection refused. (A plain socket: httplib::Server keeps
// its socket open until stop(), and with SO_REUSEPORT a second server on the port would share
// the connections with it.) 0 when none could be had.
int refused_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    close(fd);
    return ok ? ntohs(a.sin_port) : 0;
}

std::shared_ptr<spdlog::logger> quiet() {
    return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// What a notifier for `c` logs until its first send has failed (5 s at most).
std::string log_of_a_failed_send(const Config& c, const std::shared_ptr<const Snapshot>& snap) {
    std::ostringstream text;
    auto log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
    Notifier n(c, {.snapshots = [&] { return snap; }, .log = log});
    n.start();
    EXPECT_TRUE(eventually([&] { return n.stats() && n.stats()->targets[0].errors >= 1; })) << "a send fails";
    n.stop();
    return text.str();
}

}  // namespace

TEST(AlertQueue, FullQueueDropsTheOldest) {
    AlertQueue q(3);
    EXPECT_EQ(q.push({numbered(1), numbered(2)}), 0u);
    EXPECT_EQ(q.push({numbered(3), numbered(4), numbered(5)}), 2u);
    EXPECT_EQ(q.size(), 3u);
    auto batch = q.pop(2, 0ms);
    ASSERT_EQ(batch.size(), 2u);
    EXPECT_EQ(batch[0].labels["n"], "3");
    EXPECT_EQ(batch[1].labels["n"], "4");
    EXPECT_EQ(q.pop(10, 0ms).size(), 1u);
    EXPECT_TRUE(q.pop(10, 10ms).empty()) << "nothing within the wait";
}

TEST(AlertQueue, CloseWakesAWaitingPop) {
    AlertQueue q(3);
    std::thread closer([&] {
        std::this_thread::sleep_for(50ms);
        q.close();
    });
    const auto t = std::chrono::steady_clock::now();
    EXPECT_TRUE(q.pop(1, 10s).empty());
    EXPECT_LT(std::chrono::steady_clock::now() - t, 5s);
    closer.join();
}

TEST(Notifier, DeliversFiringAlertsWithLabelsAndAnnotations) {
    FakeAlertmanager am;
    auto snap = snapshot_with_firing_alert();
    Config c = config_for("http://127.0.0.1:" + std::to_string(am.port()));
    char token_path[] = "/tmp/rw-am-token-XXXXXX";
    int fd = mkstemp(token_path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "s3cret\n", 7), 7);
    close(fd);
    c.alertmanager.bearer_token_file = token_path;
    Notifier n(c, {.snapshots = [&] { return snap; }, .log = quiet()});
    n.start();
    ASSERT_TRUE(eventually([&] { return !am.received().empty(); }));
    auto a = am.received()[0];
    EXPECT_EQ(a["labels"]["alertname"], "rocewatch_mtu_low");
    EXPECT_EQ(a["labels"]["node"], "spark-a") << "the host name when node is not set";
    EXPECT_EQ(a["annotations"]["action"], "set MTU 9000");
    EXPECT_EQ(a["generatorURL"], "http://127.0.0.1:9879/api/v1/alerts?rule=mtu_low&object=enp1s0f0np0");
    EXPECT_EQ(am.auth(), "Bearer s3cret");
    ASSERT_TRUE(eventually([&] { return n.stats() && n.stats()->targets[0].sent == 1; }));
    EXPECT_EQ(n.stats()->targets[0].errors, 0u);
    n.stop();
    unlink(token_path);
}

// Basic auth as Alertmanager's http_config writes it, and a refusal logged in its own words.
TEST(Notifier, SendsBasicAuthAndLogsARefusalInItsWords) {
    httplib::Server server;
    std::mutex mu;
    std::string auth;
    server.Post("/prefix/api/v2/alerts", [&](const httplib::Request& req, httplib::Response& res) {
        std::lock_guard lock(mu);
        auth = req.get_header_value("Authorization");
        res.status = 400;
        res.set_content("bad alerts: labels missing\n", "text/plain");
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread t([&] { server.listen_after_bind(); });
    auto snap = snapshot_with_firing_alert();
    Config c = config_for("http://127.0.0.1:" + std::to_string(port) + "/prefix/");
    char password_path[] = "/tmp/rw-am-password-XXXXXX";
    int fd = mkstemp(password_path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "pw\n", 3), 3);
    close(fd);
    c.alertmanager.basic_auth_username = "am";
    c.alertmanager.basic_auth_password_file = password_path;
    const std::string log_text = log_of_a_failed_send(c, snap);
    server.stop();
    t.join();
    unlink(password_path);
    EXPECT_EQ(auth, "Basic YW06cHc=");  // am:pw
    EXPECT_NE(log_text.find("HTTP 400: bad alerts: labels missing"), std::string::npos) << log_text;
}

// An https:// Alertmanager: delivered when its certificate chains to ca_file, refused (and
// logged in OpenSSL's words) when the CA is another, and never in plain HTTP.
TEST(Notifier, HttpsAlertmanagerIsVerifiedAgainstItsCa) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("rw-am-tls-" + std::to_string(::getpid()));
    const fs::path other = dir / "other";
    fs::create_directories(other);
    make_certificate(dir);    // Alertmanager's, for 127.0.0.1
    make_certificate(other);  // a CA that did not sign it
    httplib::SSLServer server((dir / "node.crt").c_str(), (dir / "node.key").c_str());
    std::atomic<int> posts{0};
    server.Post("/api/v2/alerts", [&](const httplib::Request&, httplib::Response& res) {
        ++posts;
        res.status = 200;
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread t([&] { server.listen_after_bind(); });
    auto snap = snapshot_with_firing_alert();
    const std::string url = "https://127.0.0.1:" + std::to_string(port);

    Config c = config_for(url);
    c.alertmanager.ca_file = (dir / "node.crt").string();
    Notifier n(c, {.snapshots = [&] { return snap; }, .log = quiet()});
    n.start();
    EXPECT_TRUE(eventually([&] { return n.stats() && n.stats()->targets[0].sent == 1; }));
    EXPECT_EQ(posts.load(), 1);
    n.stop();

    c.alertmanager.ca_file = (other / "node.crt").string();
    const std::string log_text = log_of_a_failed_send(c, snap);
    server.stop();
    t.join();
    fs::remove_all(dir);
    EXPECT_EQ(posts.load(), 1) << "nothing delivered to a server the CA does not vouch for";
    EXPECT_NE(log_text.find("certificate verify failed"), std::string::npos) << log_text;
}

TEST(Notifier, UnreachableAlertmanagerIsCountedThenCaughtUp) {
    Snapshots snaps(snapshot_with_firing_alert());
    const int port = refused_port();
    ASSERT_GT(port, 0);
    Notifier n(config_for("http://127.0.0.1:" + std::to_string(port)),
               {.snapshots = [&] { return snaps.get(); }, .log = quiet()});
    n.start();
    ASSERT_TRUE(eventually([&] { return n.stats()->targets[0].errors >= 1; }));
    EXPECT_EQ(n.stats()->targets[0].sent, 0u);

    // The alert resolves while nobody listens, and another one fires.
    auto next = std::make_shared<Snapshot>(*snaps.get());
    next->alerts[0].object = "enp1s0f1np1";
    snaps.set(next);
    const auto t = std::chrono::steady_clock::now();
    ASSERT_TRUE(eventually([&] { return n.stats()->targets[0].errors >= 3; }));

    // Alertmanager comes back on the same port; resend_interval (1 h) is far away.
    FakeAlertmanager am(port);
    ASSERT_EQ(am.port(), port);
    ASSERT_TRUE(eventually([&] { return am.received().size() >= 2; }, 10s));
    EXPECT_LT(std::chrono::steady_clock::now() - t, 10s);
    std::set<std::pair<std::string, bool>> seen;  // (object, resolved)
    const std::string now = rfc3339(Clock::now());
    for (const auto& a : am.received())
        seen.insert({a["labels"]["object"].get<std::string>(), a["endsAt"].get<std::string>() <= now});
    EXPECT_TRUE(seen.contains({"enp1s0f0np0", true})) << "the resolution missed while it was down";
    EXPECT_TRUE(seen.contains({"enp1s0f1np1", false})) << "the alert that fired while it was down";
    // Counted once Alertmanager's answer is read, which may come after its server has the post.
    EXPECT_TRUE(eventually([&] { return n.stats()->targets[0].sent >= 2u; })) << "sent: " << n.stats()->targets[0].sent;
    n.stop();
}

// With one of two Alertmanagers down, the catch-ups (everything, every 5 s until delivered) go
// to the one that is down; the healthy one gets each alert once (and its resends on their
// time). It got the whole book every 5 s for as long as the other was down.
TEST(Notifier, ACatchUpGoesOnlyToTheTargetThatMissedAlerts) {
    Snapshots snaps(snapshot_with_firing_alert());
    const int dead = refused_port();
    ASSERT_GT(dead, 0);
    FakeAlertmanager healthy;
    auto c = config_for("http://127.0.0.1:" + std::to_string(dead));
    c.alertmanager.urls.push_back("http://127.0.0.1:" + std::to_string(healthy.port()));
    Notifier n(c, {.snapshots = [&] { return snaps.get(); }, .log = quiet()});
    n.start();
    ASSERT_TRUE(eventually([&] { return healthy.received().size() >= 1; }));
    ASSERT_TRUE(eventually([&] { return n.stats()->targets[0].errors >= 2; }, 10s)) << "the dead one is caught up";
    std::this_thread::sleep_for(1s);  // the batch after the dead one's would have reached it by now
    EXPECT_EQ(healthy.received().size(), 1u) << "the healthy one got the alert once";
    EXPECT_EQ(n.stats()->targets[1].sent, 1u);
    n.stop();
}

// An Alertmanager (or a proxy before it) that trickles its answer: every read returns within
// the timeout, so only the POST's own deadline ends it. It held the notifier, and SIGTERM,
// for 49 s with timeout = "1s".
TEST(Notifier, ATricklingAlertmanagerFailsAtTheTimeoutAndStopIsPrompt) {
    rocewatch::testing::TricklingServer am("POST", "/api/v2/alerts");
    ASSERT_GT(am.port(), 0);
    auto snap = snapshot_with_firing_alert();
    Config c = config_for("http://127.0.0.1:" + std::to_string(am.port()));
    c.alertmanager.timeout = 500ms;
    Notifier n(c, {.snapshots = [&] { return snap; }, .log = quiet()});
    const auto t0 = std::chrono::steady_clock::now();
    n.start();
    ASSERT_TRUE(eventually([&] { return n.stats() && n.stats()->targets[0].errors >= 1; }, 5s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "the POST outlived its timeout";
    const auto t1 = std::chrono::steady_clock::now();
    n.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t1, 2s) << "stop waited for the trickle";
}

TEST(Notifier, NoUrlsNoStatsNoThreads) {
    Config c;
    auto snap = snapshot_with_firing_alert();
    Notifier n(c, {.snapshots = [&] { return snap; }, .log = quiet()});
    n.start();
    EXPECT_FALSE(n.stats());
    EXPECT_FALSE(n.running());
    n.stop();
}

// Threads start with the first url, even when a reload brings it; a stopped notifier starts none.
TEST(Notifier, AReloadNamingTheFirstUrlStartsDelivery) {
    FakeAlertmanager am;
    auto snap = snapshot_with_firing_alert();
    Notifier n(Config{}, {.snapshots = [&] { return snap; }, .log = quiet()});
    n.start();
    EXPECT_FALSE(n.running());
    n.apply_config(config_for("http://127.0.0.1:" + std::to_string(am.port())));
    EXPECT_TRUE(n.running());
    ASSERT_TRUE(eventually([&] { return am.received().size() >= 1; }));
    n.stop();
    EXPECT_FALSE(n.running());
    n.apply_config(config_for("http://127.0.0.1:" + std::to_string(am.port())));
    EXPECT_FALSE(n.running());
}
