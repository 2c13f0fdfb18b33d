// The inventory file's watcher thread: follows the file, and sleeps while nothing happens.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "daemon/cluster/inventory.hpp"
#include "daemon/cluster/inventory_keeper.hpp"

namespace fs = std::filesystem;
using namespace rocewatch;

namespace {

std::set<std::string> tasks() {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator("/proc/self/task")) out.insert(e.path().filename().string());
    return out;
}

long voluntary_switches(const std::string& tid) {
    std::ifstream f("/proc/self/task/" + tid + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(line.find(':') + 1));
    return -1;
}

void write_atomically(const fs::path& p, const std::string& text) {
    const fs::path tmp = p.string() + ".tmp";
    std::ofstream(tmp) << text;
    fs::rename(tmp, p);
}

// A fresh directory named after `tag` holding inventory.json with node01 alone: the file.
fs::path inventory_in_fresh_dir(const std::string& tag) {
    const fs::path dir = fs::temp_directory_path() / ("rw-inventory-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_atomically(dir / "inventory.json", R"([{"targets": ["node01:9879"]}])");
    return dir / "inventory.json";
}

std::shared_ptr<spdlog::logger> null_log() {
    return std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
}

LocalIdentity node01() { return LocalIdentity{.hostname = "node01", .addresses = {}}; }

}  // namespace

// Between file changes and its 5 s recheck the thread sleeps in poll(): it woke every 200 ms
// to look for a stop, and stop() now wakes it through an eventfd.
TEST(InventoryKeeper, FollowsTheFileAndSleepsWhileNothingHappens) {
    const fs::path file = inventory_in_fresh_dir("follow");
    InventoryKeeper keeper(file.string(), 9879, node01, null_log());
    ASSERT_EQ(keeper.latest()->inventory.entries.size(), 1u);

    const auto before = tasks();
    keeper.start();
    std::string tid;
    for (int i = 0; i < 100 && tid.empty(); ++i) {
        for (const auto& t : tasks())
            if (!before.count(t)) tid = t;
        if (tid.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_FALSE(tid.empty()) << "the watcher thread";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const long woke = voluntary_switches(tid);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_LE(voluntary_switches(tid) - woke, 1) << "woken while nothing happened (the 5 s recheck at most)";

    write_atomically(file, R"([{"targets": ["node01:9879", "node02:9879"]}])");
    for (int i = 0; i < 100 && keeper.latest()->inventory.entries.size() != 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(keeper.latest()->inventory.entries.size(), 2u) << "the change is read";
    // One change, one reload: re-arming the watch after a load queued IN_IGNORED for the old
    // watch, which read as another change, so the file was reloaded ten times a second forever.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const auto loads = keeper.latest()->loads;
    const long settled = voluntary_switches(tid);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_EQ(keeper.latest()->loads, loads) << "reloaded with no change to the file";
    EXPECT_LE(voluntary_switches(tid) - settled, 1) << "woken after the change was read";

    const auto t0 = std::chrono::steady_clock::now();
    keeper.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3)) << "stop() wakes the thread";
    fs::remove_all(file.parent_path());
}

// Kubernetes updates a mounted ConfigMap by swapping a symlink: inventory.json ->
// ..data/inventory.json, and ..data is renamed to point at a new directory. No event names
// inventory.json; the file it leads to changed all the same, and is read at once.
TEST(InventoryKeeper, FollowsASymlinkSwappedUnderIt) {
    const fs::path dir = fs::temp_directory_path() / ("rw-inventory-k8s-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "..v1");
    fs::create_directories(dir / "..v2");
    std::ofstream(dir / "..v1" / "inventory.json") << R"([{"targets": ["node01:9879"]}])";
    std::ofstream(dir / "..v2" / "inventory.json") << R"([{"targets": ["node01:9879", "node02:9879", "node03:9879"]}])";
    fs::create_directory_symlink("..v1", dir / "..data");
    fs::create_symlink("..data/inventory.json", dir / "inventory.json");
    InventoryKeeper keeper((dir / "inventory.json").string(), 9879, node01, null_log());
    keeper.start();
    ASSERT_EQ(keeper.latest()->inventory.entries.size(), 1u);
    fs::create_directory_symlink("..v2", dir / "..data_tmp");
    fs::rename(dir / "..data_tmp", dir / "..data");
    for (int i = 0; i < 40 && keeper.latest()->inventory.entries.size() != 3; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(keeper.latest()->inventory.entries.size(), 3u) << "read within 2 s of the swap (no 5 s recheck)";
    const auto loads = keeper.latest()->loads;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(keeper.latest()->loads, loads) << "one swap, one load";
    keeper.stop();
    fs::remove_all(dir);
}

// No inventory, no thread; the reload that names the first one starts it, and it follows the file.
TEST(InventoryKeeper, StartsItsThreadWithTheFirstInventory) {
    const fs::path file = inventory_in_fresh_dir("late");
    InventoryKeeper keeper("", 9879, node01, null_log());
    keeper.start();
    EXPECT_FALSE(keeper.running());
    keeper.reload(file.string());
    EXPECT_TRUE(keeper.running());
    ASSERT_EQ(keeper.latest()->inventory.entries.size(), 1u);
    write_atomically(file, R"([{"targets": ["node01:9879", "node02:9879"]}])");
    for (int i = 0; i < 100 && keeper.latest()->inventory.entries.size() != 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(keeper.latest()->inventory.entries.size(), 2u) << "the change is read without a SIGHUP";
    keeper.stop();
    EXPECT_FALSE(keeper.running());
    keeper.reload(file.string());
    EXPECT_FALSE(keeper.running()) << "a stopped keeper starts no thread";
    fs::remove_all(file.parent_path());
}

// The peers an inventory gives: named by the target as written, addressed with its port (a bare
// host is port 9879), and never one a [[peers]] entry already names or addresses.
TEST(InventoryPeers, BareHostsGetTheDefaultPortAndConfiguredPeersWin) {
    auto parsed = parse_inventory(R"([{"targets": ["10.0.0.1:9879", "10.0.0.2", "[fd00::3]:9000", "node4"]}])");
    ASSERT_TRUE(parsed.inventory) << parsed.error;
    ClusterState state;
    state.inventory = *parsed.inventory;
    state.self.index = 0;  // sorted: 10.0.0.1:9879, 10.0.0.2, [fd00::3]:9000, node4
    Config c;
    c.cluster.ring_successors = 3;
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& p : inventory_peers(state, c)) got.emplace_back(p.name, p.address);
    const std::vector<std::pair<std::string, std::string>> want = {{"10.0.0.2", "10.0.0.2:9879"},
                                                                   {"[fd00::3]:9000", "[fd00::3]:9000"},
                                                                   {"node4", "node4:9879"}};
    EXPECT_EQ(got, want);

    // A configured peer of the same name, or at the same address however written, keeps its
    // own entry: two peers of one name would share a hello and results.
    c.peers = {PeerConfig{.name = "10.0.0.2", .address = "10.9.9.9:9879"},
               PeerConfig{.name = "four", .address = "node4:9879"}};
    got.clear();
    for (const auto& p : inventory_peers(state, c)) got.emplace_back(p.name, p.address);
    EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{{"[fd00::3]:9000", "[fd00::3]:9000"}}));
}
