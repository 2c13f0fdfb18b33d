// The peer and probe routes over a real HTTP server on loopback: shapes of bad requests,
// hostile headers, the 503 before the first snapshot, and what reaches the log.
#include <gtest/gtest.h>
#include <httplib.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>
#include <thread>

#include "api/peer_routes.hpp"
#include "api/probe_view.hpp"
#include "probes/budget.hpp"
#include "util/base64.hpp"
#include "util/log_safe.hpp"

using namespace rocewatch;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kToken = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

class Source final : public api::SnapshotSource {
public:
    std::shared_ptr<const Snapshot> latest() const override {
        std::lock_guard lk(mu_);
        return snap_;
    }
    void set(std::shared_ptr<const Snapshot> s) {
        std::lock_guard lk(mu_);
        snap_ = std::move(s);
    }

private:
    mutable std::mutex mu_;
    std::shared_ptr<const Snapshot> snap_;
};

struct PeerRoutesTest : ::testing::Test {
    std::ostringstream logged;
    std::shared_ptr<spdlog::logger> log =
        std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::ostream_sink_mt>(logged));
    std::shared_ptr<Config> cfg = std::make_shared<Config>();
    Source source;
    ProbeStore probe_store;
    ProbeScheduler scheduler{
        cfg,
        ProbeSchedulerDeps{.run = [](const ProbeJob&, const PeerHello&, Deadline) { return ProbeResult{}; },
                           .hello = [](const PeerConfig&, SteadyClock::time_point) { return PeerState{}; }},
        probe_store, log};
    SessionHost sessions;
    // No limits unless a test sets them; every session is admitted against it and charged.
    ProbeBudget budget{ProbeBudgetLimits{}};
    std::atomic<int> accepted{0};
    std::atomic<bool> hold{false};  // serve_bytes' sessions run until it is cleared (5 s at most)
    std::unique_ptr<api::ApiServer> server;
    std::unique_ptr<httplib::Client> cli;
    httplib::Headers auth{{"Authorization", std::string("Bearer ") + kToken}};

    void SetUp() override {
        cfg->peers = {PeerConfig{.name = "b", .address = "127.0.0.1:1"}};
        start(kToken, "");
    }
    // The routes on a new server: with `token` empty, peer probing is off for `no_probing`.
    void start(const std::string& token, const std::string& no_probing) {
        if (server) server->stop();
        server = api::ApiServer::create({.host = "127.0.0.1", .port = 0}, source, nullptr, log);
        // A session kind that refuses every request, naming the session id it was sent.
        SessionAccept refuse = [](const Config&, const Snapshot&, const json& r, const std::atomic<bool>*) {
            return std::make_pair(json{{"reason", "protocol_error"}, {"detail", r.value("id", "")}},
                                  std::function<ProbeResult()>{});
        };
        api::add_peer_routes(*server, {.snapshots = source,
                                       .config = cfg,
                                       .token_hex = token,
                                       .no_probing = no_probing,
                                       .data_port = 9880,
                                       .scheduler = scheduler,
                                       .sessions = sessions,
                                       .session_kinds = {{"/api/v1/peer/rdma", "RDMA", refuse},
                                                         {"/api/v1/peer/ucx", "UCX", serve_bytes()}},
                                       .log = log,
                                       .budget = &budget});
        server->start();
        cli = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    }
    void TearDown() override { server->stop(); }
    // A session kind that accepts and moves 1000 payload bytes.
    SessionAccept serve_bytes() {
        return [this](const Config&, const Snapshot&, const json&, const std::atomic<bool>*) {
            ++accepted;
            return std::make_pair(json{{"rails", json::array()}}, std::function<ProbeResult()>{[this] {
                                      for (int i = 0; i < 500 && hold; ++i) std::this_thread::sleep_for(10ms);
                                      ProbeResult r;
                                      r.success = true;
                                      r.bytes = 1000;
                                      return r;
                                  }});
        };
    }
};

