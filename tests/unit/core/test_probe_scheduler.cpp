// ProbeScheduler on a fake clock: intervals, jitter bounds, busy skips, hello failures, on-demand runs.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <set>

#include "daemon/core/probe_scheduler.hpp"

using namespace rocewatch;
using namespace std::chrono_literals;

namespace {

// A peer that answers its hello (data port 9880).
PeerState good_hello(const PeerConfig& p, SteadyClock::time_point) {
    PeerState st;
    st.name = p.name;
    st.address = p.address;
    st.hello_ok = true;
    st.hello = PeerHello{.version = "0.1.0", .protocol_version = 1, .data_port = 9880};
    return st;
}

struct SchedulerTest : ::testing::Test {
    SteadyClock::time_point now = SteadyClock::time_point{} + 1000h;
    ProbeStore store;
    std::vector<std::pair<ProbeKind, SteadyClock::time_point>> runs;
    std::optional<double> utilisation;
    int hellos = 0;
    std::vector<ProbeJob> jobs;
    std::vector<SteadyClock::time_point> hello_deadlines;
    std::function<bool(ProbeKind)> available = [](ProbeKind k) { return is_tcp_kind(k); };
    std::string hello_error;              // "" = hello succeeds
    std::string run_reason;               // "" = the run succeeds
    std::function<TimePoint()> wall_now;  // unset: the real clock
    std::shared_ptr<spdlog::logger> log =
        std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());

    std::shared_ptr<Config> config() {
        auto c = std::make_shared<Config>();
        c->probes.tcp_lat.interval = 30s;
        c->probes.tcp_lat.jitter = 3s;
        c->probes.tcp_bw.interval = 15min;
        c->probes.tcp_bw.jitter = 0s;
        c->peers = {PeerConfig{.name = "spark-b",
                               .address = "10.0.0.2:9879",
                               .rails = {{"rail0", "", "10.1.0.1", "10.1.0.2", "", ""}}}};
        return c;
    }

    std::unique_ptr<ProbeScheduler> make(std::shared_ptr<Config> c) {
        ProbeSchedulerDeps d{
            .run =
                [this](const ProbeJob& j, const PeerHello& h, Deadline deadline) {
                    runs.emplace_back(j.kind, now);
                    jobs.push_back(j);
                    EXPECT_EQ(h.data_port, 9880);
                    EXPECT_GT(deadline.at, now);
                    EXPECT_NE(deadline.cancel, nullptr) << "the scheduler can pull every run's deadline in";
                    ProbeResult r;
                    r.success = run_reason.empty();
                    r.reason = run_reason;
                    r.duration_seconds = 0.01;
                    return r;
                },
            .hello =
                [this](const PeerConfig& p, SteadyClock::time_point deadline) {
                    ++hellos;
                    hello_deadlines.push_back(deadline);
                    PeerState st;
                    st.name = p.name;
                    st.hello_ok = hello_error.empty();
                    st.hello_error = hello_error;
                    if (st.hello_ok) st.hello = PeerHello{.version = "0.1.0", .protocol_version = 1, .data_port = 9880};
                    return st;
                },
            .rail_utilisation = [this](const ProbeJob&) { return utilisation; },
            .available = [this](ProbeKind k) { return available(k); },
            .now = [this] { return now; },
        };
        if (wall_now) d.wall_now = wall_now;
        return std::make_unique<ProbeScheduler>(c, std::move(d), store, log, 42);
    }

    size_t count(ProbeKind k) const {
        return static_cast<size_t>(
            std::count_if(runs.begin(), runs.end(), [&](const auto& r) { return r.first == k; }));
    }
};

