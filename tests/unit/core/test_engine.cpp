// Engine: one collection cycle over a fixture tree and injected links, and state across restarts.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>

#include "core/engine.hpp"
#include "test_env.hpp"

using namespace rocewatch;
namespace fs = std::filesystem;

namespace {

Link netdev(int idx, std::string name, uint32_t mtu, std::string addr) {
    Link l{.ifindex = idx, .name = std::move(name), .operstate = "up", .admin_up = true, .carrier = true, .mtu = mtu};
    if (!addr.empty()) l.addresses.push_back({.family = AF_INET, .address = std::move(addr), .prefixlen = 24, .scope = "global"});
    return l;
}

struct EngineTest : ::testing::Test {
    fs::path state = fs::temp_directory_path() / ("rw-engine-" + std::to_string(::getpid()));
    std::vector<Link> links;
    TimePoint now = TimePoint{} + std::chrono::hours(24 * 365 * 50);
    SnapshotStore store;
    std::shared_ptr<spdlog::logger> log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());

    void SetUp() override {
        fs::remove_all(state);
        links = {netdev(3, "enp1s0f0np0", 9000, "192.168.100.11"), netdev(4, "enp1s0f1np1", 9000, "192.168.200.11"),
                 netdev(5, "enP2p1s0f0np0", 9000, "")};
    }
    void TearDown() override { fs::remove_all(state); }

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
    links[0].mtu = 1500;  // the field notes' first mistake
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
    // A private copy of the tree, so the test can change a GID behind the engine's back.
    const fs::path tree = state / "sysfs";
    fs::create_directories(state);
    fs::copy(rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark", tree,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    auto cfg = std::make_shared<Config>();
    cfg->daemon.sysfs_root = tree.string();
    cfg->daemon.state_dir.clear();
    EngineSources src{.links = [this] { return links; }, .now = [this] { return now; }};
    Engine engine(cfg, std::move(src), store, log);
    engine.collect_once();
    const fs::path type3 = tree / "class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3";
    std::ofstream(type3) << "IB/RoCE v1\n";
    auto quiet = engine.collect_once();
    EXPECT_EQ(find_device(*quiet, "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index, 3)
        << "no event, inside the refresh: the table is carried over, not re-read";
    EXPECT_FALSE(find_device(*quiet, "rocep1s0f0")->ports.at(0).counters.empty());
    engine.wake();  // a netlink event: the next cycles read the tables again
    auto woken = engine.collect_once();
    EXPECT_FALSE(find_device(*woken, "rocep1s0f0")->ports.at(0).roce_v2_ipv4_gid_index)
        << "re-read after the event: GID 3 is no longer RoCE v2";
}