// Valid JSON that is not an object answered 500 once (json::value on a non-object throws).
TEST_F(PeerRoutesTest, ProbeRunRefusesJsonThatIsNotAnObjectWith400) {
    source.set(std::make_shared<const Snapshot>());
    for (const char* body : {"[1,2,3]", "\"x\"", "null", "5", "{\"peer\":5}", "{\"kind\":[]}", "not json"}) {
        auto res = cli->Post("/api/v1/probes/run", auth, body, "application/json");
        ASSERT_TRUE(res) << body;
        EXPECT_EQ(res->status, 400) << body << ": " << res->body;
        EXPECT_NE(res->body.find("JSON object"), std::string::npos) << res->body;
    }
    auto res = cli->Post("/api/v1/probes/run", auth, R"({"peer": "nobody", "kind": "tcp_lat"})", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << "a well-formed request still reaches the lookup";
    // curl -d and Python's urllib send JSON as a form: no query parameters for all that.
    res = cli->Post("/api/v1/probes/run", auth, R"({"peer": "nobody", "kind": "tcp_lat"})",
                    "application/x-www-form-urlencoded");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << res->body;
    // ... past httplib's 8 KiB for forms too (it answered 413 under the documented 64 KiB).
    res = cli->Post("/api/v1/probes/run", auth,
                    R"({"peer": "nobody", "kind": "tcp_lat", "pad": ")" + std::string(9000, 'a') + "\"}",
                    "application/x-www-form-urlencoded");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << res->body;
}

// The body names the peer and the kind, and the rail where the kind runs over one: nothing is
// filled in for the caller (a missing kind ran tcp_lat, a missing rail the first rail).
TEST_F(PeerRoutesTest, ProbeRunWantsPeerKindAndTheRailOfAPerRailKind) {
    source.set(std::make_shared<const Snapshot>());
    cfg->peers = {PeerConfig{.name = "b", .address = "127.0.0.1:1", .rails = {PeerRailConfig{.name = "rail0"}}}};
    for (const auto& [body, says] : std::vector<std::pair<std::string, std::string>>{
             {R"({"peer": "b", "rail": "rail0"})", "kind is missing"},
             {R"({"rail": "rail0", "kind": "tcp_lat"})", "peer is missing"},
             {R"({"peer": "b", "kind": "tcp_lat"})", "rail is missing"},
             {R"({"peer": "b", "rail": "", "kind": "tcp_lat"})", "rail is missing"},
             // A per-peer kind with a rail: said so, where a 404 "no configured peer/rail" misled.
             {R"({"peer": "b", "rail": "rail0", "kind": "ucx_put_lat"})", "runs per peer, over all its rails"}}) {
        auto res = cli->Post("/api/v1/probes/run", auth, body, "application/json");
        ASSERT_TRUE(res) << body;
        EXPECT_EQ(res->status, 400) << body << ": " << res->body;
        EXPECT_NE(res->body.find(says), std::string::npos) << body << ": " << res->body;
    }
    auto res = cli->Post("/api/v1/probes/run?x=1", auth, R"({"peer": "b", "rail": "rail0", "kind": "tcp_lat"})",
                         "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << "an unknown query parameter: " << res->body;
}

// GET /probe wants the peer token (issue 11: it ran probes for anyone); an unknown target is
// the probe's failure, 200 with probe_success 0, as blackbox_exporter answers; a kind that is
// not in probes.enabled is not run.
TEST_F(PeerRoutesTest, BlackboxProbeWantsTheTokenAndAnswersUnknownTargetsAsAFailedProbe) {
    source.set(std::make_shared<const Snapshot>());
    auto res = cli->Get("/probe?target=b&module=tcp_lat");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401);
    EXPECT_NE(res->get_header_value("WWW-Authenticate").find("Basic"), std::string::npos);
    res = cli->Get("/probe?target=nobody&module=tcp_lat", auth);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_NE(res->body.find("\nprobe_success 0\n"), std::string::npos) << res->body;
    EXPECT_NE(res->body.find("probe_failure_info{reason=\"unknown_target\"} 1"), std::string::npos) << res->body;
    for (const char* twice :
         {"/probe?target=nobody&module=tcp_lat&target=b", "/probe?target=b&module=tcp_lat&target=b",
          "/probe?target=b&module=tcp_lat&%74arget=b", "/probe?target=b&module=tcp_lat&module=tcp_lat"}) {
        res = cli->Get(twice, auth);
        ASSERT_TRUE(res) << twice;
        EXPECT_EQ(res->status, 400) << twice << ": " << res->body;
        EXPECT_NE(res->body.find("given more than once"), std::string::npos) << res->body;
    }
    // Enabled by default: queued (the scheduler is not running here) until the 0.1 s bound.
    auto quick = auth;
    quick.emplace("X-Prometheus-Scrape-Timeout-Seconds", "0.6");
    res = cli->Get("/probe?target=b&module=tcp_bw", quick);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    cfg->probes.enabled = {"tcp_lat"};
    res = cli->Get("/probe?target=b&module=tcp_bw", quick);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
}