TEST_F(SchedulerTest, RunsEachKindOnItsIntervalWithinItsJitter) {
    auto s = make(config());
    auto start = now;
    for (int i = 0; i < 1200; ++i) {  // twenty minutes in one-second steps
        s->run_due(now);
        now += 1s;
    }
    // Latency every 30-33 s over 1200 s: 36 to 41 runs; bandwidth at the start and at 15 min.
    EXPECT_GE(count(ProbeKind::tcp_lat), 36u);
    EXPECT_LE(count(ProbeKind::tcp_lat), 41u);
    EXPECT_EQ(count(ProbeKind::tcp_bw), 2u);
    EXPECT_LE(runs.front().second - start, 3s) << "the first run waits at most the jitter";
    EXPECT_LE(hellos, 21) << "a good hello is reused for a minute, not asked per probe";
    EXPECT_GE(hellos, 15) << "and asked again after a minute (MTU or port may change)";
    auto book = store.latest();
    const ProbeResult* r = book->latest({"spark-b", "rail0", ProbeKind::tcp_lat});
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->success);
    EXPECT_EQ(book->results.at({"spark-b", "rail0", ProbeKind::tcp_lat}).size(), ProbeBook::kHistoryLimit)
        << "history is bounded";
    EXPECT_TRUE(book->peers.at("spark-b").hello_ok);
}

TEST_F(SchedulerTest, BusyRailSkipsBandwidthAndSaysSo) {
    utilisation = 0.8;  // busy_fraction defaults to 0.5
    auto s = make(config());
    for (int i = 0; i < 5; ++i) {
        s->run_due(now);
        now += 1s;
    }
    EXPECT_EQ(count(ProbeKind::tcp_bw), 0u);
    EXPECT_GE(count(ProbeKind::tcp_lat), 1u) << "latency probes are light and still run";
    const ProbeResult* r = store.latest()->latest({"spark-b", "rail0", ProbeKind::tcp_bw});
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->success);
    EXPECT_EQ(r->reason, kReasonSkippedBusy);
    EXPECT_NE(r->detail.find("80%"), std::string::npos) << r->detail;
}

// A peer serving another peer's session answers peer_busy: the bandwidth probe is tried
// again within 5-10 s, not a whole 15 min interval later, and once it runs the interval
// applies again.
TEST_F(SchedulerTest, APeerBusyProbeIsRetriedSoonNotAnIntervalLater) {
    auto c = config();
    c->probes.tcp_lat.interval = 1h;  // keep the latency probe out of the way
    auto s = make(c);
    run_reason = kReasonPeerBusy;
    std::vector<SteadyClock::time_point> bw_runs;
    for (int i = 0; i < 60; ++i) {  // one minute in one-second steps
        const size_t before = count(ProbeKind::tcp_bw);
        s->run_due(now);
        if (count(ProbeKind::tcp_bw) > before) bw_runs.push_back(now);
        if (bw_runs.size() == 3) run_reason.clear();  // the peer is free again
        now += 1s;
    }
    ASSERT_GE(bw_runs.size(), 4u) << "busy answers are retried within the minute";
    for (size_t i = 1; i < 3; ++i) {
        EXPECT_GE(bw_runs[i] - bw_runs[i - 1], 5s);
        EXPECT_LE(bw_runs[i] - bw_runs[i - 1], 11s);
    }
    EXPECT_EQ(bw_runs.size(), 4u) << "after a run that ran, the next is 15 min away";
    const ProbeResult* r = store.latest()->latest({"spark-b", "rail0", ProbeKind::tcp_bw});
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->success);
}

