// Engine: one collection cycle over a fixture tree and injected links, and state across restarts.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "daemon/core/engine.hpp"
#include "test_env.hpp"

using namespace rocewatch;
namespace fs = std::filesystem;

namespace {

Link netdev(int idx, std::string name, uint32_t mtu, std::string addr) {
    Link l{.ifindex = idx, .name = std::move(name), .operstate = "up", .admin_up = true, .carrier = true, .mtu = mtu};
    if (!addr.empty())
        l.addresses.push_back({.family = AF_INET, .address = std::move(addr), .prefixlen = 24, .scope = "global"});
    return l;
}

struct EngineTest : ::testing::Test {
    fs::path state = fs::temp_directory_path() / ("rw-engine-" + std::to_string(::getpid()));
    std::vector<Link> links;
    TimePoint now = TimePoint{} + std::chrono::hours(24 * 365 * 50);
    SnapshotStore store;
    std::shared_ptr<spdlog::logger> log =
        std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());

    void SetUp() override {
        fs::remove_all(state);
        links = {netdev(3, "enp1s0f0np0", 9000, "192.168.100.11"), netdev(4, "enp1s0f1np1", 9000, "192.168.200.11"),
                 netdev(5, "enP2p1s0f0np0", 9000, "")};
    }
    void TearDown() override { fs::remove_all(state); }

    // A private copy of the DGX Spark tree, so a test can change a GID behind the engine's back.
    fs::path private_tree() {
        const fs::path tree = state / "sysfs";
        fs::create_directories(state);
        fs::copy(rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark", tree,
                 fs::copy_options::recursive | fs::copy_options::copy_symlinks);
        return tree;
    }
    static std::shared_ptr<Config> config_on(const fs::path& tree) {
        auto cfg = std::make_shared<Config>();
        cfg->daemon.sysfs_root = tree.string();
        cfg->daemon.state_dir.clear();
        return cfg;
    }

    std::unique_ptr<Engine> make() {
        auto cfg = std::make_shared<Config>();
        cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
        cfg->daemon.procfs_root = rocewatch::testing::fixtures_dir() + "/procfs/dgx-spark";
        cfg->daemon.state_dir = state.string();
        cfg->expect.rails = {"rocep1s0f0", "rocep1s0f1"};
        cfg->expect.port_rate_gbps = 100;
        EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }, .ucx_version = "1.13.1"};
        return std::make_unique<Engine>(cfg, std::move(src), store, log);
    }
};

}  // namespace

TEST_F(EngineTest, OneCycleJoinsSysfsAndNetlink) {
    auto engine = make();
    auto s = engine->collect_once();
    ASSERT_EQ(store.latest(), s);
    EXPECT_EQ(s->generation, 1u);
    EXPECT_TRUE(s->daemon.ready);
    ASSERT_EQ(s->devices.size(), 3u);
    ASSERT_NE(find_device(*s, "rocep1s0f0"), nullptr);
    const auto& rail = find_device(*s, "rocep1s0f0")->ports.at(0);
    EXPECT_EQ(rail.netdev, "enp1s0f0np0");
    EXPECT_EQ(rail.roce_v2_ipv4_gid_index, 3);
    EXPECT_EQ(rail.roce_v2_ipv4_address, "192.168.100.11");
    EXPECT_EQ(s->host.hostname, "spark-02");
    EXPECT_EQ(s->host.ucx_version, "1.13.1");
    ASSERT_EQ(s->collectors.size(), 5u);  // sysfs, verbs, netlink, host, state
    for (const auto& c : s->collectors) EXPECT_TRUE(c.name == "verbs" || c.success) << c.name << ": " << c.last_error;
}

TEST_F(EngineTest, MisconfiguredNodeRaisesAlertsThatClearAndPersist) {
    links[0].mtu = 1500;  // the first mistake on a fresh DGX Spark
    auto engine = make();
    auto s = engine->collect_once();
    auto has = [](const Snapshot& snap, const std::string& rule, const std::string& obj) {
        for (const auto& a : snap.alerts)
            if (a.rule == rule && a.object == obj && a.state == AlertState::firing) return true;
        return false;
    };
    EXPECT_TRUE(has(*s, "mtu_low", "enp1s0f0np0"));
    EXPECT_TRUE(has(*s, "peermem_missing", "nvidia_peermem"));
    EXPECT_EQ(overall_health(*s), Health::warning);

    // A restart keeps what was firing and the history, from the state directory.
    engine.reset();
    auto again = make();
    links[0].mtu = 9000;
    now += std::chrono::seconds(1);
    s = again->collect_once();
    EXPECT_TRUE(has(*s, "mtu_low", "enp1s0f0np0")) << "still inside clear_after";
    EXPECT_GE(s->history->size(), 2u);
    now += std::chrono::seconds(31);
    s = again->collect_once();
    EXPECT_FALSE(has(*s, "mtu_low", "enp1s0f0np0")) << "cleared after a stable recovery";
    EXPECT_EQ(s->history->back().to, AlertState::resolved);
}

TEST_F(EngineTest, RejectedReloadIsReportedAndKeepsConfig) {
    auto engine = make();
    engine->reject_config({"x.toml:3: expect.mtu: must be 68..65535"});
    auto s = engine->collect_once();
    EXPECT_FALSE(s->daemon.config_last_reload_ok);
    ASSERT_EQ(s->daemon.config_last_errors.size(), 1u);
    EXPECT_EQ(s->config->expect.rails.size(), 2u);
}