// What a caller got wrong is said in its terms: a missing module (not "must be a kind", with
// every kind listed), the kinds enabled here, a peer without a trailing "/", a filter the
// hello does not take.
TEST_F(PeerRoutesTest, MistakesAreNamedAsTheCallerMadeThem) {
    source.set(std::make_shared<const Snapshot>());
    cfg->probes.enabled = {"tcp_lat"};
    auto res = cli->Get("/probe?target=b", auth);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_NE(res->body.find("module is missing: /probe?target=PEER&module=KIND, KIND one of probes.enabled (tcp_lat)"),
              std::string::npos)
        << res->body;
    res = cli->Get("/probe?target=b&module=nope", auth);
    ASSERT_TRUE(res);
    EXPECT_NE(res->body.find("module nope is not a probe kind this daemon runs"), std::string::npos) << res->body;
    res = cli->Post("/api/v1/probes/run", auth, R"({"peer": "nobody", "kind": "tcp_lat"})", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404);
    EXPECT_NE(res->body.find("\"no configured peer nobody\""), std::string::npos) << res->body;
    res = cli->Get("/api/v1/peer/hello?x=1", auth);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
}

// GET / says what each route does, the probe routes included (they said null).
TEST_F(PeerRoutesTest, TheIndexDescribesEveryRoute) {
    auto res = cli->Get("/");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    const auto j = json::parse(res->body);
    size_t described = 0;
    for (const auto& e : j.at("endpoints")) {
        EXPECT_TRUE(e.at("description").is_string()) << e.dump();
        described += e.at("description").is_string();
    }
    EXPECT_GE(described, 6u) << j.dump();
}

// /probe scrapes and a POST run share one bound of three waits, so one general worker of the
// default four stays for the REST routes: a POST run counted apart, and with three scrapes
// waiting it took that worker too (GET /api/v1/status waited 6 s).
TEST_F(PeerRoutesTest, ProbeScrapesAndAPostRunShareOneBoundOfWaits) {
    source.set(std::make_shared<const Snapshot>());
    auto slow = auth;
    slow.emplace("X-Prometheus-Scrape-Timeout-Seconds", "2");  // queued: the scheduler is not running
    std::vector<std::thread> scrapes;
    for (int i = 0; i < 3; ++i)
        scrapes.emplace_back([&] {
            httplib::Client c("127.0.0.1", server->port());
            auto r = c.Get("/probe?target=b&module=tcp_lat", slow);
            EXPECT_TRUE(r && r->status == 200);
        });
    std::this_thread::sleep_for(300ms);  // the three are waiting
    auto res = cli->Post("/api/v1/probes/run", auth, R"({"peer": "b", "kind": "tcp_lat"})", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 429) << res->body;
    EXPECT_NE(res->body.find("3 probe requests are waiting already"), std::string::npos) << res->body;
    const auto t0 = std::chrono::steady_clock::now();
    res = cli->Get("/api/v1/config");
    EXPECT_TRUE(res);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "a general worker was free";
    for (auto& t : scrapes) t.join();
}