// While a bandwidth probe's bulk moves through this node, a scheduled latency probe would
// measure the queue it builds: it is put off (skipped_busy, not a failure) and tried again
// within seconds once the bulk is gone. Our own bandwidth runs hold the bulk mark while they run,
// and only they.
TEST_F(SchedulerTest, LatencyProbesWaitOutBulkAndBandwidthRunsMarkIt) {
    auto c = config();
    c->probes.tcp_lat.interval = 30s;
    c->probes.tcp_lat.jitter = 0s;
    int marks = 0;
    bool bulk_from_peer = true;
    std::vector<std::pair<ProbeKind, int>> marks_during_run;
    auto s = [&] {
        ProbeSchedulerDeps d{
            .run =
                [&](const ProbeJob& j, const PeerHello&, Deadline) {
                    runs.emplace_back(j.kind, now);
                    marks_during_run.emplace_back(j.kind, marks);
                    ProbeResult r;
                    r.success = true;
                    return r;
                },
            .hello = good_hello,
            .now = [this] { return now; },
        };
        d.mark_bulk = [&] {
            ++marks;
            return std::shared_ptr<void>(nullptr, [&](void*) { --marks; });
        };
        d.moving_bulk = [&] { return bulk_from_peer || marks > 0; };
        return std::make_unique<ProbeScheduler>(c, std::move(d), store, log, 42);
    }();
    for (int i = 0; i < 20; ++i) {
        s->run_due(now);
        now += 1s;
    }
    EXPECT_EQ(count(ProbeKind::tcp_lat), 0u) << "no latency probe while bulk moves";
    EXPECT_EQ(count(ProbeKind::tcp_bw), 1u) << "bandwidth probes are not held back by bulk";
    const ProbeResult* r = store.latest()->latest({"spark-b", "rail0", ProbeKind::tcp_lat});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->reason, kReasonSkippedBusy);
    EXPECT_FALSE(probe_ran(*r)) << "put off, not failed";
    EXPECT_NE(r->detail.find("bulk"), std::string::npos) << r->detail;
    bulk_from_peer = false;
    const auto freed = now;
    for (int i = 0; i < 15 && count(ProbeKind::tcp_lat) == 0; ++i) {
        s->run_due(now);
        now += 1s;
    }
    ASSERT_EQ(count(ProbeKind::tcp_lat), 1u);
    EXPECT_LE(runs.back().second - freed, 11s) << "tried again within seconds, not a 30 s interval later";
    for (const auto& [kind, held] : marks_during_run)
        EXPECT_EQ(held, is_bandwidth_kind(kind) ? 1 : 0) << to_string(kind) << " run with " << held << " bulk marks";
    EXPECT_EQ(marks, 0) << "the mark ends with the run";
    // An on-demand latency probe asked for by a person runs anyway.
    bulk_from_peer = true;
    auto job = s->find_job("spark-b", "rail0", ProbeKind::tcp_lat);
    ASSERT_TRUE(job);
    auto f = s->submit(*job);
    ASSERT_TRUE(f);
    s->run_due(now);
    EXPECT_TRUE(f->get().success);
}

TEST_F(SchedulerTest, FailedHelloIsTheProbesReasonAndIsRetried) {
    hello_error = "auth_refused";
    auto s = make(config());
    for (int i = 0; i < 40; ++i) {
        s->run_due(now);
        now += 1s;
    }
    EXPECT_TRUE(runs.empty());
    const ProbeResult* r = store.latest()->latest({"spark-b", "rail0", ProbeKind::tcp_lat});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->reason, "auth_refused");
    EXPECT_GE(hellos, 3) << "a failed hello is not cached";
    EXPECT_FALSE(store.latest()->peers.at("spark-b").hello_ok);
}

TEST_F(SchedulerTest, OnDemandProbesRunOnTheWorkerAndTheQueueIsBounded) {
    auto s = make(config());
    auto job = s->find_job("spark-b", "rail0", ProbeKind::tcp_lat);
    ASSERT_TRUE(job);
    EXPECT_FALSE(s->find_job("spark-c", "", ProbeKind::tcp_lat));
    // Four wait (three concurrent /probe scrapes and one more); the fifth is refused.
    auto f1 = s->submit(*job);
    auto f2 = s->submit(*job);
    auto f3 = s->submit(*job);
    auto f4 = s->submit(*job);
    auto f5 = s->submit(*job);
    ASSERT_TRUE(f1 && f2 && f3 && f4);
    EXPECT_FALSE(f5) << "a full queue refuses";
    EXPECT_EQ(f1->wait_for(0s), std::future_status::timeout) << "nothing runs on the caller's thread";
    s->run_due(now);
    ASSERT_EQ(f1->wait_for(0s), std::future_status::ready);
    EXPECT_TRUE(f1->get().success);
    EXPECT_EQ(f1->get().rail, "rail0");
}

