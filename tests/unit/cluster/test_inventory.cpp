// The inventory parser (file_sd JSON), hostile input included, finding this node, and the ring.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/cluster/inventory.hpp"

namespace rocewatch {
namespace {

Inventory parsed(const std::string& text) {
    auto r = parse_inventory(text);
    EXPECT_TRUE(r.inventory) << r.error;
    return r.inventory.value_or(Inventory{});
}

std::string refused(const std::string& text) {
    auto r = parse_inventory(text);
    EXPECT_FALSE(r.inventory) << text.substr(0, 80);
    return r.error;
}

TEST(Inventory, ParsesFileSdGroupsSortedByTargetWithLabels) {
    auto inv = parsed(R"([{"targets": ["node02:9879", "node01:9879"], "labels": {"rack": "r07"}},
                          {"targets": ["[fd00::3]:9000", "10.0.0.4"]}])");
    ASSERT_EQ(inv.entries.size(), 4u);
    EXPECT_EQ(inv.entries[0].target, "10.0.0.4");
    EXPECT_EQ(inv.entries[0].port, kDefaultInventoryPort);
    EXPECT_TRUE(inv.entries[0].labels.empty());
    EXPECT_EQ(inv.entries[1].target, "[fd00::3]:9000");
    EXPECT_EQ(inv.entries[1].host, "fd00::3");
    EXPECT_EQ(inv.entries[1].port, 9000);
    EXPECT_EQ(inv.entries[2].target, "node01:9879");
    EXPECT_EQ(inv.entries[2].labels.at("rack"), "r07");
    EXPECT_EQ(inv.entries[3].host, "node02");
    EXPECT_TRUE(inv.warnings.empty());
}

TEST(Inventory, EmptyListIsAnEmptyInventory) {
    EXPECT_TRUE(parsed("[]").entries.empty());
    EXPECT_TRUE(parsed(R"([{"targets": []}])").entries.empty());
}

TEST(Inventory, DuplicateTargetKeepsTheFirstGroupAndWarns) {
    auto inv = parsed(R"([{"targets": ["a:1"], "labels": {"rack": "r1"}},
                          {"targets": ["a:1", "b:1"], "labels": {"rack": "r2"}}])");
    ASSERT_EQ(inv.entries.size(), 2u);
    EXPECT_EQ(inv.entries[0].labels.at("rack"), "r1");
    ASSERT_EQ(inv.warnings.size(), 1u);
    EXPECT_NE(inv.warnings[0].find("a:1 is listed in group 1 and again in group 2"), std::string::npos)
        << inv.warnings[0];
}

TEST(Inventory, RefusesBadJsonAndWrongShapesWithAReason) {
    EXPECT_EQ(refused(""), "not valid JSON");
    EXPECT_EQ(refused("[{"), "not valid JSON");
    EXPECT_NE(refused(R"({"targets": []})").find("expected a JSON array"), std::string::npos);
    EXPECT_NE(refused(R"([1])").find("group 1: expected an object"), std::string::npos);
    EXPECT_NE(refused(R"([{"labels": {}}])").find("\"targets\" must be an array"), std::string::npos);
    EXPECT_NE(refused(R"([{"targets": "a:1"}])").find("\"targets\" must be an array"), std::string::npos);
    EXPECT_NE(refused(R"([{"targets": [1]}])").find("targets must be strings"), std::string::npos);
    EXPECT_NE(refused(R"([{"targets": [], "labels": []}])").find("\"labels\" must be an object"), std::string::npos);
    EXPECT_NE(refused(R"([{"targets": [], "labels": {"a": 1}}])").find("label values must be strings"),
              std::string::npos);
    EXPECT_NE(refused(R"([{"targets": [], "labels": {"1a": "x"}}])").find("not a Prometheus label name"),
              std::string::npos);
    EXPECT_NE(refused(R"([{"targets": [], "tragets": []}])").find("unknown key \"tragets\""), std::string::npos);
}