// As blackbox_exporter: no target is a job misconfigured, 400, not a probe of nobody; and a
// per-rail kind to a peer of several rails needs its rail (the first is not picked), while a
// peer's only rail needs no naming.
TEST_F(PeerRoutesTest, BlackboxProbeWantsATargetAndTheRailWhereAPeerHasSeveral) {
    source.set(std::make_shared<const Snapshot>());
    cfg->peers = {PeerConfig{.name = "one", .address = "127.0.0.1:1", .rails = {PeerRailConfig{.name = "rail0"}}},
                  PeerConfig{.name = "two",
                             .address = "127.0.0.1:1",
                             .rails = {PeerRailConfig{.name = "rail0"}, PeerRailConfig{.name = "rail1"}}}};
    auto quick = auth;
    quick.emplace("X-Prometheus-Scrape-Timeout-Seconds", "0.6");
    for (const char* no_target : {"/probe?module=tcp_lat", "/probe?target=&module=tcp_lat&rail=rail0"}) {
        auto res = cli->Get(no_target, quick);
        ASSERT_TRUE(res) << no_target;
        EXPECT_EQ(res->status, 400) << no_target << ": " << res->body;
        EXPECT_NE(res->body.find("target is missing"), std::string::npos) << res->body;
    }
    auto res = cli->Get("/probe?target=two&module=tcp_lat", quick);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
    EXPECT_NE(res->body.find("rail is missing: tcp_lat runs over one rail of two, which has 2"), std::string::npos)
        << res->body;
    // Queued (the scheduler is not running here) until the bound: a probe, not a refusal.
    for (const char* runs : {"/probe?target=two&module=tcp_lat&rail=rail1", "/probe?target=one&module=tcp_lat"}) {
        res = cli->Get(runs, quick);
        ASSERT_TRUE(res) << runs;
        EXPECT_EQ(res->status, 200) << runs << ": " << res->body;
        EXPECT_EQ(res->body.find("unknown_target"), std::string::npos) << runs << ": " << res->body;
    }
}

// "Every document under /api/v1 carries api_version" (docs/api.md): the hello too.
TEST_F(PeerRoutesTest, HelloCarriesTheApiVersion) {
    source.set(std::make_shared<const Snapshot>());
    auto res = cli->Get("/api/v1/peer/hello", auth);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const auto j = json::parse(res->body);
    EXPECT_EQ(j.value("api_version", 0), 2) << res->body;
    EXPECT_EQ(j.value("data_port", 0), 9880) << res->body;
}

// With no token there is no probing: POST /api/v1/probes/run says so, as /probe and the peer
// session routes do, rather than 401, which told the caller its credentials were wrong.
TEST_F(PeerRoutesTest, EveryProbeRouteSaysProbingIsOff) {
    source.set(std::make_shared<const Snapshot>());
    start("", "no peer token file");
    auto res = cli->Post("/api/v1/probes/run", R"({"peer": "b", "kind": "tcp_lat"})", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503) << res->body;
    EXPECT_NE(res->body.find("peer probing is off: no peer token file"), std::string::npos) << res->body;
    res = cli->Get("/probe?target=b&module=tcp_lat");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503) << res->body;
    res = cli->Post("/api/v1/peer/rdma", "{}", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503) << res->body;
    // The hello too (it answered 401, and the prober looked for a token mismatch), with the
    // reason a prober tells from a busy peer by.
    res = cli->Get("/api/v1/peer/hello", {{"Authorization", "Bearer " + std::string(64, 'a')}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503) << res->body;
    EXPECT_EQ(json::parse(res->body).value("reason", ""), "peer_probing_off") << res->body;
    EXPECT_NE(res->body.find("peer probing is off: no peer token file"), std::string::npos) << res->body;
}