// A kind not in probes.enabled runs only when asked: nothing replaces its result, so it is
// kept for kOnDemandKeep and then dropped (a failed one-off held probe_failed for good).
TEST_F(SchedulerTest, AnOnDemandResultOfAnUnscheduledKindIsDroppedAfterItsKeep) {
    TimePoint wall = Clock::now();
    wall_now = [&] { return wall; };
    auto c = config();
    c->probes.enabled = {"tcp_lat"};
    auto s = make(c);
    run_reason = "timeout";
    auto f = s->submit(*s->find_job("spark-b", "rail0", ProbeKind::tcp_bw));
    ASSERT_TRUE(f);
    s->run_due(now);                   // plans, and runs the one asked for
    auto next = s->run_due(now + 5s);  // past tcp_lat's jitter: both ran
    ASSERT_EQ(f->wait_for(0s), std::future_status::ready);
    const auto has = [&](ProbeKind k) {
        for (const auto& [key, results] : store.latest()->results)
            if (key.kind == k && !results.empty()) return true;
        return false;
    };
    EXPECT_TRUE(has(ProbeKind::tcp_bw)) << "judged while fresh";
    EXPECT_TRUE(has(ProbeKind::tcp_lat));
    EXPECT_LE(next, now + 5s + ProbeScheduler::kOnDemandKeep) << "the scheduler wakes to drop it";

    wall += ProbeScheduler::kOnDemandKeep - 1s;
    s->run_due(now + 5s + ProbeScheduler::kOnDemandKeep - 1s);
    EXPECT_TRUE(has(ProbeKind::tcp_bw)) << "kept until its keep is over";
    wall += 1s;
    s->run_due(now + 5s + ProbeScheduler::kOnDemandKeep);
    EXPECT_FALSE(has(ProbeKind::tcp_bw)) << "dropped once it is";
    EXPECT_TRUE(has(ProbeKind::tcp_lat)) << "a scheduled kind's result stays: its next run replaces it";
}

TEST_F(SchedulerTest, AReloadDropsPeersNoLongerConfigured) {
    auto s = make(config());
    s->run_due(now + 5s);
    ASSERT_FALSE(store.latest()->results.empty());
    auto c = config();
    c->peers.clear();
    s->apply_config(c);
    s->run_due(now + 10s);
    EXPECT_TRUE(store.latest()->results.empty());
    EXPECT_TRUE(store.latest()->peers.empty());
}

// A reload keeps each probe's turn: a config push to a whole cluster re-ran every bandwidth
// probe on every node within its jitter, all rails at once. A shorter interval still applies.
TEST_F(SchedulerTest, AReloadKeepsEachProbesTurn) {
    auto s = make(config());
    for (int i = 0; i < 60; ++i, now += 1s) s->run_due(now);
    ASSERT_EQ(count(ProbeKind::tcp_bw), 1u) << "the first run, at start";
    s->apply_config(config());  // nothing changed
    for (int i = 0; i < 120; ++i, now += 1s) s->run_due(now);
    EXPECT_EQ(count(ProbeKind::tcp_bw), 1u) << "no second bandwidth run two minutes after a reload";
    EXPECT_GE(count(ProbeKind::tcp_lat), 5u) << "latency goes on at its pace";
    auto shorter = config();
    shorter->probes.tcp_bw.interval = 1min;
    s->apply_config(shorter);
    for (int i = 0; i < 61; ++i, now += 1s) s->run_due(now);
    EXPECT_EQ(count(ProbeKind::tcp_bw), 2u) << "a shorter interval is not waited out at the old one";
}