TEST_F(EngineTest, GidTablesAreReadAfterEventsAndCarriedOverOtherwise) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    engine.collect_once();
    const fs::path type3 = tree / "class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3";
    std::ofstream(type3) << "IB/RoCE v1\n";
    auto quiet = engine.collect_once();
    EXPECT_EQ(find_device(*quiet, "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index, 3)
        << "no event, inside the refresh: the table is carried over, not re-read";
    EXPECT_FALSE(find_device(*quiet, "rocep1s0f0")->ports.at(0).counters.empty());
    engine.wake();  // a netlink event: link and port state at once, then the tables again
    auto first = engine.collect_once();
    EXPECT_EQ(find_device(*first, "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index, 3)
        << "the cycle right after the event judges links and ports without waiting for the tables";
    auto woken = engine.collect_once();
    EXPECT_FALSE(find_device(*woken, "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index)
        << "re-read on the next cycle: GID 3 is no longer RoCE v2";
    std::ofstream(type3) << "RoCE v2\n";
    auto again = engine.collect_once();
    EXPECT_EQ(find_device(*again, "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index, 3)
        << "and on the one after (the kernel updates the tables from a work queue)";
    std::ofstream(type3) << "IB/RoCE v1\n";
    EXPECT_EQ(find_device(*engine.collect_once(), "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index, 3)
        << "two reads per event, then carried over again";
    engine.wake_for_results();  // a probe result: nothing in sysfs moved
    engine.collect_once();
    EXPECT_EQ(find_device(*engine.collect_once(), "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index, 3)
        << "a probe result does not re-read the tables";
}

// What a device is (firmware, GUIDs, driver, netdevs, link layer) is read with the GID tables
// and carried over in between, as they are; so are the netdevs the ports are bound to.
TEST_F(EngineTest, WhatADeviceIsIsReadWithTheGidTablesAndCarriedOverOtherwise) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    const auto first = engine.collect_once();
    const RdmaDevice before = *find_device(*first, "rocep1s0f0");
    ASSERT_FALSE(before.fw_ver.empty());
    ASSERT_FALSE(before.netdevs.empty());
    std::ofstream(tree / "class/infiniband/rocep1s0f0/fw_ver") << "99.99.9999\n";
    const auto quiet = engine.collect_once();
    const RdmaDevice& carried = *find_device(*quiet, "rocep1s0f0");
    EXPECT_EQ(carried.fw_ver, before.fw_ver) << "no event, inside the refresh: carried over, not re-read";
    EXPECT_EQ(carried.node_guid, before.node_guid);
    EXPECT_EQ(carried.driver, before.driver);
    EXPECT_EQ(carried.netdevs, before.netdevs);
    EXPECT_EQ(carried.ports.at(0).link_layer, "Ethernet");
    EXPECT_EQ(carried.ports.at(0).cap_mask, before.ports.at(0).cap_mask);
    EXPECT_EQ(carried.ports.at(0).netdev, before.ports.at(0).netdev);
    EXPECT_EQ(carried.ports.at(0).roce_v2_ipv4_gid_index, before.ports.at(0).roce_v2_ipv4_gid_index);
    engine.wake();  // a netlink event: the tables, and what the devices are, on the next cycle
    engine.collect_once();
    EXPECT_EQ(find_device(*engine.collect_once(), "rocep1s0f0")->fw_ver, "99.99.9999");
}

// A link that keeps flapping wakes the engine again and again. Each GID read reopens every
// kept file (over a second at 128 NICs): once a few have run back to back they get a tenth
// of the time, and a read put off is made later, so the tables after the last event are read.
TEST_F(EngineTest, GidReadsAfterEventsKeepToTheirShareAndTheLastIsRead) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    auto gid_reads = std::make_shared<std::atomic<int>>(0);  // outlives the engine's read threads
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [gid_reads](const fs::path& root, const SysfsReadOptions& o) {
        if (o.gids) {
            ++*gid_reads;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a costly read
        }
        return read_rdma_devices(root, o);
    };
    Engine engine(cfg, std::move(src), store, log);
    (void)engine.collect_once();
    (void)engine.collect_once();
    ASSERT_EQ(*gid_reads, 1) << "at start, the tables once";

    constexpr int kEvents = 16;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kEvents; ++i) {
        engine.wake();
        (void)engine.collect_once();  // link and port state
        (void)engine.collect_once();  // the tables, where the share allows
    }
    const double storm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int in_storm = *gid_reads - 1;
    EXPECT_GE(in_storm, 3) << "the first events are read at once";
    // 0.6 s of reads saved up (six of 100 ms) and a tenth of the time since, with a read of slack.
    EXPECT_LE(in_storm, 7 + static_cast<int>(storm_s)) << "not one read per event: " << storm_s << " s";

    const fs::path type3 = tree / "class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3";
    std::ofstream(type3) << "IB/RoCE v1\n";
    engine.wake();
    (void)engine.collect_once();
    bool seen = false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!seen && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        seen = !find_device(*engine.collect_once(), "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index;
    }
    EXPECT_TRUE(seen) << "the tables after the last event are read when the share allows";
}

// GID tables come through verbs only from the host's own /sys (the VM suite sees that path
// taken): a fixture tree's devices must never take a real device's table by its name.
TEST_F(EngineTest, AFixtureTreeTakesNoGidTablesFromVerbs) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    auto sources = std::make_shared<std::vector<bool>>();  // outlives the engine's read threads
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [sources](const fs::path& root, const SysfsReadOptions& o) {
        sources->push_back(o.gid_tables != nullptr);
        return read_rdma_devices(root, o);
    };
    Engine engine(cfg, std::move(src), store, log);
    const auto snap = engine.collect_once();
    ASSERT_FALSE(sources->empty());
    EXPECT_EQ(std::count(sources->begin(), sources->end(), true), 0);
    EXPECT_EQ(find_device(*snap, "rocep1s0f0")->ports.at(0).gids_source, "sysfs");
}

// lid, sm_lid and sm_sl are 0 and unused on Ethernet: with every port Ethernet they are read
// with the identity only and carried over in between; once a port is InfiniBand (a subnet
// manager may move them at any time) they are read every cycle again.
TEST_F(EngineTest, SubnetManagerFieldsAreReadEveryCycleOnlyWhileAPortIsInfiniBand) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    auto asked = std::make_shared<std::vector<bool>>();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [asked](const fs::path& root, const SysfsReadOptions& o) {
        asked->push_back(reads_subnet_manager(o));
        return read_rdma_devices(root, o);
    };
    Engine engine(cfg, std::move(src), store, log);
    auto lids_known = [](const Snapshot& s) {
        for (const auto& d : s.devices)
            for (const auto& p : d.ports)
                if (!p.lid || !p.sm_lid) return false;  // the fixture has no sm_sl
        return true;
    };
    ASSERT_TRUE(lids_known(*engine.collect_once()));
    ASSERT_EQ(asked->size(), 1u);
    EXPECT_TRUE(asked->front()) << "the first read has no link layers to go by";
    for (int i = 0; i < 5; ++i) {
        now += std::chrono::seconds(5);
        EXPECT_TRUE(lids_known(*engine.collect_once())) << "carried over, cycle " << i;
    }
    ASSERT_EQ(asked->size(), 6u);
    for (size_t i = 1; i < asked->size(); ++i) EXPECT_FALSE((*asked)[i]) << "read " << i << " of all-Ethernet ports";

    // A port turns InfiniBand (its link layer is identity: read after a link event).
    {
        std::ofstream(tree / "class/infiniband/rocep1s0f1/ports/1/link_layer") << "InfiniBand\n";
        std::ofstream(tree / "class/infiniband/rocep1s0f1/ports/1/lid") << "0x7\n";
    }
    engine.wake();
    now += std::chrono::seconds(5);
    (void)engine.collect_once();
    asked->clear();
    for (int i = 0; i < 3; ++i) {
        now += std::chrono::seconds(5);
        const auto s = engine.collect_once();
        EXPECT_EQ(find_device(*s, "rocep1s0f1")->ports.at(0).lid, 0x7u);
    }
    ASSERT_EQ(asked->size(), 3u);
    for (size_t i = 0; i < asked->size(); ++i) EXPECT_TRUE((*asked)[i]) << "read " << i << " with an InfiniBand port";
}

// A RoCE port's state, physical state and rate follow its netdev, whose changes the watcher
// reports: while every port is RoCE over a watched link they are read after link events and
// with the counters (at least every 15 s), and carried over in between; a port whose netdev
// is not a link here has them read every cycle again.
TEST_F(EngineTest, PortStateIsReadEveryCycleOnlyWhileAPortDoesNotFollowAWatchedLink) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    auto asked = std::make_shared<std::vector<bool>>();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [asked](const fs::path& root, const SysfsReadOptions& o) {
        asked->push_back(reads_port_state(o));
        SysfsReadResult r = read_rdma_devices(root, o);
        if (o.counters) r.counter_seconds = 1.0;  // far past the share: counters every 15 s
        return r;
    };
    Engine engine(cfg, std::move(src), store, log);
    const auto state_of = [](const Snapshot& s) { return find_device(s, "rocep1s0f1")->ports.at(0).state_name; };
    ASSERT_EQ(state_of(*engine.collect_once()), "ACTIVE");
    ASSERT_EQ(asked->size(), 1u);
    EXPECT_TRUE(asked->front()) << "the first read";

    // Past the first reads (GID tables, the counters' first burst), a counter read.
    int since_read = 0;
    for (int i = 0; i < 40 && !(since_read == 0 && i > 20); ++i) {
        now += std::chrono::seconds(1);
        const auto s = engine.collect_once();
        since_read = s->counters_read_at == s->collected_at ? 0 : since_read + 1;
    }
    ASSERT_EQ(since_read, 0);

    // The file says DOWN behind the engine's back (no real port does without a link event).
    std::ofstream(tree / "class/infiniband/rocep1s0f1/ports/1/state") << "1: DOWN\n";
    asked->clear();
    int carried = 0;
    for (int i = 0; i < 16; ++i) {
        now += std::chrono::seconds(1);
        const auto s = engine.collect_once();
        if (s->counters_read_at == s->collected_at) {
            EXPECT_TRUE((*asked)[i]) << "with the counters, cycle " << i;
            EXPECT_EQ(state_of(*s), "DOWN") << "cycle " << i;
            break;
        }
        EXPECT_FALSE((*asked)[i]) << "cycle " << i;
        EXPECT_EQ(state_of(*s), "ACTIVE") << "carried over, cycle " << i;
        EXPECT_EQ(find_device(*s, "rocep1s0f1")->ports.at(0).rate_gbps, 100.0) << "cycle " << i;
        ++carried;
    }
    EXPECT_GE(carried, 10) << "the cycles between the counters' reads carry the port state";
    EXPECT_LE(carried, 15) << "and the counters' read, at least every 15 s, reads it";
    std::ofstream(tree / "class/infiniband/rocep1s0f1/ports/1/state") << "4: ACTIVE\n";
    now += std::chrono::seconds(1);
    ASSERT_EQ(state_of(*engine.collect_once()), "DOWN") << "carried again";

    // A link event: the next cycle reads it.
    engine.wake();
    now += std::chrono::seconds(1);
    EXPECT_EQ(state_of(*engine.collect_once()), "ACTIVE") << "read on the cycle after the event";

    // A netdev that is no link of this namespace: every cycle reads the port state.
    links.pop_back();  // enP2p1s0f0np0
    now += std::chrono::seconds(1);
    (void)engine.collect_once();  // the snapshot that sees it gone
    asked->clear();
    for (int i = 0; i < 4; ++i) {
        now += std::chrono::seconds(1);
        (void)engine.collect_once();
    }
    ASSERT_EQ(asked->size(), 4u);
    for (size_t i = 0; i < asked->size(); ++i) EXPECT_TRUE((*asked)[i]) << "read " << i;
}

// However far past their share the reads are (here each costs 1,000 s of it), the counters are
// never carried over for 15 s or more: after the first burst, a read every 15 s, as a
// Prometheus scrape at that interval takes them (issue 14).
TEST_F(EngineTest, CountersAreReadAtLeastEvery15sWhateverTheShare) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [](const fs::path& root, const SysfsReadOptions& o) {
        SysfsReadResult r = read_rdma_devices(root, o);
        if (o.counters) r.counter_seconds = 1.0;
        return r;
    };
    Engine engine(cfg, std::move(src), store, log);
    std::vector<int> reads;
    for (int i = 0; i <= 60; ++i) {
        if (i > 0) now += std::chrono::seconds(1);
        const auto s = engine.collect_once();
        if (s->counters_read_at == s->collected_at) reads.push_back(i);
    }
    std::string seen;
    for (int r : reads) seen += " " + std::to_string(r);
    ASSERT_GE(reads.size(), 4u) << seen;
    EXPECT_LE(reads.size(), 7u) << "the share allows no more than the first burst:" << seen;
    EXPECT_EQ(reads[0], 0) << seen;
    for (std::size_t k = reads.size() - 3; k < reads.size(); ++k)
        EXPECT_EQ(reads[k] - reads[k - 1], 15) << "cycle " << reads[k] << ":" << seen;
}

// The counter files are read within their share of a core. In between, the last counters, with
// their rates and increases, are carried over with the time they were read; a counter that
// moved is seen at the next read.
TEST_F(EngineTest, CounterReadsKeepToTheirShareAndTheLastValuesAreCarriedOver) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    auto counter_reads = std::make_shared<std::atomic<int>>(0);  // outlives the engine's read threads
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [counter_reads](const fs::path& root, const SysfsReadOptions& o) {
        SysfsReadResult r = read_rdma_devices(root, o);
        if (o.counters) {
            ++*counter_reads;
            r.counter_seconds = 0.002;  // as if they took 2 ms: 2 s of the share
        }
        return r;
    };
    Engine engine(cfg, std::move(src), store, log);
    const fs::path file = tree / "class/infiniband/rocep1s0f0/ports/1/counters/port_rcv_errors";
    const auto port = [](const Snapshot& s) -> const RdmaPort& { return find_device(s, "rocep1s0f0")->ports.at(0); };

    std::shared_ptr<const Snapshot> read = engine.collect_once();
    ASSERT_EQ(*counter_reads, 1) << "the first cycle reads them";
    EXPECT_EQ(read->counters_read_at, read->collected_at);
    int carried = 0;
    for (int i = 1; i <= 20; ++i) {
        std::ofstream(file) << i << "\n";
        now += std::chrono::seconds(1);
        const auto s = engine.collect_once();
        if (s->counters_read_at == s->collected_at) {
            EXPECT_EQ(port(*s).counters.at("port_rcv_errors"), uint64_t(i)) << "a read cycle reads the file";
            read = s;
            continue;
        }
        ++carried;
        EXPECT_EQ(s->counters_read_at, read->counters_read_at) << "cycle " << i;
        EXPECT_EQ(port(*s).counters, port(*read).counters) << "cycle " << i;
        EXPECT_EQ(port(*s).hw_counters, port(*read).hw_counters) << "cycle " << i;
        EXPECT_EQ(port(*s).rates, port(*read).rates) << "cycle " << i;
        EXPECT_EQ(port(*s).window_increase, port(*read).window_increase) << "cycle " << i;
        EXPECT_EQ(port(*s).xmit_bytes, port(*read).xmit_bytes) << "cycle " << i;
        EXPECT_TRUE(port(*s).counters.shares_with(port(*read).counters) &&
                    port(*s).hw_counters.shares_with(port(*read).hw_counters) &&
                    port(*s).rates.shares_with(port(*read).rates) &&
                    port(*s).window_increase.shares_with(port(*read).window_increase))
            << "cycle " << i << ": carried over without a copy";
    }
    EXPECT_GE(*counter_reads, 2) << "a burst of reads back to back";
    EXPECT_GE(carried, 10) << "then a read per 2 s of share: " << *counter_reads << " reads";

    std::ofstream(file) << 50 << "\n";
    // The share's 2 s for the next read, and what the trend stage after each read took (real
    // time, longer under a sanitizer): cycles carry the counters over until then.
    std::shared_ptr<const Snapshot> s;
    for (int i = 0; i < 50; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        now += std::chrono::seconds(1);
        s = engine.collect_once();
        if (s->counters_read_at == s->collected_at) break;
        EXPECT_EQ(port(*s).counters.at("port_rcv_errors"), port(*read).counters.at("port_rcv_errors"));
    }
    ASSERT_EQ(s->counters_read_at, s->collected_at) << "no counter read in 10 s";
    EXPECT_EQ(port(*s).counters.at("port_rcv_errors"), 50u);
    ASSERT_TRUE(port(*s).rates.contains("port_rcv_errors"));
    EXPECT_GT(port(*s).rates.at("port_rcv_errors"), 0.0) << "the rate since the read before, not since a carried cycle";
}

// The RoCE netdevs' driver and ethtool counters, and every link's ARP sysctls, are read with the
// ports' counters: in between they are carried over with the rates; a link event has them read
// again.
TEST_F(EngineTest, LinkCountersAreReadWithThePortCountersAndAfterLinkEvents) {
    const fs::path tree = private_tree();
    auto cfg = config_on(tree);
    // The rail's ARP sysctl, read on the same schedule.
    const fs::path procfs = state / "procfs";
    const fs::path arp_ignore = procfs / "sys/net/ipv4/conf/enp1s0f0np0/arp_ignore";
    fs::create_directories(arp_ignore.parent_path());
    std::ofstream(arp_ignore) << "1\n";
    cfg->daemon.procfs_root = procfs.string();
    auto stats_asked = std::make_shared<std::atomic<int>>(0);
    auto phy_asked = std::make_shared<std::atomic<int>>(0);
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [](const fs::path& root, const SysfsReadOptions& o) {
        SysfsReadResult r = read_rdma_devices(root, o);
        if (o.counters) r.counter_seconds = 0.002;  // 2 s of the share a read
        return r;
    };
    src.driver_stats = [stats_asked](const std::string& n) {
        const int k = n == "enp1s0f0np0" ? ++*stats_asked : 0;
        return DriverStats{.values = {{"rx_prio3_pause", uint64_t(100 * k)}}};
    };
    // Whether each PHY read of the rail was handed its last answer (what changes only with the
    // link is then not asked again): never the first, nor after a link event or a new netdev.
    auto phy_known = std::make_shared<std::vector<bool>>();
    src.phy = [phy_asked, phy_known](const std::string& n, const PhyLink* known) {
        if (n == "enp1s0f0np0") {
            ++*phy_asked;
            phy_known->push_back(known != nullptr);
            if (known) {
                EXPECT_EQ(known->speed_mbps, 200000u);
            }
        }
        return PhyLink{.speed_mbps = 200000, .fec_uncorrectable_blocks = 3};
    };
    Engine engine(cfg, std::move(src), store, log);
    const auto rail = [](const Snapshot& s) -> const Link& { return *find_link(s, "enp1s0f0np0"); };

    std::shared_ptr<const Snapshot> read = engine.collect_once();
    ASSERT_EQ(*stats_asked, 1);
    ASSERT_EQ(*phy_known, std::vector<bool>{false}) << "the first read asks everything";
    EXPECT_EQ(read->link_counters_read_at, read->collected_at);
    EXPECT_EQ(rail(*read).arp_ignore, 1);
    int carried = 0;
    for (int i = 1; i <= 20; ++i) {
        std::ofstream(arp_ignore) << (i % 2 ? 2 : 1) << "\n";
        now += std::chrono::seconds(1);
        const int asked_before = *stats_asked;
        const auto s = engine.collect_once();
        const bool ports_read = s->counters_read_at == s->collected_at;
        EXPECT_EQ(*stats_asked - asked_before, ports_read ? 1 : 0) << "cycle " << i;
        EXPECT_EQ(*phy_asked, *stats_asked) << "cycle " << i;
        if (ports_read) {
            EXPECT_EQ(s->link_counters_read_at, s->collected_at) << "cycle " << i;
            EXPECT_EQ(rail(*s).arp_ignore, i % 2 ? 2 : 1) << "cycle " << i << ": read";
            EXPECT_TRUE(rail(*s).driver_stat_rates.contains("rx_prio3_pause")) << "cycle " << i;
            read = s;
            continue;
        }
        ++carried;
        EXPECT_EQ(s->link_counters_read_at, read->link_counters_read_at) << "cycle " << i;
        EXPECT_EQ(rail(*s).driver_stats, rail(*read).driver_stats) << "cycle " << i;
        EXPECT_EQ(rail(*s).driver_stat_rates, rail(*read).driver_stat_rates) << "cycle " << i;
        EXPECT_EQ(rail(*s).driver_stat_increase, rail(*read).driver_stat_increase) << "cycle " << i;
        EXPECT_EQ(rail(*s).arp_ignore, rail(*read).arp_ignore) << "cycle " << i << ": carried";
        ASSERT_TRUE(rail(*s).phy) << "cycle " << i;
        EXPECT_EQ(rail(*s).phy->speed_mbps, 200000u);
    }
    EXPECT_GE(carried, 10) << *stats_asked << " reads in 21 cycles";
    ASSERT_EQ(phy_known->size(), size_t(*phy_asked));
    EXPECT_TRUE(std::all_of(phy_known->begin() + 1, phy_known->end(), [](bool k) { return k; }))
        << "the reads on the counters' schedule are handed the last answer";

    // A link event: link state at once, then the GID tables and these counters right after.
    const int asked_before = *stats_asked;
    engine.wake();
    for (int i = 0; i < 3 && *stats_asked == asked_before; ++i) {
        now += std::chrono::milliseconds(100);
        (void)engine.collect_once();
    }
    EXPECT_EQ(*stats_asked, asked_before + 1) << "read again after the event";
    EXPECT_FALSE(phy_known->back()) << "after a link event everything is asked again";

    // A RoCE netdev recreated (a new ifindex) is not carried over from the one it replaces.
    links[0].ifindex = 42;
    now += std::chrono::seconds(1);
    const int before_new = *stats_asked;
    const auto s = engine.collect_once();
    EXPECT_EQ(*stats_asked, before_new + 1);
    EXPECT_EQ(s->link_counters_read_at, s->collected_at);
    EXPECT_FALSE(phy_known->back()) << "a recreated netdev is asked everything";
}

// The run loop: the first link event of a quiet spell gets its cycle at once; events that keep
// coming get one a second, and the last of them is served.
TEST_F(EngineTest, LinkEventsInAStormGetACycleASecondAndTheLastIsServed) {
    using SC = std::chrono::steady_clock;
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.procfs_root = rocewatch::testing::fixtures_dir() + "/procfs/dgx-spark";
    cfg->daemon.state_dir.clear();
    cfg->daemon.interval = std::chrono::hours(1);  // no cycle but those the events ask for
    // Shared with the engine's read threads, which may outlive the engine by a read.
    struct Cycles {
        std::mutex mu;
        int count = 0;
        SC::time_point last{};
    };
    auto seen = std::make_shared<Cycles>();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [seen](const fs::path& root, const SysfsReadOptions& o) {
        {
            std::lock_guard lock(seen->mu);
            ++seen->count;
            seen->last = SC::now();
        }
        return read_rdma_devices(root, o);
    };
    const auto count = [seen] {
        std::lock_guard lock(seen->mu);
        return seen->count;
    };
    const auto wait_for = [&](int n, SC::duration limit) {
        const auto until = SC::now() + limit;
        while (count() < n && SC::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return count() >= n;
    };
    Engine engine(cfg, std::move(src), store, log);
    std::thread loop([&] { engine.run(); });
    EXPECT_TRUE(wait_for(1, std::chrono::seconds(10))) << "the first cycle";
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // a quiet spell
    const int before = count();

    const auto t0 = SC::now();
    engine.wake();
    EXPECT_TRUE(wait_for(before + 1, std::chrono::seconds(10)));
    EXPECT_LT(SC::now() - t0, std::chrono::milliseconds(900)) << "the first event is not held back";

    SC::time_point last_wake{};
    while (SC::now() - t0 < std::chrono::seconds(3)) {  // an event every 20 ms for 3 s
        engine.wake();
        last_wake = SC::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double storm_s = std::chrono::duration<double>(SC::now() - t0).count();
    const int in_storm = count() - before;
    // A cycle a second for the links, each followed by one for the GID tables: 150 events,
    // at most two cycles per second begun and two of slack.
    EXPECT_LE(in_storm, 2 * (static_cast<int>(storm_s) + 2)) << storm_s << " s";
    const auto until = SC::now() + std::chrono::seconds(10);
    bool served = false;
    while (!served && SC::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::lock_guard lock(seen->mu);
        served = seen->last > last_wake;
    }
    EXPECT_TRUE(served) << "a cycle after the last event";
    engine.stop();
    loop.join();
}

// A read that never returns (a wedged mlx5 firmware command, a FIFO once was) costs its
// own thread, not the engine: the cycle ends at its deadline with the last devices, marked
// failed and dated, the file is skipped until its read returns, and stop() is prompt.
struct BlockingRead {
    std::string path;  // the file the fake blocks on
    std::mutex mu;
    std::condition_variable cv;
    bool block = false;  // the next read that does not skip `path` blocks
    bool released = false;
    std::vector<bool> skipped;  // per call: was `path` in the skip list

    SysfsReadResult operator()(const fs::path& root, const SysfsReadOptions& o) {
        const bool skip = o.skip && o.skip->contains(path);
        std::unique_lock lock(mu);
        skipped.push_back(skip);
        if (block && !skip) {
            block = false;
            o.progress->enter(path);
            cv.wait(lock, [&] { return released; });
        }
        lock.unlock();
        return read_rdma_devices(root, o);
    }
    void release() {
        std::lock_guard lock(mu);
        released = true;
        cv.notify_all();
    }
};

// A read that is slow but keeps going (a GID table of 1,024 files under emulation) is waited
// for: the deadline is for one file that does not return, not for the whole cycle.
TEST_F(EngineTest, SlowReadThatKeepsProgressingIsNotCutShort) {
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.procfs_root = rocewatch::testing::fixtures_dir() + "/procfs/dgx-spark";
    cfg->daemon.state_dir.clear();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [](const fs::path& root, const SysfsReadOptions& o) {
        for (int i = 0; i < 20; ++i) {  // 1 s in all, 50 ms a file, against a 300 ms deadline
            o.progress->enter("/sys/class/infiniband/rocep1s0f0/ports/1/gids/" + std::to_string(i));
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return read_rdma_devices(root, o);
    };
    src.read_deadline = std::chrono::milliseconds(300);
    Engine engine(cfg, std::move(src), store, log);
    auto snap = engine.collect_once();
    EXPECT_TRUE(snap->collectors.at(0).success) << snap->collectors.at(0).last_error;
    EXPECT_EQ(snap->devices.size(), 3u);
    EXPECT_FALSE(find_device(*snap, "rocep1s0f0")->ports.at(0).counters.empty());
}

TEST_F(EngineTest, BlockedReadEndsTheCycleAtItsDeadlineAndIsSkippedUntilItReturns) {
    auto fake = std::make_shared<BlockingRead>();
    fake->path = "/sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/out_of_buffer";
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.procfs_root = rocewatch::testing::fixtures_dir() + "/procfs/dgx-spark";
    cfg->daemon.state_dir.clear();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [fake](const fs::path& root, const SysfsReadOptions& o) {
        SysfsReadResult r = (*fake)(root, o);
        if (o.counters) r.counter_seconds = 10;  // so that the counters' share is spent below
        return r;
    };
    src.read_deadline = std::chrono::milliseconds(300);
    Engine engine(cfg, std::move(src), store, log);

    auto first = engine.collect_once();
    ASSERT_TRUE(first->collectors.at(0).success);
    const TimePoint read_at = now;
    // Three more reads spend the counters' burst and more: from here on their share refuses a
    // read, so the counters after the blocked cycle are read only because it had none to carry.
    for (int i = 0; i < 3; ++i) (void)engine.collect_once();

    now += std::chrono::seconds(5);
    fake->block = true;
    const auto t0 = std::chrono::steady_clock::now();
    auto stale = engine.collect_once();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2))
        << "the cycle waits out its deadline only";
    const auto& sysfs = stale->collectors.at(0);
    EXPECT_FALSE(sysfs.success);
    EXPECT_NE(sysfs.last_error.find(fake->path), std::string::npos) << sysfs.last_error;
    EXPECT_NE(sysfs.last_error.find("did not return within 300 ms"), std::string::npos) << sysfs.last_error;
    EXPECT_EQ(sysfs.last_success, read_at) << "how stale the devices are";
    EXPECT_EQ(stale->collected_at, now);
    ASSERT_EQ(stale->devices.size(), 3u) << "the last devices are served";
    EXPECT_TRUE(find_device(*stale, "rocep1s0f0")->ports.at(0).counters.empty()) << "no stale counter values";
    EXPECT_EQ(find_device(*stale, "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index, 3);
    EXPECT_EQ(stale->host.hostname, "spark-02");

    now += std::chrono::seconds(5);
    auto skipping = engine.collect_once();
    EXPECT_TRUE(skipping->collectors.at(0).success) << skipping->collectors.at(0).last_error;
    EXPECT_EQ(skipping->collectors.at(0).last_success, now);
    EXPECT_TRUE(fake->skipped.back()) << "the file that blocked is skipped while its read is stuck";
    EXPECT_FALSE(find_device(*skipping, "rocep1s0f0")->ports.at(0).counters.empty());
    EXPECT_EQ(skipping->counters_read_at, now) << "read: the blocked cycle had none to carry over";

    fake->release();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the stuck thread finishes
    engine.collect_once();
    EXPECT_FALSE(fake->skipped.back()) << "once its read returned, the file is read again";
}

TEST_F(EngineTest, StopIsPromptWhileAReadIsBlocked) {
    auto fake = std::make_shared<BlockingRead>();
    fake->path = "/sys/x/blocks";
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.state_dir.clear();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    src.read_sysfs = [fake](const fs::path& root, const SysfsReadOptions& o) { return (*fake)(root, o); };
    src.read_deadline = std::chrono::seconds(30);
    Engine engine(cfg, std::move(src), store, log);
    fake->block = true;
    std::thread loop([&] { engine.run(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // run() is waiting on the read
    const auto t0 = std::chrono::steady_clock::now();
    engine.stop();
    loop.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    fake->release();  // lets the abandoned thread end before the fake is gone
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// An RDMA device whose name is not UTF-8 raises its alerts, and they persist, like any other:
// the state file must not throw on the name and take every later cycle with it.
TEST_F(EngineTest, AlertOnADeviceNamedInBadUtf8IsPublishedAndSaved) {
    const fs::path tree = state / "sysfs";
    fs::create_directories(state);
    fs::copy(rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark", tree,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    const std::string bad("r\xff\xfe", 3);
    fs::rename(tree / "class/infiniband/rocep1s0f1", tree / "class/infiniband" / bad);
    std::ofstream(tree / "class/infiniband" / bad / "ports/1/state") << "1: DOWN\n";
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = tree.string();
    cfg->daemon.state_dir = (state / "state").string();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    std::shared_ptr<const Snapshot> s;
    ASSERT_NO_THROW(s = engine.collect_once());
    bool found = false;
    for (const auto& a : s->alerts) found |= a.object.find(bad) != std::string::npos;
    EXPECT_TRUE(found) << "an alert names the device";
    EXPECT_TRUE(fs::exists(state / "state" / "alerts.json"));
}

// The state file is a collector like the others: its last success is stamped too, which
// /api/v1/status shows as last_success_at and data_age_seconds ("null: never succeeded").
TEST_F(EngineTest, StateCollectorCarriesItsLastSuccess) {
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.state_dir = state.string();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    auto s = engine.collect_once();
    const auto state_of = [](const Snapshot& snap) -> const CollectorStatus* {
        for (const auto& c : snap.collectors)
            if (c.name == "state") return &c;
        return nullptr;
    };
    const CollectorStatus* c = state_of(*s);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->success) << c->last_error;
    EXPECT_EQ(c->last_success, now);
    now += std::chrono::seconds(5);
    s = engine.collect_once();
    c = state_of(*s);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->last_success, now);
}

// DCB is asked for the netdevs RoCE ports run over, not for others, and not again on the
// next cycle: mlx5 answers from firmware registers, so a netdev is asked at most every 30 s.
TEST_F(EngineTest, DcbIsAskedForRoceNetdevsOnlyAndNotEveryCycle) {
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.procfs_root = rocewatch::testing::fixtures_dir() + "/procfs/dgx-spark";
    cfg->daemon.state_dir = state.string();
    links.push_back(netdev(6, "docker0", 1500, "172.17.0.1"));
    std::map<std::string, int> asked;
    std::map<std::string, int> stats_asked;
    EngineSources src{.links = [this] { return links; },
                      .dcb =
                          [&](const std::string& n) {
                              ++asked[n];
                              return DcbState{.error = 0, .ieee = {.pfc_enabled = 0x08}};
                          },
                      .driver_stats =
                          [&](const std::string& n) {
                              ++stats_asked[n];
                              return DriverStats{.values = {{"rx_prio3_pause", 7}}};
                          },
                      .phy =
                          [&](const std::string&, const PhyLink*) {
                              return PhyLink{.speed_mbps = 200000,
                                             .fec_uncorrectable_blocks = 3,
                                             .pause_tx_frames = 11,
                                             .pause_rx_frames = 12};
                          },
                      .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    auto s = engine.collect_once();
    (void)engine.collect_once();
    EXPECT_EQ(asked, (std::map<std::string, int>{{"enP2p1s0f0np0", 1}, {"enp1s0f0np0", 1}, {"enp1s0f1np1", 1}}));
    const Link* rail = nullptr;
    for (const auto& l : s->links)
        if (l.name == "enp1s0f0np0") rail = &l;
    ASSERT_NE(rail, nullptr);
    ASSERT_TRUE(rail->dcb);
    EXPECT_EQ(rail->dcb->ieee.pfc_enabled, 0x08);
    for (const auto& l : s->links) {
        if (l.name == "docker0") {
            EXPECT_FALSE(l.dcb);
            EXPECT_TRUE(l.driver_stats.empty());
        }
    }
    // The driver's counters change all the time: read on every cycle, for RoCE netdevs only.
    EXPECT_EQ(stats_asked, (std::map<std::string, int>{{"enP2p1s0f0np0", 2}, {"enp1s0f0np0", 2}, {"enp1s0f1np1", 2}}));
    // ethtool netlink's standard counters join the driver's; the link mode is kept as read.
    EXPECT_EQ(rail->driver_stats, (std::map<std::string, uint64_t>{{"fec_uncorrectable_blocks", 3},
                                                                   {"rx_pause_frames", 12},
                                                                   {"rx_prio3_pause", 7},
                                                                   {"tx_pause_frames", 11}}));
    ASSERT_TRUE(rail->phy);
    EXPECT_EQ(rail->phy->speed_mbps, 200000u);
}

// Transceiver modules are asked for RoCE netdevs only, once per minute (a page is a firmware
// register read on mlx5), and again once the GID tables are re-read after a link event: a module
// may have been swapped.
TEST_F(EngineTest, ModulesAreAskedForRoceNetdevsAfterEventsNotEveryCycle) {
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.procfs_root = rocewatch::testing::fixtures_dir() + "/procfs/dgx-spark";
    cfg->daemon.state_dir = state.string();
    links.push_back(netdev(6, "docker0", 1500, "172.17.0.1"));
    std::map<std::string, int> asked;
    EngineSources src{.links = [this] { return links; },
                      .module =
                          [&](const std::string& n) {
                              ++asked[n];
                              Transceiver t{.spec = "SFF-8636", .type = "QSFP28", .serial = n, .diagnostics = true};
                              t.lanes.assign(4, ModuleLane{.rx_power_mw = 0.8});
                              return t;
                          },
                      .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    auto s = engine.collect_once();
    (void)engine.collect_once();
    const std::map<std::string, int> once{{"enP2p1s0f0np0", 1}, {"enp1s0f0np0", 1}, {"enp1s0f1np1", 1}};
    EXPECT_EQ(asked, once);
    for (const auto& l : s->links) {
        if (l.name == "docker0") {
            EXPECT_FALSE(l.module);
        }
        if (l.name == "enp1s0f1np1") {
            ASSERT_TRUE(l.module);
            EXPECT_EQ(l.module->serial, "enp1s0f1np1");
            EXPECT_EQ(l.module->lanes.size(), 4u);
        }
    }
    engine.wake();
    (void)engine.collect_once();  // links and ports first: the cached module stands
    EXPECT_EQ(asked, once);
    auto after = engine.collect_once();  // with the GID tables: asked again
    EXPECT_EQ(asked, (std::map<std::string, int>{{"enP2p1s0f0np0", 2}, {"enp1s0f0np0", 2}, {"enp1s0f1np1", 2}}));
    for (const auto& l : after->links) {
        if (l.name == "enp1s0f0np0") {
            EXPECT_TRUE(l.module);
        }
    }
}

// lldpd is asked once per kLldpRefresh for every link at the configured socket, again after a link
// event and when the socket changes; a failed ask keeps its last neighbours and shows as the
// "lldp" collector's error; no socket (no lldpd) is no collector at all; "" asks nothing.
TEST_F(EngineTest, LldpNeighboursAreAskedOnACadenceAndKeptThroughAFailedAsk) {
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark";
    cfg->daemon.procfs_root = rocewatch::testing::fixtures_dir() + "/procfs/dgx-spark";
    cfg->daemon.state_dir = state.string();
    cfg->daemon.lldpd_socket = "/run/test-lldpd.socket";
    links.push_back(netdev(6, "docker0", 1500, "172.17.0.1"));
    std::vector<std::string> asked;
    LldpAnswer next;
    next.by_netdev["enp1s0f1np1"] = LldpNeighbor{.system_name = "leaf-07", .port_id = "Ethernet12"};
    EngineSources src{.links = [this] { return links; },
                      .lldp =
                          [&](const std::string& path) {
                              asked.push_back(path);
                              return next;
                          },
                      .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    const auto lldp_of = [](const Snapshot& s, const std::string& name) -> std::optional<LldpNeighbor> {
        for (const auto& l : s.links)
            if (l.name == name && l.lldp) return *l.lldp;
        return std::nullopt;
    };
    const auto collector = [](const Snapshot& s) {
        for (const auto& c : s.collectors)
            if (c.name == "lldp") return std::optional<CollectorStatus>(c);
        return std::optional<CollectorStatus>{};
    };
    auto s = engine.collect_once();
    (void)engine.collect_once();
    EXPECT_EQ(asked, std::vector<std::string>{"/run/test-lldpd.socket"});
    ASSERT_TRUE(lldp_of(*s, "enp1s0f1np1"));
    EXPECT_EQ(lldp_of(*s, "enp1s0f1np1")->port_id, "Ethernet12");
    EXPECT_FALSE(lldp_of(*s, "docker0"));
    ASSERT_TRUE(collector(*s));
    EXPECT_TRUE(collector(*s)->success);

    // lldpd stops answering: asked again after the link event, the old neighbours stand.
    next = LldpAnswer{.error = "lldpd did not answer in time"};
    engine.wake();
    (void)engine.collect_once();
    s = engine.collect_once();
    EXPECT_EQ(asked.size(), 2u);
    ASSERT_TRUE(lldp_of(*s, "enp1s0f1np1"));
    EXPECT_EQ(lldp_of(*s, "enp1s0f1np1")->system_name, "leaf-07");
    ASSERT_TRUE(collector(*s));
    EXPECT_FALSE(collector(*s)->success);
    EXPECT_EQ(collector(*s)->last_error, "lldpd did not answer in time");

    // Another socket is asked at once; where there is none, lldpd is absent, not failing.
    next = LldpAnswer{.absent = true};
    auto other = std::make_shared<Config>(*cfg);
    other->daemon.lldpd_socket = "/run/other.socket";
    engine.apply_config(other);
    s = engine.collect_once();
    ASSERT_EQ(asked.size(), 3u);
    EXPECT_EQ(asked.back(), "/run/other.socket");
    EXPECT_FALSE(lldp_of(*s, "enp1s0f1np1"));
    EXPECT_FALSE(collector(*s));

    auto off = std::make_shared<Config>(*cfg);
    off->daemon.lldpd_socket = "";
    engine.apply_config(off);
    s = engine.collect_once();
    EXPECT_EQ(asked.size(), 3u);
    EXPECT_FALSE(lldp_of(*s, "enp1s0f1np1"));
    EXPECT_FALSE(collector(*s));
}