static std::string b64(const std::string& in) { return base64_encode(in); }

TEST(Credentials, TheTokenAsBearerOrAsBasicAuthPassword) {
    EXPECT_EQ(b64("prometheus:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"),
              "cHJvbWV0aGV1czowMDExMjIzMzQ0NTU2Njc3ODg5OWFhYmJjY2RkZWVmZjAwMTEyMjMzNDQ1NTY2Nzc4ODk5YWFiYmNjZGRlZWZm");
    const std::string tok = kToken;
    EXPECT_TRUE(api::credentials_match("Bearer " + tok, tok));
    EXPECT_FALSE(api::credentials_match("Bearer x" + tok, tok));
    // base64("prometheus:<token>") and base64(":<token>"): any user name, the token as password.
    EXPECT_TRUE(api::credentials_match("Basic " + b64("prometheus:" + tok), tok));
    EXPECT_TRUE(api::credentials_match("Basic " + b64(":" + tok), tok));
    // The scheme's name is case-insensitive (RFC 9110, 11.1).
    EXPECT_TRUE(api::credentials_match("bearer " + tok, tok));
    EXPECT_TRUE(api::credentials_match("BEARER " + tok, tok));
    EXPECT_TRUE(api::credentials_match("basic " + b64("prometheus:" + tok), tok));
    EXPECT_FALSE(api::credentials_match("bearer" + tok, tok));
    EXPECT_FALSE(api::credentials_match("Basic " + b64("prometheus:" + tok + "x"), tok));
    EXPECT_FALSE(api::credentials_match("Basic " + b64(tok), tok)) << "no colon";
    EXPECT_FALSE(api::credentials_match("Basic !!!!", tok));
    EXPECT_FALSE(api::credentials_match("Basic " + b64("u:"), "")) << "no token: no access";
    EXPECT_FALSE(api::credentials_match("", tok));
}

// A NaN reached a double -> integer cast (undefined); infinities and negatives must not
// give an unbounded or negative wait either.
TEST(ProbeTimeout, ScrapeTimeoutHeaderIsFiniteAndClamped) {
    EXPECT_DOUBLE_EQ(api::probe_timeout_seconds(""), 9.5);
    EXPECT_DOUBLE_EQ(api::probe_timeout_seconds("5"), 4.5);
    EXPECT_DOUBLE_EQ(api::probe_timeout_seconds("-1"), 0.1);
    EXPECT_DOUBLE_EQ(api::probe_timeout_seconds("3600"), 60.0);
    for (const char* junk : {"nan", "NaN", "inf", "-inf", "1e400", "5s", "abc"})
        EXPECT_DOUBLE_EQ(api::probe_timeout_seconds(junk), 9.5) << junk;
}

TEST_F(PeerRoutesTest, NoSnapshotYetIs503WithRetryAfter) {
    std::vector<httplib::Result> answers;
    answers.push_back(cli->Get("/api/v1/peer/hello", auth));
    answers.push_back(cli->Get("/api/v1/probes"));
    answers.push_back(cli->Post("/api/v1/peer/rdma", auth, "{}", "application/json"));
    for (const auto& res : answers) {
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 503);
        EXPECT_EQ(res->get_header_value("Retry-After"), "1");
    }
}