TEST_F(SchedulerTest, WorkerThreadStopsPromptly) {
    auto c = config();
    auto s = std::make_unique<ProbeScheduler>(
        c,
        ProbeSchedulerDeps{.run = [](const ProbeJob&, const PeerHello&, Deadline) { return ProbeResult{}; },
                           .hello = [](const PeerConfig&, SteadyClock::time_point) { return PeerState{}; }},
        store, log, 1);
    s->start();
    auto t0 = std::chrono::steady_clock::now();
    s->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

// A stop (or a reload, which stops and starts the worker) does not wait out a running
// probe's budget: its deadline is pulled in, the on-demand caller hears "stopped", and the
// cut-short run is not kept as a verdict on the peer.
TEST_F(SchedulerTest, StopPullsInTheRunningProbesDeadline) {
    auto c = config();
    c->probes.tcp_lat.timeout = 10min;
    std::promise<void> running;
    auto s = std::make_unique<ProbeScheduler>(
        c,
        ProbeSchedulerDeps{.run =
                               [&](const ProbeJob& j, const PeerHello&, Deadline d) {
                                   running.set_value();
                                   while (!d.expired()) std::this_thread::sleep_for(d.wait_slice());
                                   ProbeResult r;
                                   r.kind = j.kind;
                                   r.reason = "timeout";
                                   r.detail = "no answer";
                                   return r;
                               },
                           .hello = good_hello,
                           .available = [](ProbeKind k) { return k == ProbeKind::tcp_lat; }},
        store, log, 1);
    auto job = s->find_job("spark-b", "rail0", ProbeKind::tcp_lat);
    ASSERT_TRUE(job);
    auto f = s->submit(*job);
    ASSERT_TRUE(f);
    s->start();
    ASSERT_EQ(running.get_future().wait_for(5s), std::future_status::ready);
    auto t0 = std::chrono::steady_clock::now();
    s->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "not the probe's 10 min budget";
    ASSERT_EQ(f->wait_for(0s), std::future_status::ready);
    const ProbeResult r = f->get();
    EXPECT_EQ(r.reason, kReasonStopped);
    EXPECT_NE(r.detail.find("(timeout: no answer)"), std::string::npos) << r.detail;
    auto book = store.latest();
    EXPECT_EQ(book->latest({"spark-b", "rail0", ProbeKind::tcp_lat}), nullptr) << "a cut-short run is not kept";
}

}  // namespace

TEST_F(SchedulerTest, PeerLevelKindsRunOncePerPeerAndRailKindsOncePerRail) {
    auto c = config();
    c->peers[0].rails.push_back({"rail1", "", "10.2.0.1", "10.2.0.2", "", ""});
    c->probes.enabled = {"tcp_lat", "rdma_write_lat", "rdma_multirail_bw", "ucx_put_lat"};
    available = [](ProbeKind) { return true; };
    auto s = make(c);
    s->run_due(now);  // plans: each first run within its jitter
    now += 5min;
    s->run_due(now);  // everything is due once
    std::multiset<std::pair<std::string, std::string>> got;
    for (const auto& j : jobs) got.insert({to_string(j.kind), j.rail ? j.rail->name : ""});
    std::multiset<std::pair<std::string, std::string>> want = {
        {"tcp_lat", "rail0"},        {"tcp_lat", "rail1"},      {"rdma_write_lat", "rail0"},
        {"rdma_write_lat", "rail1"}, {"rdma_multirail_bw", ""}, {"ucx_put_lat", ""},
    };
    EXPECT_EQ(got, want);
    // On demand: a peer-level kind takes no rail, a rail kind any configured rail.
    EXPECT_TRUE(s->find_job("spark-b", "", ProbeKind::rdma_multirail_bw));
    EXPECT_FALSE(s->find_job("spark-b", "rail0", ProbeKind::rdma_multirail_bw));
    EXPECT_EQ(s->find_job("spark-b", "rail1", ProbeKind::rdma_write_bw)->rail->name, "rail1");
}