TEST(Inventory, RefusesBadTargets) {
    for (const char* t : {"", ":9879", "a:", "a:0", "a:65536", "a:12x", "fd00::1:9879", "[fd00::1", "[]:1",
                          "[fd00::1]x", "a b:1", "http://a:1", "user@a:1"}) {
        std::string text = std::string(R"([{"targets": [")") + t + R"("]}])";
        EXPECT_NE(refused(text).find("target"), std::string::npos) << t;
    }
}

TEST(Inventory, HostileSizesAreBounded) {
    // Deep nesting is refused before the JSON parser recurses into it.
    EXPECT_NE(refused(std::string(100000, '[') + std::string(100000, ']')).find("nested deeper"), std::string::npos);
    // A string that only looks deep is fine.
    EXPECT_EQ(parsed(R"([{"targets": ["a:1"], "labels": {"x": "[[[[[[[[[[[[[[[["}}])").entries.size(), 1u);
    // Over the byte limit.
    std::string big = R"([{"targets": [], "labels": {"x": ")" + std::string(kMaxInventoryBytes, 'a') + "\"}}]";
    EXPECT_NE(refused(big).find("over the limit"), std::string::npos);
    // Too many targets.
    std::string many = R"([{"targets": [)";
    for (size_t i = 0; i <= kMaxInventoryTargets; ++i) many += (i ? ",\"h" : "\"h") + std::to_string(i) + ":1\"";
    many += "]}]";
    EXPECT_NE(refused(many).find("more than"), std::string::npos);
    // A label value over its bound.
    EXPECT_NE(refused(R"([{"targets": [], "labels": {"x": ")" + std::string(kMaxInventoryLabelBytes + 1, 'v') + "\"}}]")
                  .find("over"),
              std::string::npos);
}

TEST(Inventory, ReadRefusesWhatIsNotARegularFile) {
    auto dir = std::filesystem::temp_directory_path() / ("rw_inv_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    EXPECT_NE(read_inventory(dir).error.find("not a regular file"), std::string::npos);
    EXPECT_NE(read_inventory(dir / "missing.json").error.find("cannot be read: No such file or directory"),
              std::string::npos);
    { std::ofstream(dir / "inv.json") << R"([{"targets": ["a:1"]}])"; }
    auto r = read_inventory(dir / "inv.json");
    ASSERT_TRUE(r.inventory) << r.error;
    EXPECT_EQ(r.inventory->entries.size(), 1u);
    { std::ofstream(dir / "bad.json") << "[{"; }
    auto bad = read_inventory(dir / "bad.json");
    EXPECT_FALSE(bad.inventory);
    EXPECT_NE(bad.error.find("bad.json: not valid JSON"), std::string::npos) << bad.error;
    std::filesystem::remove_all(dir);
}

TEST(InventorySelf, AnAddressBeatsAName) {
    auto inv = parsed(R"([{"targets": ["node01:9879", "10.0.0.2:9879", "10.0.0.3:9879"]}])");
    auto m = find_self(inv, "node01", {"10.0.0.2", "127.0.0.1"}, 9879);
    ASSERT_TRUE(m.index);
    EXPECT_EQ(inv.entries[*m.index].target, "10.0.0.2:9879");
    EXPECT_NE(m.reason.find("address 10.0.0.2"), std::string::npos) << m.reason;
}

TEST(InventorySelf, ByNameWithOrWithoutDomainAndOnlyOnOurPort) {
    auto inv = parsed(R"([{"targets": ["node01.example.net:9879", "node02:9879", "node01.example.net:9000"]}])");
    auto m = find_self(inv, "NODE01", {"10.9.9.9"}, 9879);
    ASSERT_TRUE(m.index) << m.reason;
    EXPECT_EQ(inv.entries[*m.index].target, "node01.example.net:9879");
    EXPECT_NE(m.reason.find("name"), std::string::npos);
    auto on_other_port = find_self(inv, "node02", {}, 9000);
    EXPECT_FALSE(on_other_port.index);
    EXPECT_NE(on_other_port.reason.find("no entry"), std::string::npos);
}

TEST(InventorySelf, TwoEqualFitsAreNoMatch) {
    auto inv = parsed(R"([{"targets": ["10.0.0.1:9879", "10.0.1.1:9879"]}])");
    auto m = find_self(inv, "x", {"10.0.0.1", "10.0.1.1"}, 9879);
    EXPECT_FALSE(m.index);
    EXPECT_NE(m.reason.find("ambiguous: 2 entries"), std::string::npos) << m.reason;
}

TEST(InventoryRing, SuccessorsWrapAndNeverRepeatOrIncludeSelf) {
    EXPECT_EQ(ring_successors(10, 8, 3), (std::vector<size_t>{9, 0, 1}));
    EXPECT_EQ(ring_successors(3, 1, 3), (std::vector<size_t>{2, 0}));
    EXPECT_EQ(ring_successors(1, 0, 3), (std::vector<size_t>{}));
    EXPECT_EQ(ring_successors(0, 0, 3), (std::vector<size_t>{}));
    EXPECT_EQ(ring_successors(5, 7, 3), (std::vector<size_t>{}));
    // Every node is watched by exactly k others.
    std::vector<int> watched(2000, 0);
    for (size_t i = 0; i < 2000; ++i)
        for (size_t j : ring_successors(2000, i, 3)) ++watched[j];
    for (int w : watched) EXPECT_EQ(w, 3);
}

// ---------------------------------------------------------------- rotating peers

TEST(RotatingPeers, NeverSelfNorARingSuccessorNorOneTwice) {
    for (size_t n : {2u, 3u, 4u, 5u, 12u, 64u}) {
        for (size_t self = 0; self < n; ++self) {
            const auto ring = ring_successors(n, self, 3);
            for (uint64_t round = 0; round < 40; ++round) {
                const auto rot = rotating_peers(n, self, 3, 2, round);
                std::set<size_t> seen(rot.begin(), rot.end());
                EXPECT_EQ(seen.size(), rot.size()) << "n " << n << " round " << round;
                EXPECT_FALSE(seen.count(self));
                for (size_t r : ring) EXPECT_FALSE(seen.count(r)) << "n " << n << ": " << r << " is a ring successor";
                EXPECT_EQ(rot.size(), std::min<size_t>(2, n > 4 ? n - 4 : 0));
            }
        }
    }
}

TEST(RotatingPeers, EachNodeIsProbedByExactlyMInARound) {
    const size_t n = 64, k = 3, m = 4;
    for (uint64_t round : {0u, 1u, 7u, 1000u}) {
        std::vector<size_t> probed_by(n, 0);
        for (size_t i = 0; i < n; ++i)
            for (size_t j : rotating_peers(n, i, k, m, round)) ++probed_by[j];
        for (size_t j = 0; j < n; ++j) EXPECT_EQ(probed_by[j], m) << "node " << j << " round " << round;
    }
}

TEST(RotatingPeers, EveryPairIsCoveredAfterCeilOthersOverMRounds) {
    for (auto [n, k, m] : {std::tuple<size_t, size_t, size_t>{12, 3, 2}, {13, 3, 2}, {257, 3, 16}, {7, 0, 3}}) {
        const size_t rounds = (n - 1 - k + m - 1) / m;
        std::set<std::pair<size_t, size_t>> pairs;
        for (size_t i = 0; i < n; ++i) {
            for (size_t j : ring_successors(n, i, k)) pairs.insert({i, j});
            for (uint64_t r = 5; r < 5 + rounds; ++r)  // any run of that many rounds
                for (size_t j : rotating_peers(n, i, k, m, r)) pairs.insert({i, j});
        }
        EXPECT_EQ(pairs.size(), n * (n - 1))
            << "n " << n << " k " << k << " m " << m << " after " << rounds << " rounds";
    }
}

TEST(RotatingPeers, NothingToRotateOverInSmallInventories) {
    EXPECT_TRUE(rotating_peers(4, 0, 3, 2, 0).empty());  // the ring has everyone
    EXPECT_TRUE(rotating_peers(0, 0, 3, 2, 0).empty());
    EXPECT_TRUE(rotating_peers(10, 10, 3, 2, 0).empty());
    EXPECT_TRUE(rotating_peers(10, 0, 3, 0, 0).empty());
    EXPECT_EQ(rotating_peers(6, 0, 3, 5, 0).size(), 2u);  // m capped at what is left
}

}  // namespace
}  // namespace rocewatch