// Session ids come from peers: logged bounded, one line, printable.
TEST_F(PeerRoutesTest, PeerSuppliedSessionIdsAreLoggedEscapedAndBounded) {
    source.set(std::make_shared<const Snapshot>());
    const std::string id = "evil\r\nFAKE LOG LINE\x01" + std::string(60000, 'A');
    auto res = cli->Post("/api/v1/peer/rdma", auth, json{{"end_session", id}}.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    log->flush();
    const std::string text = logged.str();
    EXPECT_EQ(text.find("\r"), std::string::npos);
    EXPECT_EQ(text.find("\nFAKE"), std::string::npos) << "no forged line";
    EXPECT_NE(text.find("evil\\x0d\\x0aFAKE LOG LINE\\x01"), std::string::npos) << text.substr(0, 300);
    EXPECT_LT(text.size(), 1000u) << "a 60 KB id is cut";
}

// The RDMA and UCX session routes answer to the node's probe budget: each session a peer asks
// for is admitted as one run (even one the session kind then refuses) and charged the bytes it
// moved; once the minute's runs are spent the peer gets 503 peer_busy with Retry-After 30 before
// the session kind is asked at all.
TEST_F(PeerRoutesTest, SessionsAreAdmittedAgainstTheProbeBudgetAndCharged) {
    source.set(std::make_shared<const Snapshot>());
    budget.set_limits({.runs_per_minute = 2, .bytes_per_minute = 0});
    auto res = cli->Post("/api/v1/peer/ucx", auth, "{}", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(accepted.load(), 1);
    // The session runs on the session host's thread: its bytes are charged when it ends.
    for (int i = 0; i < 200 && budget.stats().bytes[1] < 1000; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(budget.stats().bytes[1], 1000u);
    // The second: admitted, then refused by the session kind (422); the run still counts.
    for (int i = 0; i < 200; ++i) {
        res = cli->Post("/api/v1/peer/rdma", auth, "{}", "application/json");
        ASSERT_TRUE(res);
        if (res->status != 503) break;  // the first session's slot not yet released
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(res->status, 422) << res->body;
    EXPECT_EQ(budget.stats().admitted[1], 2u);
    // The third: the minute's two runs are spent.
    res = cli->Post("/api/v1/peer/ucx", auth, "{}", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503);
    EXPECT_EQ(res->get_header_value("Retry-After"), "30");
    const auto body = json::parse(res->body);
    EXPECT_EQ(body.value("reason", ""), "peer_busy");
    EXPECT_EQ(body.value("detail", "").find("another probe session"), std::string::npos) << body.dump();
    EXPECT_EQ(accepted.load(), 1) << "the session kind is not asked once the budget is spent";
    EXPECT_EQ(budget.stats().refused[1], 1u);
    EXPECT_EQ(budget.stats().admitted[0], 0u) << "peers' sessions count on the peer side only";
}

// A peer's bandwidth session moves bulk through this node: while it runs, the budget says so
// (our latency probes and the data port's echo wait it out), and stops saying so when it ends.
// A latency session is no bulk.
TEST_F(PeerRoutesTest, BandwidthSessionsMarkBulkWhileTheyRun) {
    source.set(std::make_shared<const Snapshot>());
    const auto run = [&](const char* kind) {
        hold = true;
        auto res = cli->Post("/api/v1/peer/ucx", auth, json{{"kind", kind}}.dump(), "application/json");
        EXPECT_TRUE(res && res->status == 200) << kind;
        const bool during = budget.moving_bulk();
        hold = false;
        for (int i = 0; i < 500 && sessions.busy(); ++i) std::this_thread::sleep_for(10ms);
        EXPECT_FALSE(sessions.busy());
        EXPECT_FALSE(budget.moving_bulk()) << kind << ": the mark ends with the session";
        return during;
    };
    EXPECT_TRUE(run("ucx_put_bw"));
    EXPECT_FALSE(run("ucx_put_lat"));
    EXPECT_TRUE(run("rdma_multirail_bw"));
}

TEST(LogSafe, EscapesAndBounds) {
    EXPECT_EQ(rocewatch::log_safe("plain id-42"), "plain id-42");
    EXPECT_EQ(rocewatch::log_safe(std::string("a\0b", 3)), "a\\x00b");
    EXPECT_EQ(rocewatch::log_safe("back\\slash"), "back\\\\slash");
    EXPECT_EQ(rocewatch::log_safe("\xff\xfe"), "\\xff\\xfe");
    EXPECT_EQ(rocewatch::log_safe(std::string(10, 'x'), 4), "xxxx...(10 bytes)");
}

}  // namespace