TEST_F(SchedulerTest, KindsWithoutARunnerOrWithoutRailsAreNotScheduled) {
    auto c = config();
    c->probes.enabled = {"tcp_lat", "rdma_write_lat", "rdma_multirail_bw", "ucx_put_bw"};
    available = [](ProbeKind k) { return !is_ucx_kind(k); };  // a build without UCX
    auto s = make(c);
    s->run_due(now);
    now += 5min;
    s->run_due(now);
    EXPECT_EQ(count(ProbeKind::ucx_put_bw), 0u) << "no UCX runner in this build";
    EXPECT_EQ(count(ProbeKind::rdma_multirail_bw), 0u) << "one rail: multi-rail says nothing more";
    EXPECT_EQ(count(ProbeKind::rdma_write_lat), 1u);
    EXPECT_FALSE(s->runnable(ProbeKind::ucx_put_bw));

    c = config();
    c->peers[0].rails.clear();
    c->probes.enabled = {"tcp_lat", "rdma_write_lat"};
    runs.clear();
    auto s2 = make(c);
    s2->run_due(now);
    now += 5min;
    s2->run_due(now);
    EXPECT_EQ(count(ProbeKind::tcp_lat), 1u) << "TCP goes to the control host without rails";
    EXPECT_EQ(count(ProbeKind::rdma_write_lat), 0u) << "RDMA needs a rail";
    EXPECT_FALSE(s2->find_job("spark-b", "", ProbeKind::rdma_multirail_bw));
}

TEST_F(SchedulerTest, RdmaBandwidthUsesItsOwnBusyFraction) {
    auto c = config();
    c->probes.enabled = {"rdma_write_bw"};
    c->probes.rdma_bw.busy_fraction = 0.2;
    c->probes.tcp_bw.busy_fraction = 0.9;
    available = [](ProbeKind) { return true; };
    utilisation = 0.3;
    auto s = make(c);
    s->run_due(now);
    now += 5min;
    s->run_due(now);
    EXPECT_EQ(count(ProbeKind::rdma_write_bw), 0u);
    const auto* r = store.latest()->latest({"spark-b", "rail0", ProbeKind::rdma_write_bw});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->reason, kReasonSkippedBusy);
    EXPECT_NE(r->detail.find("busy_fraction 20%"), std::string::npos) << r->detail;
}

TEST_F(SchedulerTest, AnOnDemandDeadlineBoundsTheHelloToo) {
    auto s = make(config());
    auto job = s->find_job("spark-b", "rail0", ProbeKind::tcp_lat);
    ASSERT_TRUE(job);
    job->deadline = now + 500ms;  // a scrape that gives up before the hello's own 2 s
    auto f = s->submit(*job);
    ASSERT_TRUE(f);
    s->run_due(now);
    ASSERT_FALSE(hello_deadlines.empty());
    EXPECT_EQ(hello_deadlines.front(), now + 500ms);
}

namespace {

// An inventory peer: its first probe goes to its control host and brings its hello; from then
// on its probes go over the rails matched from that hello, and the control-host result goes.
TEST_F(SchedulerTest, InventoryPeerIsProbedOverTheRailsItsHelloMatched) {
    auto c = config();
    c->probes.enabled = {"tcp_lat"};
    c->probes.tcp_lat.jitter = 0s;
    c->peers = {PeerConfig{.name = "10.0.0.3:9879", .address = "10.0.0.3:9879", .rails = {}, .from_inventory = true}};
    int matches = 0;
    ProbeSchedulerDeps d{
        .run =
            [this](const ProbeJob& j, const PeerHello&, Deadline) {
                jobs.push_back(j);
                ProbeResult r;
                r.success = true;
                return r;
            },
        .hello = good_hello,
        .match_rails =
            [&](const PeerConfig& p, const PeerHello&) {
                ++matches;
                EXPECT_TRUE(p.from_inventory);
                return std::vector<PeerRailConfig>{{"r0", "r0", "10.1.0.1", "10.1.0.3", "", ""},
                                                   {"r1", "r1", "10.2.0.1", "10.2.0.3", "", ""}};
            },
        .now = [this] { return now; },
    };
    ProbeScheduler s(c, std::move(d), store, log, 7);
    s.run_due(now);
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_FALSE(jobs[0].rail) << "before any hello: the control host";
    for (int i = 0; i < 3; ++i) {
        now += 1s;
        s.run_due(now);
    }
    std::set<std::string> rails;
    for (size_t i = 1; i < jobs.size(); ++i) {
        ASSERT_TRUE(jobs[i].rail);
        rails.insert(jobs[i].rail->name);
        EXPECT_EQ(jobs[i].rail->remote_address, jobs[i].rail->name == "r0" ? "10.1.0.3" : "10.2.0.3");
    }
    EXPECT_EQ(rails, (std::set<std::string>{"r0", "r1"}));
    EXPECT_EQ(matches, 1) << "the hello is kept, so matching runs once";
    auto book = store.latest();
    for (const auto& [k, _] : book->results) EXPECT_NE(k.rail, "") << "the control-host result is dropped";
}

// The inventory's rotating peers: a new set at each round boundary (wall-clock time / rotate_every),
// latency kinds only, over the rails their hellos matched; their results go to the per-rail mesh
// summary, never to the per-peer results, and a round's peers leave with it.
TEST_F(SchedulerTest, RotatingPeersChangeEachRoundProbeLatencyOnlyAndLandInTheMesh) {
    auto c = config();
    c->probes.enabled = {"tcp_lat", "tcp_bw"};
    c->probes.tcp_lat.interval = 20s;
    c->probes.tcp_lat.jitter = 0s;
    c->cluster.rotating_peers = 2;
    c->cluster.rotate_every = std::chrono::minutes(1);
    const auto start = now;
    // Wall time 10 s into round 1000 when the test starts.
    const TimePoint wall0 = TimePoint{} + std::chrono::minutes(1000) + 10s;
    std::vector<uint64_t> rounds_asked;
    ProbeSchedulerDeps d{
        .run =
            [this](const ProbeJob& j, const PeerHello&, Deadline) {
                jobs.push_back(j);
                ProbeResult r;
                r.success = j.peer.name.find("-bad") == std::string::npos;
                if (!r.success) r.reason = "timeout";
                if (r.success) r.latency = LatencyStats{.samples = 10, .used = 8, .typical = 30e-6};
                return r;
            },
        .hello = good_hello,
        .available = [](ProbeKind k) { return is_tcp_kind(k); },
        .match_rails =
            [](const PeerConfig&, const PeerHello&) {
                return std::vector<PeerRailConfig>{{"r0", "r0", "10.1.0.1", "10.1.0.9", "", ""}};
            },
        .rotating =
            [&](const Config& cfg, uint64_t round) {
                rounds_asked.push_back(round);
                EXPECT_EQ(cfg.cluster.rotating_peers, 2u);
                const std::string r = std::to_string(round);
                return std::vector<PeerConfig>{
                    PeerConfig{.name = "n" + r + "-ok", .address = "n" + r + "-ok:9879", .rails = {}},
                    PeerConfig{.name = "n" + r + "-bad", .address = "n" + r + "-bad:9879", .rails = {}},
                    // a configured peer named again: probed as configured, not as a rotating one
                    PeerConfig{.name = "spark-b", .address = "10.0.0.2:9879", .rails = {}}};
            },
        .now = [this] { return now; },
        .wall_now = [&] { return wall0 + (now - start); },
    };
    ProbeScheduler s(c, std::move(d), store, log, 11);
    auto step_to = [&](SteadyClock::duration until) {
        while (now - start < until) {
            s.run_due(now);
            now += 1s;
        }
    };
    step_to(45s);  // round 1000 ends 50 s in
    EXPECT_EQ(rounds_asked, (std::vector<uint64_t>{1000}));
    auto book = store.latest();
    EXPECT_EQ(book->round, 1000u);
    EXPECT_EQ(book->rotating.size(), 2u) << "spark-b is a configured peer, not a rotating one";
    std::set<std::string> probed;
    for (const auto& j : jobs)
        if (j.peer.rotating) {
            probed.insert(j.peer.name);
            EXPECT_EQ(j.kind, ProbeKind::tcp_lat) << "rotating peers get latency probes only";
        }
    EXPECT_EQ(probed, (std::set<std::string>{"n1000-ok", "n1000-bad"}));
    for (const auto& [k, _] : book->results) EXPECT_EQ(k.peer, "spark-b") << "per-peer results: fixed peers only";
    EXPECT_EQ(book->mesh.count(MeshKey{"", ProbeKind::tcp_lat}), 0u)
        << "the hello matched the rails, so the control host is not probed as well";
    const MeshSummary& m = book->mesh.at(MeshKey{"r0", ProbeKind::tcp_lat});
    EXPECT_GE(m.successes, 1u);
    EXPECT_GE(m.failures, 1u);
    EXPECT_EQ(m.buckets[3], m.successes) << "30 us lands in the (25 us, 50 us] bucket";
    ASSERT_EQ(m.failing().size(), 1u);
    EXPECT_EQ(m.failing()[0].first, "n1000-bad");
    EXPECT_EQ(m.failing()[0].second->reason, "timeout");
    const uint64_t runs_round_one = m.successes + m.failures;

    step_to(105s);  // round 1001: 50 s to 110 s
    EXPECT_EQ(rounds_asked, (std::vector<uint64_t>{1000, 1001}));
    book = store.latest();
    EXPECT_EQ(book->round, 1001u);
    EXPECT_EQ(book->rotating.count("n1001-ok"), 1u);
    EXPECT_EQ(book->rotating.count("n1000-ok"), 0u) << "last round's peers leave with it";
    EXPECT_EQ(book->peers.count("n1000-ok"), 0u);
    const MeshSummary& m2 = book->mesh.at(MeshKey{"r0", ProbeKind::tcp_lat});
    EXPECT_GT(m2.successes + m2.failures, runs_round_one) << "the summary is cumulative across rounds";
    bool later = false;
    for (const auto& j : jobs) later = later || j.peer.name == "n1001-bad";
    EXPECT_TRUE(later);
    for (const auto& [k, _] : book->results) EXPECT_EQ(k.peer, "spark-b");

    // Rotation off: the rotating peers and their summaries go at the reload.
    auto off = std::make_shared<Config>(*c);
    off->cluster.rotating_peers = 0;
    s.apply_config(off);
    s.run_due(now);
    book = store.latest();
    EXPECT_TRUE(book->rotating.empty());
    EXPECT_TRUE(book->mesh.empty());
}

// The node's probe budget: a spent budget skips the run (reason skipped_budget, not a failure,
// the peer not asked), and an admitted run is charged the bytes it moved.
TEST_F(SchedulerTest, ASpentBudgetSkipsTheRunAndAnAdmittedOneIsCharged) {
    auto c = config();
    c->probes.enabled = {"tcp_lat"};
    c->probes.tcp_lat.jitter = 0s;
    bool spent = true;
    uint64_t charged = 0;
    int admits = 0;
    ProbeSchedulerDeps d{
        .run =
            [this](const ProbeJob& j, const PeerHello&, Deadline) {
                jobs.push_back(j);
                ProbeResult r;
                r.success = true;
                r.bytes = 12800;
                return r;
            },
        .hello = good_hello,
        .admit =
            [&] {
                ++admits;
                return spent ? std::optional<std::string>("the node's probe budget is spent") : std::nullopt;
            },
        .charge = [&](uint64_t bytes) { charged += bytes; },
        .now = [this] { return now; },
    };
    ProbeScheduler s(c, std::move(d), store, log, 5);
    s.run_due(now);
    EXPECT_EQ(admits, 1);
    EXPECT_TRUE(jobs.empty()) << "a spent budget: the probe does not run";
    const ProbeResult* r = store.latest()->latest({"spark-b", "rail0", ProbeKind::tcp_lat});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->reason, kReasonSkippedBudget);
    EXPECT_FALSE(probe_ran(*r)) << "says nothing about the path";
    spent = false;
    now += 31s;
    s.run_due(now);
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(charged, 12800u);
    EXPECT_TRUE(store.latest()->latest({"spark-b", "rail0", ProbeKind::tcp_lat})->success);
}

}  // namespace
