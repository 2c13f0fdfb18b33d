// Sysfs reader: pure parsers, the fixture trees field by field, GID choice, host facts, verbs.
#include <gtest/gtest.h>

#include <tuple>

#include <algorithm>
#include <fstream>
#include <map>
#include <vector>
#include <string>
#include <thread>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <pthread.h>
#include <sched.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/sysfs/rdma_sysfs.hpp"
#include "daemon/sysfs/verbs.hpp"

#include <infiniband/verbs.h>
#include "util/clock.hpp"
#include "test_env.hpp"

using namespace rocewatch;
using rocewatch::testing::fixtures_dir;

namespace {

std::filesystem::path sysfs_fixture(const std::string& name) {
    return std::filesystem::path(fixtures_dir()) / "sysfs" / name;
}

const RdmaDevice& device(const SysfsReadResult& r, const std::string& name) {
    auto it = std::find_if(r.devices.begin(), r.devices.end(), [&](const RdmaDevice& d) { return d.name == name; });
    if (it == r.devices.end()) throw std::runtime_error("no device " + name);
    return *it;
}

const GidEntry* gid(const RdmaPort& p, int index) {
    for (const auto& g : p.gids)
        if (g.index == index) return &g;
    return nullptr;
}

// A scratch sysfs root for cases no committed fixture holds.
struct ScratchTree {
    std::filesystem::path root;
    explicit ScratchTree(const std::string& name)
        : root(std::filesystem::path(::testing::TempDir()) / ("rw_sysfs_" + name)) {
        std::filesystem::remove_all(root);
    }
    ~ScratchTree() {
        std::error_code ec;
        std::filesystem::remove_all(root, ec);
    }
    void write(const std::filesystem::path& rel, const std::string& text) const {
        std::filesystem::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << text;
    }
};

bool has_error_about(const SysfsReadResult& r, const std::string& fragment) {
    return std::any_of(r.errors.begin(), r.errors.end(),
                       [&](const SysfsError& e) { return e.text().find(fragment) != std::string::npos; });
}

GidEntry roce_gid(int index, const std::string& ipv4, const std::string& type = "RoCE v2",
                  const std::string& netdev = "enp1s0f0np0") {
    GidEntry g;
    g.index = index;
    g.type = type;
    g.netdev = netdev;
    g.ipv4 = ipv4;
    g.gid = ipv4.empty() ? "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13" : "0000:0000:0000:0000:0000:ffff:0000:0000";
    return g;
}

}  // namespace

// ---------------------------------------------------------------- parsers

TEST(SysfsParse, EnumLine) {
    EXPECT_EQ(parse_enum_line("4: ACTIVE"), (std::pair<int, std::string>{4, "ACTIVE"}));
    EXPECT_EQ(parse_enum_line("5: LinkUp\n"), (std::pair<int, std::string>{5, "LinkUp"}));
    EXPECT_EQ(parse_enum_line("1: DOWN"), (std::pair<int, std::string>{1, "DOWN"}));
    EXPECT_EQ(parse_enum_line("3: Disabled\n"), (std::pair<int, std::string>{3, "Disabled"}));
    EXPECT_FALSE(parse_enum_line("ACTIVE"));
    EXPECT_FALSE(parse_enum_line(""));
    EXPECT_FALSE(parse_enum_line("4:"));
    EXPECT_FALSE(parse_enum_line(": ACTIVE"));
    EXPECT_FALSE(parse_enum_line("x4: ACTIVE"));
}

TEST(SysfsParse, RateGbps) {
    EXPECT_EQ(parse_rate_gbps("100 Gb/sec (4X EDR)"), 100.0);
    EXPECT_EQ(parse_rate_gbps("100 Gb/sec (4X EDR)\n"), 100.0);
    EXPECT_EQ(parse_rate_gbps("2.5 Gb/sec (1X SDR)"), 2.5);
    EXPECT_EQ(parse_rate_gbps("2400 Gb/sec (12X XDR)"), 2400.0);
    EXPECT_FALSE(parse_rate_gbps("99999999999999999999 Gb/sec (4X EDR)")) << "garbled, not 1.25e28 B/s";
    EXPECT_EQ(parse_rate_gbps("10 Gb/sec (1X QDR)"), 10.0);
    EXPECT_EQ(parse_rate_gbps("200 Gb/sec (4X HDR)"), 200.0);
    EXPECT_EQ(parse_rate_gbps("10 Gb/sec (1X FDR10)"), 10.0);
    EXPECT_FALSE(parse_rate_gbps(""));
    EXPECT_FALSE(parse_rate_gbps("\n"));
    EXPECT_FALSE(parse_rate_gbps("fast"));
    EXPECT_FALSE(parse_rate_gbps("100"));
    EXPECT_FALSE(parse_rate_gbps("100 Mb/sec"));
    EXPECT_FALSE(parse_rate_gbps("-1 Gb/sec (1X SDR)"));
}

TEST(SysfsParse, Ipv4FromGid) {
    EXPECT_EQ(ipv4_from_gid("0000:0000:0000:0000:0000:ffff:c0a8:640b"), "192.168.100.11");
    EXPECT_EQ(ipv4_from_gid("0000:0000:0000:0000:0000:ffff:c0a8:c80b\n"), "192.168.200.11");
    EXPECT_EQ(ipv4_from_gid("0000:0000:0000:0000:0000:ffff:0a00:0001"), "10.0.0.1");
    EXPECT_EQ(ipv4_from_gid("fe80:0000:0000:0000:32c5:99ff:fe3e:6a13"), "");
    EXPECT_EQ(ipv4_from_gid("0000:0000:0000:0000:0000:0000:0000:0000"), "");
    EXPECT_EQ(ipv4_from_gid("0000:0000:0000:0000:0000:fffe:c0a8:640b"), "") << "not v4-mapped";
    EXPECT_EQ(ipv4_from_gid("garbage"), "");
    EXPECT_EQ(ipv4_from_gid(""), "");
}

TEST(SysfsParse, GidShape) {
    EXPECT_TRUE(is_zero_gid("0000:0000:0000:0000:0000:0000:0000:0000\n"));
    EXPECT_FALSE(is_zero_gid("fe80:0000:0000:0000:32c5:99ff:fe3e:6a13"));
    EXPECT_FALSE(is_zero_gid("not-a-gid"));
    EXPECT_TRUE(is_valid_gid("fe80:0000:0000:0000:32c5:99ff:fe3e:6a13"));
    EXPECT_FALSE(is_valid_gid("not-a-gid"));
    EXPECT_FALSE(is_valid_gid(""));
}

TEST(SysfsParse, Counter) {
    EXPECT_EQ(parse_u64_counter("298250000000\n"), 298250000000u);
    EXPECT_EQ(parse_u64_counter("0"), 0u);
    EXPECT_EQ(parse_u64_counter("18446744073709551615\n"), UINT64_MAX);
    EXPECT_FALSE(parse_u64_counter("18446744073709551616")) << "overflow";
    EXPECT_FALSE(parse_u64_counter("garbage\n"));
    EXPECT_FALSE(parse_u64_counter(""));
    EXPECT_FALSE(parse_u64_counter("\n"));
    EXPECT_FALSE(parse_u64_counter("-1"));
    EXPECT_FALSE(parse_u64_counter("12abc"));
    EXPECT_FALSE(parse_u64_counter("1 2"));
}

// ---------------------------------------------------------------- DGX Spark tree

TEST(SysfsRead, DgxSparkDevices) {
    const auto r = read_rdma_devices(sysfs_fixture("dgx-spark"));
    EXPECT_EQ(r.read_errors, 0u);
    EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors.front().text());
    ASSERT_EQ(r.devices.size(), 3u);
    // Sorted by name (byte order puts the capital P first).
    EXPECT_EQ(r.devices[0].name, "roceP2p1s0f0");
    EXPECT_EQ(r.devices[1].name, "rocep1s0f0");
    EXPECT_EQ(r.devices[2].name, "rocep1s0f1");

    const auto& d = device(r, "rocep1s0f0");
    EXPECT_EQ(d.driver, "mlx5_core");
    EXPECT_EQ(d.node_guid, "30c5:9903:003e:6a13");
    EXPECT_EQ(d.sys_image_guid, "30c5:9903:003e:6a13");
    EXPECT_EQ(d.fw_ver, "28.45.4028");
    EXPECT_EQ(d.board_id, "NVD0000000087");
    EXPECT_EQ(d.hca_type, "MT4129");
    EXPECT_EQ(d.node_type, "1: CA");
    EXPECT_EQ(d.netdevs, std::vector<std::string>{"enp1s0f0np0"});
    EXPECT_EQ(device(r, "rocep1s0f1").node_guid, "30c5:9903:003e:6a14");
    EXPECT_EQ(device(r, "rocep1s0f1").sys_image_guid, "30c5:9903:003e:6a13");
    EXPECT_EQ(device(r, "rocep1s0f1").netdevs, std::vector<std::string>{"enp1s0f1np1"});
    EXPECT_EQ(device(r, "roceP2p1s0f0").node_guid, "30c5:9903:003e:6a17");
    EXPECT_EQ(device(r, "roceP2p1s0f0").netdevs, std::vector<std::string>{"enP2p1s0f0np0"});
}

TEST(SysfsRead, DgxSparkPort) {
    const auto r = read_rdma_devices(sysfs_fixture("dgx-spark"));
    const auto& d = device(r, "rocep1s0f0");
    ASSERT_EQ(d.ports.size(), 1u);
    const auto& p = d.ports[0];
    EXPECT_EQ(p.port, 1u);
    EXPECT_EQ(p.state, 4);
    EXPECT_EQ(p.state_name, "ACTIVE");
    EXPECT_EQ(p.phys_state, 5);
    EXPECT_EQ(p.phys_state_name, "LinkUp");
    EXPECT_EQ(p.rate_gbps, 100.0);
    EXPECT_EQ(p.rate_text, "100 Gb/sec (4X EDR)");
    EXPECT_EQ(p.link_layer, "Ethernet");
    EXPECT_EQ(p.netdev, "enp1s0f0np0");
    // sysfs knows nothing of these; verbs fills them.
    EXPECT_FALSE(p.active_mtu);
    EXPECT_FALSE(p.max_mtu);
}

TEST(SysfsRead, DgxSparkGidTable) {
    const auto r = read_rdma_devices(sysfs_fixture("dgx-spark"));
    const auto& p = device(r, "rocep1s0f0").ports.at(0);
    ASSERT_EQ(p.gids.size(), 4u) << "the 12 all-zero slots are skipped";
    for (int i = 0; i < 4; ++i) EXPECT_EQ(p.gids[static_cast<std::size_t>(i)].index, i);

    EXPECT_EQ(p.gids[0].gid, "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13");
    EXPECT_EQ(p.gids[0].type, "IB/RoCE v1");
    EXPECT_EQ(p.gids[0].ipv4, "");
    EXPECT_EQ(p.gids[1].type, "RoCE v2");
    EXPECT_EQ(p.gids[1].ipv4, "");
    EXPECT_EQ(p.gids[2].gid, "0000:0000:0000:0000:0000:ffff:c0a8:640b");
    EXPECT_EQ(p.gids[2].type, "IB/RoCE v1");
    EXPECT_EQ(p.gids[2].ipv4, "192.168.100.11");
    EXPECT_EQ(p.gids[3].type, "RoCE v2");
    EXPECT_EQ(p.gids[3].ipv4, "192.168.100.11");
    for (const auto& g : p.gids) EXPECT_EQ(g.netdev, "enp1s0f0np0");

    // Index 3, as on a DGX Spark node (`ib_write_bw -x 3`), on both rails.
    EXPECT_EQ(p.roce_v2_ipv4_gid_index, 3);
    EXPECT_EQ(p.roce_v2_ipv4_address, "192.168.100.11");
    const auto& p2 = device(r, "rocep1s0f1").ports.at(0);
    EXPECT_EQ(p2.roce_v2_ipv4_gid_index, 3);
    EXPECT_EQ(p2.roce_v2_ipv4_address, "192.168.200.11");
    const auto& p3 = device(r, "roceP2p1s0f0").ports.at(0);
    EXPECT_EQ(p3.roce_v2_ipv4_address, "192.168.100.15");
}

TEST(SysfsRead, DgxSparkCounters) {
    const auto r = read_rdma_devices(sysfs_fixture("dgx-spark"));
    const auto& p = device(r, "rocep1s0f0").ports.at(0);
    // 1,193 GB sent by a long dual-rail run: 298,250,000,000 words of 4 bytes.
    EXPECT_EQ(p.counters.at("port_xmit_data"), 298250000000u);
    EXPECT_EQ(p.xmit_bytes, 1193000000000u);
    EXPECT_EQ(p.counters.at("port_rcv_data"), 287750000000u);
    EXPECT_EQ(p.rcv_bytes, 1151000000000u);
    EXPECT_EQ(p.counters.at("port_xmit_wait"), 1874u);
    EXPECT_EQ(p.counters.at("link_downed"), 0u);
    EXPECT_EQ(p.counters.at("VL15_dropped"), 0u);
    EXPECT_EQ(p.counters.size(), 21u);
    EXPECT_EQ(device(r, "rocep1s0f1").ports.at(0).xmit_bytes, 420000000000u);

    EXPECT_EQ(p.hw_counters.at("np_cnp_sent"), 1520u);
    EXPECT_EQ(p.hw_counters.at("rp_cnp_handled"), 1488u);
    EXPECT_EQ(p.hw_counters.at("np_ecn_marked_roce_packets"), 1520u);
    EXPECT_EQ(p.hw_counters.at("rx_write_requests"), 2912334u);
    EXPECT_EQ(p.hw_counters.at("out_of_sequence"), 0u);
    EXPECT_EQ(p.hw_counters.at("req_transport_retries_exceeded"), 0u);
    EXPECT_FALSE(p.hw_counters.count("lifespan")) << "a cache setting, not a counter";
    EXPECT_EQ(p.hw_counters.size(), 31u);
}

TEST(SysfsRead, DgxSparkRailPreferenceFromNetlink) {
    auto r = read_rdma_devices(sysfs_fixture("dgx-spark"));
    auto& p = r.devices.at(1).ports.at(0);
    ASSERT_EQ(r.devices.at(1).name, "rocep1s0f0");
    assign_roce_v2_gid(p, {"10.1.1.1", "192.168.100.11"});
    EXPECT_EQ(p.roce_v2_ipv4_gid_index, 3);
    EXPECT_EQ(p.roce_v2_ipv4_address, "192.168.100.11");
}

// ---------------------------------------------------------------- Soft-RoCE tree

TEST(SysfsRead, Rxe) {
    const auto r = read_rdma_devices(sysfs_fixture("rxe"));
    EXPECT_EQ(r.read_errors, 0u);
    ASSERT_EQ(r.devices.size(), 1u);
    const auto& d = r.devices[0];
    EXPECT_EQ(d.name, "rxe0");
    EXPECT_EQ(d.driver, "rxe");
    EXPECT_EQ(d.netdevs, std::vector<std::string>{"eth0"});
    EXPECT_EQ(d.node_guid, "5054:00ff:fe12:3456");
    EXPECT_EQ(d.fw_ver, "");
    EXPECT_EQ(d.board_id, "") << "absent, and absence is no error";
    EXPECT_EQ(d.hca_type, "");
    EXPECT_EQ(d.node_type, "1: CA");

    ASSERT_EQ(d.ports.size(), 1u);
    const auto& p = d.ports[0];
    EXPECT_EQ(p.state_name, "ACTIVE");
    EXPECT_EQ(p.rate_gbps, 2.5);
    EXPECT_EQ(p.link_layer, "Ethernet");
    EXPECT_EQ(p.netdev, "eth0");
    EXPECT_TRUE(p.counters.empty()) << "rxe has no counters/ directory";
    EXPECT_FALSE(p.xmit_bytes) << "missing is not zero";
    EXPECT_FALSE(p.rcv_bytes);
    EXPECT_EQ(p.hw_counters.size(), 15u);
    EXPECT_EQ(p.hw_counters.at("sent_pkts"), 84213u);
    EXPECT_EQ(p.hw_counters.at("rcvd_seq_err"), 2u);
    EXPECT_EQ(p.hw_counters.at("retry_exceeded_err"), 0u);
    EXPECT_EQ(p.hw_counters.at("rdma_recvs"), 40958u);

    ASSERT_EQ(p.gids.size(), 2u);
    EXPECT_EQ(p.gids[0].type, "RoCE v2");
    EXPECT_EQ(p.gids[0].netdev, "eth0");
    EXPECT_EQ(p.gids[1].ipv4, "10.0.0.1");
    EXPECT_EQ(p.roce_v2_ipv4_gid_index, 1);
    EXPECT_EQ(p.roce_v2_ipv4_address, "10.0.0.1");
}

// ---------------------------------------------------------------- broken tree

// A tree copied from a real Soft-RoCE guest (tests/vm/update-sysfs-fixture.sh): the layout the
// kernel really shows, not the one we think it shows.
TEST(SysfsRead, RxeRealKernelTree) {
    const auto r = read_rdma_devices(sysfs_fixture("rxe-real"));
    EXPECT_EQ(r.read_errors, 0u) << (r.errors.empty() ? "" : r.errors.front().text());
    ASSERT_EQ(r.devices.size(), 2u);
    for (const auto& [dev, netdev, ip] : {std::tuple{0, "railA", "10.10.1.1"}, std::tuple{1, "railB", "10.10.2.1"}}) {
        const auto& d = r.devices[dev];
        EXPECT_EQ(d.driver, "rxe");
        ASSERT_EQ(d.netdevs, std::vector<std::string>{netdev});
        ASSERT_EQ(d.ports.size(), 1u);
        const auto& p = d.ports[0];
        EXPECT_EQ(p.state_name, "ACTIVE");
        EXPECT_EQ(p.phys_state_name, "LinkUp");
        EXPECT_EQ(p.link_layer, "Ethernet");
        EXPECT_EQ(p.rate_gbps, 100.0);
        EXPECT_EQ(p.netdev, netdev);
        EXPECT_TRUE(p.counters.empty()) << "rxe has no counters/ directory";
        EXPECT_FALSE(p.xmit_bytes.has_value()) << "missing is not zero";
        EXPECT_TRUE(p.hw_counters.count("sent_pkts"));
        EXPECT_TRUE(p.hw_counters.count("retry_exceeded_err"));
        EXPECT_FALSE(p.hw_counters.count("lifespan")) << "a setting, not a counter";
        EXPECT_EQ(p.roce_v2_ipv4_gid_index, 1) << "rxe puts the IPv4 RoCE v2 GID at index 1";
        EXPECT_EQ(p.roce_v2_ipv4_address, ip);
    }
}

TEST(SysfsRead, BrokenFilesAreSkippedOneByOne) {
    const auto r = read_rdma_devices(sysfs_fixture("broken"));
    // fw_ver (EISDIR), state, rate, counters/port_rcv_errors, hw_counters/out_of_buffer
    // (EISDIR), gid_attrs/types/3 (missing), gids/4 (not a GID).
    EXPECT_EQ(r.read_errors, 7u);
    EXPECT_EQ(r.errors.size(), 7u);
    EXPECT_TRUE(has_error_about(r, "fw_ver: Is a directory"));
    EXPECT_TRUE(has_error_about(r, "ports/1/state: expected '<number>: <name>', got 'ACTIVE'"));
    EXPECT_TRUE(has_error_about(r, "ports/1/rate: expected '<n> Gb/sec (...)', got ''"));
    EXPECT_TRUE(has_error_about(r, "counters/port_rcv_errors: not a counter: 'garbage'"));
    EXPECT_TRUE(has_error_about(r, "hw_counters/out_of_buffer: Is a directory"));
    EXPECT_TRUE(has_error_about(r, "gid_attrs/types/3: missing"));
    EXPECT_TRUE(has_error_about(r, "gids/4: not a GID: 'not-a-gid'"));

    ASSERT_EQ(r.devices.size(), 1u) << "the device survives its bad files";
    const auto& d = r.devices[0];
    EXPECT_EQ(d.name, "rocep1s0f0");
    EXPECT_EQ(d.fw_ver, "");
    EXPECT_EQ(d.node_guid, "30c5:9903:003e:6a13");
    EXPECT_EQ(d.board_id, "NVD0000000087");
    EXPECT_EQ(d.driver, "mlx5_core");

    ASSERT_EQ(d.ports.size(), 1u);
    const auto& p = d.ports[0];
    EXPECT_FALSE(p.state);
    EXPECT_EQ(p.state_name, "");
    EXPECT_EQ(p.phys_state, 5) << "the neighbouring file still reads";
    EXPECT_FALSE(p.rate_gbps);
    EXPECT_EQ(p.rate_text, "");
    EXPECT_EQ(p.link_layer, "Ethernet");

    EXPECT_FALSE(p.counters.count("port_rcv_errors")) << "garbled: absent, not zero";
    EXPECT_EQ(p.counters.size(), 20u);
    EXPECT_EQ(p.xmit_bytes, 1193000000000u);
    EXPECT_FALSE(p.hw_counters.count("out_of_buffer"));
    EXPECT_EQ(p.hw_counters.size(), 30u);
    EXPECT_EQ(p.hw_counters.at("np_cnp_sent"), 1520u);

    ASSERT_EQ(p.gids.size(), 4u) << "GIDs 0-3 kept, the garbled 4 dropped";
    EXPECT_EQ(gid(p, 3)->type, "") << "unreadable type stays empty";
    EXPECT_EQ(gid(p, 3)->netdev, "enp1s0f0np0");
    EXPECT_EQ(gid(p, 3)->ipv4, "192.168.100.11");
    EXPECT_EQ(gid(p, 2)->type, "IB/RoCE v1");
    EXPECT_EQ(p.netdev, "enp1s0f0np0");
    EXPECT_FALSE(p.roce_v2_ipv4_gid_index) << "GID 3's type is unknown, so it cannot be vouched for";
}

TEST(SysfsRead, ErrorMessagesAreCappedButAllCounted) {
    ScratchTree t("cap");
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    t.write(port + "state", "4: ACTIVE\n");
    for (int i = 0; i < 40; ++i) t.write(port + "counters/bad_" + std::to_string(100 + i), "garbage\n");
    t.write(port + "counters/good", "7\n");
    const auto r = read_rdma_devices(t.root);
    EXPECT_EQ(r.read_errors, 40u);
    EXPECT_EQ(r.errors.size(), SysfsReadResult::kMaxErrorMessages);
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_EQ(r.devices[0].ports.at(0).counters, (std::map<std::string, uint64_t>{{"good", 7}}));
    EXPECT_EQ(r.devices[0].driver, "") << "no device link, no parent: driver unknown";
}

// What a garbled file holds is quoted in the error, which goes to the log: escaped, so that a
// file holding a newline and a fake log line does not write a second entry (review).
TEST(SysfsRead, QuotedFileContentsCannotForgeLogLines) {
    ScratchTree t("forge");
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    t.write(port + "state", "4: ACTIVE\n");
    // A newline, a terminal escape and a byte that is not UTF-8, all within the 40 bytes quoted.
    t.write(port + "counters/port_rcv_errors", "x\x1b[31m\xff\n[2026-11-29 14:40:00.000] [rocewatchd] [info] ok\n");
    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.errors.size(), 1u);
    const std::string text = r.errors.front().text();
    for (const char raw : {'\n', '\x1b', '\xff'}) EXPECT_EQ(text.find(raw), std::string::npos) << text;
    EXPECT_NE(text.find("not a counter: 'x\\x1b[31m\\xff\\x0a[2026-11-29 14:40:00.000] [rocew...(56 bytes)'"),
              std::string::npos)
        << text;
}

TEST(SysfsRead, InfinibandGidsHaveNoNetdevAndThatIsNoError) {
    // On an IB port the kernel answers EINVAL for gid_attrs/ndevs/<idx>; here it is absent.
    ScratchTree t("ib");
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    t.write(port + "link_layer", "InfiniBand\n");
    t.write(port + "gids/0", "fe80:0000:0000:0000:0002:c903:00f1:2b41\n");
    t.write(port + "gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n");
    t.write(port + "gid_attrs/types/0", "IB/RoCE v1\n");
    t.write(port + "gid_attrs/ndevs/.keep", "");
    const auto r = read_rdma_devices(t.root);
    EXPECT_EQ(r.read_errors, 0u) << (r.errors.empty() ? "" : r.errors.front().text());
    const auto& p = r.devices.at(0).ports.at(0);
    ASSERT_EQ(p.gids.size(), 1u);
    EXPECT_EQ(p.gids[0].type, "IB/RoCE v1");
    EXPECT_EQ(p.gids[0].netdev, "");
    EXPECT_EQ(p.netdev, "");
    EXPECT_FALSE(p.roce_v2_ipv4_gid_index);
}

TEST(SysfsRead, RxeRecognisedByNameWithoutParent) {
    ScratchTree t("rxe_name");
    t.write("class/infiniband/rxe_eth1/ports/1/state", "1: DOWN\n");
    t.write("class/infiniband/rxe1/node_type", "1: CA\n");
    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.devices.size(), 2u);
    EXPECT_EQ(r.devices[0].name, "rxe1");
    EXPECT_EQ(r.devices[0].driver, "rxe");
    EXPECT_TRUE(r.devices[0].netdevs.empty());
    EXPECT_EQ(r.devices[1].driver, "rxe");
    EXPECT_EQ(r.devices[1].ports.at(0).state_name, "DOWN");
}

// What the QEMU test bed showed for real: enslaving rxe0's netdev moves its GIDs to bond0,
// while the device stays bound to railA (rdma link: "netdev railA").
TEST(SysfsRead, EnslavedPortKeepsItsOwnNetdevWhileGidsMoveToTheBond) {
    ScratchTree t("bonded");
    t.write("class/infiniband/rxe0/parent", "railA\n");
    t.write("class/infiniband/rxe0/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe0a:0001\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/types/0", "RoCE v2\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "bond0\n");
    t.write("class/infiniband/rxe0/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:0a0a:0101\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/types/1", "RoCE v2\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1", "bond0\n");
    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.devices.size(), 1u);
    const auto& p = r.devices[0].ports.at(0);
    EXPECT_EQ(p.netdev, "railA");
    EXPECT_EQ(p.gids.at(1).netdev, "bond0");
    EXPECT_FALSE(p.roce_v2_ipv4_gid_index) << "no GID on the port's own netdev: RDMA by IP cannot work";
}

// A netdev name is what dev_valid_name allows; a gid_attrs/ndevs file holding a newline and
// more (a terminal command, a forged label) is garbled: that GID keeps no netdev, the error
// is counted, the device and its other GIDs stay.
TEST(SysfsParse, NetdevNames) {
    EXPECT_TRUE(valid_netdev_name("enp1s0f0np0"));
    EXPECT_TRUE(valid_netdev_name("bond0.100"));
    EXPECT_TRUE(valid_netdev_name("abcdefghijklmno"));  // 15 bytes
    EXPECT_FALSE(valid_netdev_name("abcdefghijklmnop"));
    EXPECT_FALSE(valid_netdev_name(""));
    EXPECT_FALSE(valid_netdev_name(".."));
    EXPECT_FALSE(valid_netdev_name("eth0\n\033[2J"));
    EXPECT_FALSE(valid_netdev_name("a/b"));
    EXPECT_FALSE(valid_netdev_name("eth0:1"));
    EXPECT_FALSE(valid_netdev_name(std::string_view("eth\0x", 5)));
}

TEST(SysfsRead, AGarbledGidNetdevIsAnErrorAndTheGidStays) {
    ScratchTree t("ndev");
    t.write("class/infiniband/rxe0/parent", "railA\n");
    t.write("class/infiniband/rxe0/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe0a:0001\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/types/0", "RoCE v2\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "railA\n\033[2Jx\n");
    t.write("class/infiniband/rxe0/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:0a0a:0101\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/types/1", "RoCE v2\n");
    t.write("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1", "railA\n");
    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.devices.size(), 1u);
    const auto& p = r.devices[0].ports.at(0);
    ASSERT_EQ(p.gids.size(), 2u);
    EXPECT_EQ(p.gids[0].netdev, "");
    EXPECT_EQ(p.gids[1].netdev, "railA");
    EXPECT_EQ(r.read_errors, 1u);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_NE(r.errors[0].text().find("gid_attrs/ndevs/0: not a netdev name: 'railA\\x0a\\x1b[2Jx'"), std::string::npos)
        << r.errors[0].text();
}

TEST(SysfsRead, LagDeviceIsBoundWhereItsGidsPoint) {
    ScratchTree t("lag");
    std::filesystem::create_directories(t.root / "class/infiniband/mlx5_bond_0/device/net/enp1s0f0np0");
    t.write("class/infiniband/mlx5_bond_0/ports/1/gids/0", "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13\n");
    t.write("class/infiniband/mlx5_bond_0/ports/1/gid_attrs/types/0", "RoCE v2\n");
    t.write("class/infiniband/mlx5_bond_0/ports/1/gid_attrs/ndevs/0", "bond0\n");
    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_TRUE(is_lag_device_name("mlx5_bond_0"));
    EXPECT_FALSE(is_lag_device_name("rocep1s0f0"));
    EXPECT_EQ(r.devices[0].ports.at(0).netdev, "bond0");
}

TEST(SysfsRead, WithoutGidsTheRestIsStillRead) {
    const auto r = read_rdma_devices(sysfs_fixture("dgx-spark"), SysfsReadOptions{.gids = false});
    ASSERT_EQ(r.devices.size(), 3u);
    for (const auto& d : r.devices) {
        EXPECT_TRUE(d.ports.at(0).gids.empty());
        EXPECT_FALSE(d.ports.at(0).counters.empty());
        EXPECT_FALSE(d.ports.at(0).netdev.empty()) << d.name << ": a PCI device's netdev needs no GID";
    }
}

// A read with neither the GID tables nor ECN leaves what a device is to the caller, who has
// it from the last read that had them (see reads_identity): the ports' state is still read.
TEST(SysfsRead, WithoutGidsOrEcnWhatADeviceIsIsLeftToTheCaller) {
    const auto full = read_rdma_devices(sysfs_fixture("dgx-spark"));
    EXPECT_TRUE(full.identity_read);
    const auto r = read_rdma_devices(sysfs_fixture("dgx-spark"), SysfsReadOptions{.gids = false, .ecn = false});
    EXPECT_FALSE(r.identity_read);
    EXPECT_EQ(r.read_errors, 0u);
    ASSERT_EQ(r.devices.size(), full.devices.size());
    for (size_t i = 0; i < r.devices.size(); ++i) {
        const auto& d = r.devices[i];
        const auto& f = full.devices[i];
        EXPECT_EQ(d.name, f.name);
        EXPECT_FALSE(f.fw_ver.empty() || f.node_guid.empty() || f.driver.empty() || f.netdevs.empty()) << f.name;
        EXPECT_TRUE(d.fw_ver.empty() && d.node_guid.empty() && d.driver.empty() && d.netdevs.empty()) << d.name;
        ASSERT_EQ(d.ports.size(), f.ports.size());
        const auto& p = d.ports.at(0);
        EXPECT_TRUE(p.link_layer.empty() && !p.cap_mask && p.netdev.empty()) << d.name;
        EXPECT_EQ(p.state_name, f.ports.at(0).state_name);
        EXPECT_EQ(p.rate_gbps, f.ports.at(0).rate_gbps);
        EXPECT_EQ(p.lid, f.ports.at(0).lid) << "a subnet manager moves it without an event: read every time";
        EXPECT_EQ(p.counters, f.ports.at(0).counters);
    }
    EXPECT_TRUE(read_rdma_devices(sysfs_fixture("dgx-spark"), SysfsReadOptions{.gids = false}).identity_read)
        << "ECN needs the netdevs";
}

TEST(SysfsRead, WithoutCountersTheRestIsStillReadAndNoCounterTimeIsCharged) {
    const auto with = read_rdma_devices(sysfs_fixture("dgx-spark"));
    EXPECT_TRUE(with.counters_read);
    EXPECT_GT(with.counter_seconds, 0.0) << "the time the counter files took";
    const auto r = read_rdma_devices(sysfs_fixture("dgx-spark"), SysfsReadOptions{.counters = false});
    EXPECT_FALSE(r.counters_read);
    EXPECT_EQ(r.counter_seconds, 0.0);
    ASSERT_EQ(r.devices.size(), 3u);
    for (size_t i = 0; i < r.devices.size(); ++i) {
        const auto& p = r.devices[i].ports.at(0);
        EXPECT_TRUE(p.counters.empty() && p.hw_counters.empty() && !p.xmit_bytes && !p.rcv_bytes);
        EXPECT_FALSE(with.devices[i].ports.at(0).counters.empty());
        EXPECT_EQ(p.state_name, with.devices[i].ports.at(0).state_name);
        EXPECT_EQ(p.gids.size(), with.devices[i].ports.at(0).gids.size());
    }
    EXPECT_EQ(r.read_errors, 0u);
}

// The counter budget is a share of a core: a read that another thread preempts is charged the
// CPU time it used, not the wall time it took (charged wall time, an 80 ms stall on a busy
// machine held the next counter read off for 40 s). This thread and a spinner share one CPU, so
// the reads take about twice the CPU time they use; what they are charged must stay within the
// CPU time this thread used. Charged wall time, the counter reads alone come to more than that.
TEST(SysfsRead, ACounterReadIsChargedItsCpuTimeNotTheWallTimeOfAPreemptedRead) {
    cpu_set_t was;
    ASSERT_EQ(::pthread_getaffinity_np(::pthread_self(), sizeof was, &was), 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(::sched_getcpu(), &one);
    ASSERT_EQ(::pthread_setaffinity_np(::pthread_self(), sizeof one, &one), 0);
    std::atomic<bool> stop{false};
    std::thread spinner([&] {
        ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one);
        while (!stop.load(std::memory_order_relaxed)) {
        }
    });
    // Between GID reads, as most cycles are: the counters are most of what is read.
    const SysfsReadOptions opts{.gids = false, .ecn = false, .files = std::make_shared<SysfsFileCache>()};
    double charged = 0;
    int reads = 0;
    const auto cpu_before = thread_cpu_time();
    const auto wall_before = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - wall_before < std::chrono::milliseconds(400)) {
        charged += read_rdma_devices(sysfs_fixture("dgx-spark"), opts).counter_seconds;
        ++reads;
    }
    const double used = std::chrono::duration<double>(thread_cpu_time() - cpu_before).count();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
    stop = true;
    spinner.join();
    ::pthread_setaffinity_np(::pthread_self(), sizeof was, &was);
    ASSERT_GT(wall, 1.5 * used) << "the spinner did not share the CPU, so this shows nothing";
    EXPECT_GT(charged, 0.0) << reads << " reads";
    EXPECT_LE(charged, used) << reads << " reads took " << wall << " s and used " << used << " s of CPU";
}

// ---------------------------------------------------------------- hostile trees

// Real sysfs holds only regular files; what else a tree holds must be skipped without
// blocking (a FIFO would hang a plain read for ever) and counted with its path.
TEST(SysfsRead, FifosDevicesLoopsAndHugeFilesAreSkippedAndCounted) {
    ScratchTree t("hostile");
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    t.write(port + "state", "4: ACTIVE\n");
    t.write(port + "counters/good", "7\n");
    t.write(port + "counters/huge", std::string(100 * 1024, '1'));
    ASSERT_EQ(::mkfifo((t.root / port / "counters/fifo").c_str(), 0600), 0);
    std::filesystem::create_symlink("/dev/null", t.root / port / "counters/chardev");
    std::filesystem::create_symlink("loop_b", t.root / port / "counters/loop_a");
    std::filesystem::create_symlink("loop_a", t.root / port / "counters/loop_b");

    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_EQ(r.devices[0].ports.at(0).counters, (std::map<std::string, uint64_t>{{"good", 7}}));
    EXPECT_EQ(r.read_errors, 5u);
    EXPECT_TRUE(has_error_about(r, "counters/fifo: skipped: a FIFO"));
    EXPECT_TRUE(has_error_about(r, "counters/chardev: skipped: a character device"));
    EXPECT_TRUE(has_error_about(r, "counters/huge: skipped: larger than 64 KiB"));
    EXPECT_TRUE(has_error_about(r, "counters/loop_a: Too many levels of symbolic links"));
    EXPECT_TRUE(has_error_about(r, "counters/loop_b: Too many levels of symbolic links"));
}

TEST(SysfsRead, FilesThatBlockedBeforeAreNotOpenedAgain) {
    ScratchTree t("skip");
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    t.write(port + "counters/a", "1\n");
    t.write(port + "counters/b", "2\n");
    const std::string b = (t.root / port / "counters/b").string();
    auto progress = std::make_shared<ReadProgress>();
    const auto r = read_rdma_devices(t.root, SysfsReadOptions{.skip = std::make_shared<const std::set<std::string>>(
                                                                  std::set{b}),
                                                              .progress = progress});
    EXPECT_EQ(r.devices.at(0).ports.at(0).counters, (std::map<std::string, uint64_t>{{"a", 1}}));
    EXPECT_EQ(r.read_errors, 1u);
    EXPECT_TRUE(has_error_about(r, "counters/b: skipped: an earlier read of it blocked"));
    EXPECT_NE(progress->current(), "") << "every open is announced";
    EXPECT_NE(progress->current(), b) << "the skipped file is never opened";
}

// A tree with thousands of populated GIDs must not become thousands of series.
TEST(SysfsRead, SeriesPerPortAreCappedAndTheRestCounted) {
    ScratchTree t("series");
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    for (int i = 0; i < 5; ++i) t.write(port + "counters/c" + std::to_string(i), "1\n");
    for (int i = 0; i < 3; ++i) t.write(port + "hw_counters/h" + std::to_string(i), "1\n");
    for (int i = 0; i < 40; ++i) {
        char gid[64];
        std::snprintf(gid, sizeof gid, "0000:0000:0000:0000:0000:ffff:0a00:%04x\n", i + 1);
        t.write(port + "gids/" + std::to_string(i), gid);
    }
    t.write(port + "gids/40", "0000:0000:0000:0000:0000:0000:0000:0000\n");  // empty slots are no series

    auto r = read_rdma_devices(t.root, SysfsReadOptions{.max_series_per_port = 20});
    const auto& p = r.devices.at(0).ports.at(0);
    EXPECT_EQ(p.counters.size() + p.hw_counters.size(), 8u) << "counters come first";
    EXPECT_EQ(p.counters_dropped, 0u);
    EXPECT_EQ(p.gids.size(), 12u);
    EXPECT_EQ(p.gids_dropped, 28u);
    EXPECT_EQ(r.read_errors, 0u) << "a capped entry is not a read error";

    r = read_rdma_devices(t.root, SysfsReadOptions{.max_series_per_port = 6});
    EXPECT_EQ(r.devices.at(0).ports.at(0).counters.size(), 5u);
    EXPECT_EQ(r.devices.at(0).ports.at(0).hw_counters.size(), 1u);
    EXPECT_EQ(r.devices.at(0).ports.at(0).counters_dropped, 2u);
    EXPECT_EQ(r.devices.at(0).ports.at(0).gids_dropped, 40u);

    r = read_rdma_devices(t.root);
    EXPECT_EQ(r.devices.at(0).ports.at(0).gids.size(), 40u) << "the default cap leaves a real port whole";
    EXPECT_EQ(r.devices.at(0).ports.at(0).gids_dropped, 0u);
}

// The table of counter names is the process's and never shrinks: a tree that kept bringing
// new names stops adding them at its cap, and they are dropped and counted as past the
// per-port cap are. In a child process, so the full table stays there (re-executed rather than
// forked: the sanitizer builds run this binary too, with threads of their own).
TEST(SysfsRead, NewCounterNamesPastTheProcessTableAreDroppedAndCounted) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ScratchTree t("names");
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    t.write(port + "counters/port_rcv_data", "1\n");
    t.write(port + "hw_counters/np_cnp_sent", "2\n");
    t.write(port + "hw_counters/zz_never_seen_before", "3\n");
    (void)read_rdma_devices(t.root).devices.at(0);  // holds every name now
    t.write(port + "hw_counters/zz_new_name", "4\n");
    EXPECT_EXIT(
        {
            for (std::size_t i = 0; CounterNames::size() < CounterNames::kMax; ++i)
                (void)CounterNames::intern("filler_" + std::to_string(i));
            const auto r = read_rdma_devices(t.root);
            const auto& p = r.devices.at(0).ports.at(0);
            const bool ok = p.counters.contains("port_rcv_data") && p.hw_counters.contains("np_cnp_sent") &&
                            p.hw_counters.contains("zz_never_seen_before") && !p.hw_counters.contains("zz_new_name") &&
                            p.counters_dropped == 1 && r.read_errors == 0 && CounterNames::size() == CounterNames::kMax;
            std::fprintf(stderr, "kept %zu + %zu, dropped %llu\n", p.counters.size(), p.hw_counters.size(),
                         static_cast<unsigned long long>(p.counters_dropped));
            std::_Exit(ok ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "kept 1 \\+ 2, dropped 1");
}

// ---------------------------------------------------------------- no RDMA at all

// A hot-unplug can leave a device symlink (or a port link) pointing at nothing, and a tree
// may hold stray files: neither is a device or port with empty fields, nor a read error.
// Each is set aside once per read, with why.
TEST(SysfsRead, DanglingLinksAndStrayFilesAreIgnoredNotDevices) {
    ScratchTree t("dangling");
    // The real layout: class/infiniband/<dev> is a symlink into devices/.
    t.write("devices/pci0/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    t.write("devices/pci0/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
    std::filesystem::create_directories(t.root / "class/infiniband");
    std::filesystem::create_symlink("../../devices/pci0/infiniband/mlx5_0", t.root / "class/infiniband/mlx5_0");
    std::filesystem::create_symlink("../../devices/pci1/infiniband/mlx5_1", t.root / "class/infiniband/mlx5_1");
    t.write("class/infiniband/README", "not a device\n");
    std::filesystem::create_symlink("../../gone/2", t.root / "devices/pci0/infiniband/mlx5_0/ports/2");
    t.write("devices/pci0/infiniband/mlx5_0/ports/3", "a file where a port would be\n");

    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_EQ(r.devices[0].name, "mlx5_0");
    ASSERT_EQ(r.devices[0].ports.size(), 1u);
    EXPECT_EQ(r.devices[0].ports[0].port, 1u);
    EXPECT_EQ(r.devices[0].ports[0].link_layer, "Ethernet");
    EXPECT_EQ(r.read_errors, 0u) << (r.errors.empty() ? "" : r.errors[0].text());
    std::vector<std::string> ignored;
    for (const auto& e : r.ignored) ignored.push_back(e.text());
    const auto root = t.root.string();
    EXPECT_EQ(ignored, (std::vector<std::string>{
                           root + "/class/infiniband/README: not a directory (a stray file)",
                           root + "/class/infiniband/mlx5_0/ports/2: a symlink to nothing (the device was removed)",
                           root + "/class/infiniband/mlx5_0/ports/3: not a directory (a stray file)",
                           root + "/class/infiniband/mlx5_1: a symlink to nothing (the device was removed)",
                       }));
}

// A device symlink found a directory is not stat'ed again while the file cache lasts (one
// stat a device a cycle through the link into devices/ was a tenth of a cycle at 128 NICs).
// The price: a device whose link the kernel left behind is taken for one until the cache
// starts afresh (a read with the GID tables), and its files are errors until then.
TEST(SysfsRead, DeviceLinksKnownAsDirectoriesAreNotStatedAgainUntilTheCacheStartsAfresh) {
    ScratchTree t("known-dirs");
    t.write("devices/pci0/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    std::filesystem::create_directories(t.root / "class/infiniband");
    std::filesystem::create_symlink("../../devices/pci0/infiniband/mlx5_0", t.root / "class/infiniband/mlx5_0");
    SysfsReadOptions opts;
    opts.files = std::make_shared<SysfsFileCache>(64);
    ASSERT_EQ(read_rdma_devices(t.root, opts).devices.size(), 1u);

    std::filesystem::rename(t.root / "devices/pci0", t.root / "devices/gone");  // the link now leads nowhere
    opts.gids = opts.ecn = false;
    const auto cached = read_rdma_devices(t.root, opts);
    ASSERT_EQ(cached.devices.size(), 1u) << "taken as a directory without a stat";
    EXPECT_TRUE(cached.ignored.empty());

    opts.gids = true;  // starts the cache afresh: stat'ed again, set aside
    const auto fresh = read_rdma_devices(t.root, opts);
    EXPECT_TRUE(fresh.devices.empty());
    ASSERT_EQ(fresh.ignored.size(), 1u);
    EXPECT_EQ(fresh.ignored[0].text(),
              (t.root / "class/infiniband/mlx5_0").string() + ": a symlink to nothing (the device was removed)");
}

// A counter directory that is not there (counters_ext on most drivers) is remembered as empty
// while the file cache lasts; a device's ports/ that is not there yet (a device still being
// registered) is not: its ports are seen at the next read.
TEST(SysfsRead, MissingCounterDirectoriesAreRememberedMissingPortsAreNot) {
    ScratchTree t("missing-dirs");
    t.write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    t.write("class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "10\n");
    t.write("class/infiniband/mlx5_1/node_type", "1: CA\n");  // no ports/ yet
    SysfsReadOptions opts;
    opts.files = std::make_shared<SysfsFileCache>(64);
    auto r = read_rdma_devices(t.root, opts);
    ASSERT_EQ(r.devices.size(), 2u);
    EXPECT_TRUE(r.devices[1].ports.empty());

    t.write("class/infiniband/mlx5_0/ports/1/counters_ext/port_xmit_data_64", "99\n");
    t.write("class/infiniband/mlx5_1/ports/1/state", "4: ACTIVE\n");
    opts.gids = opts.ecn = false;
    r = read_rdma_devices(t.root, opts);
    ASSERT_EQ(r.devices.size(), 2u);
    EXPECT_EQ(r.devices[1].ports.size(), 1u) << "ports/ that came is read at once";
    EXPECT_EQ(r.devices[0].ports.at(0).counters.at("port_xmit_data"), 10u) << "counters_ext remembered missing";

    opts.gids = true;  // the cache starts afresh: counters_ext is found
    r = read_rdma_devices(t.root, opts);
    EXPECT_EQ(r.devices[0].ports.at(0).counters.at("port_xmit_data"), 99u);
}

TEST(SysfsRead, NoInfinibandClassIsNormal) {
    const auto r = read_rdma_devices(sysfs_fixture("none"));
    EXPECT_TRUE(r.devices.empty());
    EXPECT_EQ(r.read_errors, 0u);
    EXPECT_TRUE(r.errors.empty());

    const auto missing_root = read_rdma_devices(sysfs_fixture("does-not-exist"));
    EXPECT_TRUE(missing_root.devices.empty());
    EXPECT_EQ(missing_root.read_errors, 0u);
}

// ---------------------------------------------------------------- GID choice

TEST(SysfsGid, PicksRoceV2OnThePortNetdev) {
    RdmaPort p;
    p.netdev = "enp1s0f0np0";
    p.gids = {roce_gid(0, "", "IB/RoCE v1"), roce_gid(1, ""), roce_gid(2, "192.168.100.11", "IB/RoCE v1"),
              roce_gid(3, "192.168.100.11")};
    EXPECT_EQ(select_roce_v2_ipv4_gid(p, {}), 3);
}

TEST(SysfsGid, NoneWhenGidsPointElsewhere) {
    // Enslaved to a bond: the GIDs move to bond0 and the port netdev no longer matches.
    RdmaPort p;
    p.netdev = "enp1s0f0np0";
    p.gids = {roce_gid(1, "", "RoCE v2", "bond0"), roce_gid(3, "192.168.100.11", "RoCE v2", "bond0")};
    EXPECT_FALSE(select_roce_v2_ipv4_gid(p, {}));
    assign_roce_v2_gid(p, {});
    EXPECT_FALSE(p.roce_v2_ipv4_gid_index);
    EXPECT_EQ(p.roce_v2_ipv4_address, "");

    p.netdev.clear();
    EXPECT_FALSE(select_roce_v2_ipv4_gid(p, {})) << "unknown port netdev: nothing to vouch for";
}

TEST(SysfsGid, OnlyV1OrOnlyLinkLocalGivesNone) {
    RdmaPort p;
    p.netdev = "enp1s0f0np0";
    p.gids = {roce_gid(0, "", "IB/RoCE v1"), roce_gid(1, ""), roce_gid(2, "192.168.100.11", "IB/RoCE v1")};
    EXPECT_FALSE(select_roce_v2_ipv4_gid(p, {"192.168.100.11"}));
}

TEST(SysfsGid, PreferenceOrderThenLowestIndex) {
    RdmaPort p;
    p.netdev = "enp1s0f0np0";
    p.gids = {roce_gid(7, "10.0.0.7"), roce_gid(5, "10.0.0.5"), roce_gid(9, "10.0.0.9")};
    EXPECT_EQ(select_roce_v2_ipv4_gid(p, {}), 5) << "lowest index without preference";
    EXPECT_EQ(select_roce_v2_ipv4_gid(p, {"172.16.0.1"}), 5) << "no preferred address present";
    EXPECT_EQ(select_roce_v2_ipv4_gid(p, {"10.0.0.9", "10.0.0.7"}), 9) << "first preferred wins";
    EXPECT_EQ(select_roce_v2_ipv4_gid(p, {"172.16.0.1", "10.0.0.7"}), 7);

    assign_roce_v2_gid(p, {"10.0.0.9"});
    EXPECT_EQ(p.roce_v2_ipv4_gid_index, 9);
    EXPECT_EQ(p.roce_v2_ipv4_address, "10.0.0.9");
    assign_roce_v2_gid(p, {});
    EXPECT_EQ(p.roce_v2_ipv4_gid_index, 5);
    EXPECT_EQ(p.roce_v2_ipv4_address, "10.0.0.5");
}

// ---------------------------------------------------------------- host facts

TEST(SysfsHost, DgxSpark) {
    const auto h = read_host_info(sysfs_fixture("dgx-spark"),
                                  std::filesystem::path(fixtures_dir()) / "procfs" / "dgx-spark");
    EXPECT_EQ(h.hostname, "spark-02");
    EXPECT_TRUE(h.nvidia_gpu_present) << "GB10 at 000f:01:00.0, class 0x030200";
    EXPECT_FALSE(h.nvidia_peermem_loaded) << "GPUDirect RDMA unavailable on this tree";
    EXPECT_EQ(h.ucx_version, "");
}

// Between GID reads the engine passes what the last scan of the PCI devices found: taken as
// it is, the devices are not read again (the DGX Spark tree has a GPU; told none, none).
TEST(SysfsHost, AGpuAlreadyLookedForIsNotLookedForAgain) {
    const auto procfs = std::filesystem::path(fixtures_dir()) / "procfs" / "dgx-spark";
    EXPECT_FALSE(read_host_info(sysfs_fixture("dgx-spark"), procfs, {}, false).nvidia_gpu_present);
    EXPECT_TRUE(read_host_info(sysfs_fixture("rxe"), sysfs_fixture("none"), {}, true).nvidia_gpu_present);
    const auto h = read_host_info(sysfs_fixture("dgx-spark"), procfs, {}, true);
    EXPECT_EQ(h.hostname, "spark-02") << "the rest is read as always";
}

TEST(SysfsHost, NothingToFind) {
    const auto h = read_host_info(sysfs_fixture("rxe"), sysfs_fixture("none"));
    EXPECT_EQ(h.hostname, "");
    EXPECT_FALSE(h.nvidia_gpu_present) << "the Mellanox NICs alone are no GPU";
    EXPECT_FALSE(h.nvidia_peermem_loaded);
}

// ---------------------------------------------------------------- verbs

TEST(Verbs, MtuEnum) {
    EXPECT_EQ(ibv_mtu_to_bytes(1), 256);
    EXPECT_EQ(ibv_mtu_to_bytes(3), 1024);
    EXPECT_EQ(ibv_mtu_to_bytes(5), 4096);
    EXPECT_FALSE(ibv_mtu_to_bytes(0));
    EXPECT_FALSE(ibv_mtu_to_bytes(6));
}

// The driver's state replaces a carried one in the words sysfs uses, so a port read from the
// files and one corrected by verbs read alike.
TEST(Verbs, PortStateFromTheDriverInSysfsWords) {
    auto r = read_rdma_devices(sysfs_fixture("dgx-spark"));
    ASSERT_FALSE(r.devices.empty());
    RdmaPort p = r.devices.front().ports.at(0);
    ASSERT_EQ(p.state_name, "ACTIVE");
    ASSERT_EQ(p.phys_state_name, "LinkUp");
    const RdmaPort read = p;
    EXPECT_FALSE(apply_verbs_port_state(p, 4, 5)) << "the same state";
    EXPECT_EQ(p.state_name, read.state_name);
    EXPECT_EQ(p.phys_state_name, read.phys_state_name);
    EXPECT_TRUE(apply_verbs_port_state(p, 1, 3));
    EXPECT_EQ(p.state, 1);
    EXPECT_EQ(p.state_name, "DOWN");
    EXPECT_EQ(p.phys_state, 3);
    EXPECT_EQ(p.phys_state_name, "Disabled");
    EXPECT_FALSE(apply_verbs_port_state(p, 1, 3));
    EXPECT_TRUE(apply_verbs_port_state(p, 4, 2));
    EXPECT_EQ(p.state_name, "ACTIVE");
    EXPECT_EQ(p.phys_state_name, "Polling");
    EXPECT_TRUE(apply_verbs_port_state(p, 9, 9));
    EXPECT_EQ(p.state_name, "<unknown>");
    EXPECT_EQ(p.phys_state_name, "<unknown>");
}

TEST(Verbs, ErrorText) {
    EXPECT_NE(verbs_error_text(EACCES).find("no access to /dev/infiniband"), std::string::npos);
    EXPECT_NE(verbs_error_text(ENOSYS).find("ib_uverbs"), std::string::npos);
    EXPECT_NE(verbs_error_text(12345).find("errno 12345"), std::string::npos);
}

TEST(Verbs, EmptyListIsNormal) {
    std::vector<RdmaDevice> none;
    const auto r = enrich_with_verbs(none);
    EXPECT_FALSE(r.available);
    EXPECT_EQ(r.errors, 0u);
    EXPECT_EQ(r.last_error, "");
}

TEST(Verbs, DevicesVerbsDoesNotKnowAreLeftAlone) {
    auto devices = read_rdma_devices(sysfs_fixture("dgx-spark")).devices;
    ASSERT_EQ(devices.size(), 3u);
    // Renamed so that even a test run on a real Spark cannot match a verbs device.
    for (auto& d : devices) d.name = "rw-test-absent-" + d.name;
    const auto r = enrich_with_verbs(devices);
    EXPECT_FALSE(r.available);
    EXPECT_EQ(r.errors, 0u) << r.last_error;
    for (const auto& d : devices) {
        for (const auto& p : d.ports) {
            EXPECT_FALSE(p.active_mtu);
            EXPECT_FALSE(p.max_mtu);
            EXPECT_FALSE(p.active_speed);
            EXPECT_FALSE(p.active_width);
        }
    }
}

// ---------------------------------------------------------------- GID tables from a source

namespace {
// A GidTableSource that answers from a table per device name and records what it was asked.
class FakeGidTables final : public GidTableSource {
public:
    std::map<std::string, Table> tables;
    std::vector<std::string> asked;
    std::optional<Table> read(const std::string& device) override {
        asked.push_back(device);
        auto it = tables.find(device);
        if (it == tables.end()) return std::nullopt;
        return it->second;
    }
};

std::pair<uint32_t, GidEntry> sourced(uint32_t port, int index, const std::string& gid, const std::string& type) {
    GidEntry e;
    e.index = index;
    e.gid = gid;
    e.type = type;
    return {port, e};
}

// Two rxe devices; in sysfs each port has one GID at index 0 (10.0.0.x), ndevs for 0..3.
void fill_sourced_tree(const ScratchTree& t) {
    for (const std::string dev : {"rxe0", "rxe1"}) {
        const std::string port = "class/infiniband/" + dev + "/ports/1/";
        t.write("class/infiniband/" + dev + "/parent", "eth_" + dev + "\n");
        t.write(port + "link_layer", "Ethernet\n");
        t.write(port + "gids/0", "0000:0000:0000:0000:0000:ffff:0a00:0001\n");
        t.write(port + "gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n");
        t.write(port + "gid_attrs/types/0", "RoCE v2\n");
        for (int i = 0; i < 4; ++i) t.write(port + "gid_attrs/ndevs/" + std::to_string(i), "eth_" + dev + "\n");
    }
}
}  // namespace

TEST(GidSource, EntriesComeFromTheSourceAndNetdevsFromSysfs) {
    const ScratchTree t("gid_source");
    fill_sourced_tree(t);
    auto src = std::make_shared<FakeGidTables>();
    // Out of order, with another port's entry, an empty slot and a garbled GID among them.
    src->tables["rxe0"] = {sourced(1, 3, "0000:0000:0000:0000:0000:ffff:c0a8:6401", "RoCE v2"),
                           sourced(2, 0, "fe80:0000:0000:0000:0000:0000:0000:0009", "RoCE v2"),
                           sourced(1, 2, "0000:0000:0000:0000:0000:0000:0000:0000", "RoCE v2"),
                           sourced(1, 1, "fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1"),
                           sourced(1, 5, "not a gid", "RoCE v2")};
    const auto r = read_rdma_devices(t.root, SysfsReadOptions{.gid_tables = src});

    EXPECT_EQ(src->asked, (std::vector<std::string>{"rxe0", "rxe1"})) << "one query a device";
    const auto& p = device(r, "rxe0").ports.at(0);
    EXPECT_EQ(p.gids_source, "verbs");
    ASSERT_EQ(p.gids.size(), 2u) << "sysfs' gids/0 is not read, the empty slot and the garbled entry are left out";
    EXPECT_EQ(p.gids[0].index, 1) << "in index order";
    EXPECT_EQ(p.gids[0].type, "IB/RoCE v1");
    EXPECT_EQ(p.gids[0].ipv4, "");
    EXPECT_EQ(p.gids[0].netdev, "eth_rxe0") << "the netdev from gid_attrs/ndevs/1";
    EXPECT_EQ(p.gids[1].index, 3);
    EXPECT_EQ(p.gids[1].ipv4, "192.168.100.1") << "derived by the reader";
    EXPECT_EQ(p.roce_v2_ipv4_gid_index, 3) << "the GID choice works on the sourced table";
    EXPECT_EQ(r.read_errors, 1u);
    EXPECT_TRUE(has_error_about(r, "libibverbs gave no GID at index 5"));

    const auto& q = device(r, "rxe1").ports.at(0);
    EXPECT_EQ(q.gids_source, "sysfs") << "a device the source cannot read falls back to its files";
    ASSERT_EQ(q.gids.size(), 1u);
    EXPECT_EQ(q.gids[0].ipv4, "10.0.0.1");
    EXPECT_EQ(q.gids[0].netdev, "eth_rxe1");
}

TEST(GidSource, MissingNetdevFileIsAnErrorAndCapHolds) {
    const ScratchTree t("gid_source");
    fill_sourced_tree(t);
    auto src = std::make_shared<FakeGidTables>();
    for (int i = 0; i < 6; ++i) {
        char gid[64];
        std::snprintf(gid, sizeof gid, "0000:0000:0000:0000:0000:ffff:0a00:%04x", i + 1);
        src->tables["rxe0"].push_back(sourced(1, i, gid, "RoCE v2"));
    }
    auto r = read_rdma_devices(t.root, SysfsReadOptions{.max_series_per_port = 5, .gid_tables = src});
    const auto& p = device(r, "rxe0").ports.at(0);
    EXPECT_EQ(p.gids.size(), 5u);
    EXPECT_EQ(p.gids_dropped, 1u) << "the per-port cap applies to a source's entries as to sysfs'";
    // ndevs/4 does not exist: an Ethernet port's GID without its netdev file is an error.
    EXPECT_EQ(p.gids.at(4).netdev, "");
    EXPECT_TRUE(has_error_about(r, "gid_attrs/ndevs/4: missing"));
}

TEST(GidSource, NotAskedWithoutGids) {
    const ScratchTree t("gid_source");
    fill_sourced_tree(t);
    auto src = std::make_shared<FakeGidTables>();
    const auto r = read_rdma_devices(t.root, SysfsReadOptions{.gids = false, .gid_tables = src});
    EXPECT_TRUE(src->asked.empty());
    EXPECT_TRUE(device(r, "rxe0").ports.at(0).gids.empty());
    EXPECT_EQ(device(r, "rxe0").ports.at(0).gids_source, "");
}

TEST(Verbs, GidTextIsWhatSysfsPrints) {
    const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xc0, 0xa8, 0x64, 0x0b};
    EXPECT_EQ(gid_text(v4), "0000:0000:0000:0000:0000:ffff:c0a8:640b");
    EXPECT_EQ(ipv4_from_gid(gid_text(v4)), "192.168.100.11");
    const uint8_t link_local[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x1a, 0x2b, 0xff, 0xfe, 0x3c, 0x4d, 0x5e};
    EXPECT_EQ(gid_text(link_local), "fe80:0000:0000:0000:021a:2bff:fe3c:4d5e");
    const uint8_t zero[16] = {};
    EXPECT_TRUE(is_zero_gid(gid_text(zero)));
}

TEST(Verbs, GidTypeTextIsWhatSysfsPrints) {
    EXPECT_EQ(gid_type_text(IBV_GID_TYPE_ROCE_V2), "RoCE v2");
    EXPECT_EQ(gid_type_text(IBV_GID_TYPE_ROCE_V1), "IB/RoCE v1");
    EXPECT_EQ(gid_type_text(IBV_GID_TYPE_IB), "IB/RoCE v1");
    EXPECT_EQ(gid_type_text(99), "");
}

TEST(Verbs, GidTablesOfDevicesVerbsDoesNotKnowAreNullopt) {
    auto progress = std::make_shared<ReadProgress>();
    VerbsGidTables tables(progress, "(verbs)");
    EXPECT_FALSE(tables.read("rw-test-absent-rxe0"));
    EXPECT_FALSE(tables.read("rw-test-absent-mlx5_0"));
    EXPECT_EQ(progress->current(), "(verbs)");
    EXPECT_EQ(progress->entered(), 2u) << "told before each device";
}

// ---------------------------------------------------------------- files kept open between reads

namespace {
const std::string kCachePort = "class/infiniband/mlx5_0/ports/1/";

uint64_t counter_a(const SysfsReadResult& r) { return r.devices.at(0).ports.at(0).counters.at("a"); }
}  // namespace

// A directory's kept files, found by name whatever order they came in; a name kept twice is
// refused (the caller closes that fd), and forget closes the fd it kept.
TEST(SysfsFileCache, KeepsAFileOnceByNameAndForgetClosesIt) {
    SysfsFileCache cache(16);
    auto& dir = cache.dir_files("/sys/class/infiniband/mlx5_0/ports/1/counters");
    const auto fd_of_null = [] { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); };
    const int symbol = fd_of_null(), downed = fd_of_null(), constraint = fd_of_null(), again = fd_of_null();
    EXPECT_EQ(SysfsFileCache::kept_fd(dir, "state"), -1);
    EXPECT_TRUE(cache.keep(dir, "symbol_error", symbol));
    EXPECT_TRUE(cache.keep(dir, "link_downed", downed));
    EXPECT_TRUE(cache.keep(dir, "port_rcv_constraint_errors", constraint));
    EXPECT_FALSE(cache.keep(dir, "link_downed", again)) << "kept already";
    ::close(again);
    EXPECT_EQ(cache.size(), 3u);
    EXPECT_EQ(SysfsFileCache::kept_fd(dir, "link_downed"), downed);
    EXPECT_EQ(SysfsFileCache::kept_fd(dir, std::string("port_rcv_constraint_errors")), constraint);
    EXPECT_EQ(SysfsFileCache::kept_fd(dir, "symbol_error"), symbol);
    EXPECT_EQ(SysfsFileCache::kept_fd(dir, "link"), -1);
    cache.forget(dir, "link_downed");
    EXPECT_EQ(::fcntl(downed, F_GETFD), -1) << "its fd closed";
    EXPECT_EQ(SysfsFileCache::kept_fd(dir, "link_downed"), -1);
    EXPECT_EQ(SysfsFileCache::kept_fd(dir, "symbol_error"), symbol);
    EXPECT_EQ(cache.size(), 2u);
    cache.forget(dir, "link_downed");  // not kept: nothing to close
    EXPECT_EQ(cache.size(), 2u);
}

TEST(SysfsFileCache, KeptFilesShowWhatIsWrittenToThemSince) {
    ScratchTree t("cache_inplace");
    t.write(kCachePort + "counters/a", "1\n");
    t.write(kCachePort + "state", "4: ACTIVE\n");
    auto files = std::make_shared<SysfsFileCache>();
    EXPECT_EQ(counter_a(read_rdma_devices(t.root, {.files = files})), 1u);
    EXPECT_GE(files->size(), 2u) << "the files read are kept open";
    t.write(kCachePort + "counters/a", "2\n");  // in place, as sysfs changes a value
    const auto r = read_rdma_devices(t.root, {.gids = false, .files = files});
    EXPECT_EQ(counter_a(r), 2u) << "a kept file is read again from its start";
    EXPECT_EQ(r.devices.at(0).ports.at(0).state_name, "ACTIVE");
    EXPECT_EQ(r.read_errors, 0u);
}

TEST(SysfsFileCache, AReadWithGidsStartsAfreshAndSeesReplacedFiles) {
    ScratchTree t("cache_replaced");
    t.write(kCachePort + "counters/a", "1\n");
    auto files = std::make_shared<SysfsFileCache>();
    EXPECT_EQ(counter_a(read_rdma_devices(t.root, {.files = files})), 1u);
    t.write(kCachePort + "counters/a.new", "7\n");
    std::filesystem::rename(t.root / kCachePort / "counters/a.new", t.root / kCachePort / "counters/a");
    EXPECT_EQ(counter_a(read_rdma_devices(t.root, {.gids = true, .files = files})), 7u);
}

// A tree that is not sysfs (a fixture, a copy) can have a file replaced by a rename between two
// reads without gids: the kept file is the old one, and must not be read as current.
TEST(SysfsFileCache, OutsideSysfsAReplacedFileIsSeenAtTheNextRead) {
    ScratchTree t("cache_replaced_nogids");
    t.write(kCachePort + "counters/a", "1\n");
    auto files = std::make_shared<SysfsFileCache>();
    EXPECT_EQ(counter_a(read_rdma_devices(t.root, {.files = files})), 1u);
    EXPECT_FALSE(files->kernel_rendered(t.root.string()));
    for (uint64_t v : {7u, 3u}) {
        t.write(kCachePort + "counters/a.new", std::to_string(v) + "\n");
        std::filesystem::rename(t.root / kCachePort / "counters/a.new", t.root / kCachePort / "counters/a");
        EXPECT_EQ(counter_a(read_rdma_devices(t.root, {.gids = false, .files = files})), v);
    }
}

// Once a directory is a second old, its kept files are read without a check each: a file
// written in place, a file replaced, and the whole directory replaced are still seen at once.
TEST(SysfsFileCache, OutsideSysfsASettledDirectoryStillShowsWhatChanged) {
    ScratchTree t("cache_settled");
    t.write(kCachePort + "counters/a", "1\n");
    auto files = std::make_shared<SysfsFileCache>();
    const auto read = [&] { return counter_a(read_rdma_devices(t.root, {.gids = false, .files = files})); };
    EXPECT_EQ(counter_a(read_rdma_devices(t.root, {.files = files})), 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // settled from the next read
    EXPECT_EQ(read(), 1u);
    t.write(kCachePort + "counters/a", "2\n");
    EXPECT_EQ(read(), 2u);
    t.write(kCachePort + "counters/a.new", "7\n");
    std::filesystem::rename(t.root / kCachePort / "counters/a.new", t.root / kCachePort / "counters/a");
    EXPECT_EQ(read(), 7u) << "a replaced file in a settled directory";
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    EXPECT_EQ(read(), 7u);
    // The old directory, renamed away, still holds its files: only its identity tells.
    t.write(kCachePort + "counters.new/a", "9\n");
    std::filesystem::rename(t.root / kCachePort / "counters", t.root / kCachePort / "counters.old");
    std::filesystem::rename(t.root / kCachePort / "counters.new", t.root / kCachePort / "counters");
    EXPECT_EQ(read(), 9u) << "a replaced directory";
}

TEST(SysfsFileCache, SysfsAndProcfsAreKernelRendered) {
    SysfsFileCache files(8);
    EXPECT_TRUE(files.kernel_rendered("/sys"));
    EXPECT_TRUE(files.kernel_rendered("/proc"));
}

TEST(SysfsFileCache, HoldsNoMoreThanItsLimitAndReadsTheRestAsBefore) {
    ScratchTree t("cache_bound");
    for (int i = 0; i < 5; ++i) t.write(kCachePort + "counters/c" + std::to_string(i), std::to_string(i) + "\n");
    auto files = std::make_shared<SysfsFileCache>(2);
    for (int round = 0; round < 2; ++round) {
        const auto r = read_rdma_devices(t.root, {.gids = round == 0, .files = files});
        EXPECT_EQ(r.devices.at(0).ports.at(0).counters.size(), 5u);
        EXPECT_EQ(r.devices.at(0).ports.at(0).counters.at("c4"), 4u);
        EXPECT_EQ(files->size(), 2u);
    }
}

TEST(SysfsFileCache, AReadThatFindsItBusyGoesWithoutIt) {
    ScratchTree t("cache_busy");
    t.write(kCachePort + "counters/a", "3\n");
    auto files = std::make_shared<SysfsFileCache>();
    std::lock_guard held(files->mutex());  // as by a read still stuck in the kernel
    EXPECT_EQ(counter_a(read_rdma_devices(t.root, {.files = files})), 3u);
    EXPECT_EQ(files->size(), 0u);
}

TEST(SysfsFileCache, ABlockedFileIsSkippedEvenWhenKeptOpen) {
    ScratchTree t("cache_skip");
    t.write(kCachePort + "counters/a", "1\n");
    t.write(kCachePort + "counters/b", "2\n");
    auto files = std::make_shared<SysfsFileCache>();
    (void)read_rdma_devices(t.root, {.files = files});
    const std::string b = (t.root / kCachePort / "counters/b").string();
    const auto r = read_rdma_devices(t.root, {.gids = false,
                                              .skip = std::make_shared<const std::set<std::string>>(std::set{b}),
                                              .files = files});
    EXPECT_EQ(r.devices.at(0).ports.at(0).counters, (std::map<std::string, uint64_t>{{"a", 1}}));
    EXPECT_TRUE(has_error_about(r, "counters/b: skipped: an earlier read of it blocked"));
}

TEST(SysfsFileCache, GidTablesAreNotKeptOpen) {
    ScratchTree t("cache_gids");
    t.write(kCachePort + "counters/a", "1\n");
    t.write(kCachePort + "link_layer", "Ethernet\n");
    t.write(kCachePort + "gids/0", "fe80:0000:0000:0000:32c5:99ff:fe3e:6a13\n");
    t.write(kCachePort + "gid_attrs/types/0", "RoCE v2\n");
    t.write(kCachePort + "gid_attrs/ndevs/0", "eth0\n");
    auto files = std::make_shared<SysfsFileCache>();
    const auto r = read_rdma_devices(t.root, {.files = files});
    EXPECT_EQ(r.devices.at(0).ports.at(0).gids.size(), 1u);
    EXPECT_EQ(files->size(), 2u) << "counters/a and link_layer only";
}

// A device's directories do not change while it exists: their listings are kept with the
// files, and a read with GIDs (after a netlink event, and now and then) lists them again.
TEST(SysfsFileCache, ListingsAreKeptUntilAReadWithGids) {
    ScratchTree t("cache_listing");
    t.write(kCachePort + "counters/a", "1\n");
    auto files = std::make_shared<SysfsFileCache>();
    (void)read_rdma_devices(t.root, {.files = files});
    t.write(kCachePort + "counters/b", "2\n");
    t.write("class/infiniband/mlx5_1/ports/1/counters/a", "3\n");
    auto r = read_rdma_devices(t.root, {.gids = false, .files = files});
    EXPECT_EQ(r.devices.size(), 2u) << "the list of devices is read every time";
    EXPECT_EQ(r.devices.at(0).ports.at(0).counters.size(), 1u);
    r = read_rdma_devices(t.root, {.gids = true, .files = files});
    EXPECT_EQ(r.devices.at(0).ports.at(0).counters.size(), 2u);
}

// ---------------------------------------------------------------- NIC families

// i40iw answers no PMA queries: every counters/ file reads "N/A (no PMA)". That is the
// kernel saying "not available", as procfs and node_exporter take it: absent, no error, on
// every collection.
TEST(SysfsFamilies, NoPmaCountersAreAbsentNotErrors) {
    EXPECT_TRUE(is_no_pma("N/A (no PMA)\n"));
    EXPECT_FALSE(is_no_pma("N/A"));
    EXPECT_FALSE(is_no_pma("0"));
    for (int round = 0; round < 2; ++round) {
        const auto r = read_rdma_devices(sysfs_fixture("i40iw-iwarp"));
        EXPECT_EQ(r.read_errors, 0u) << (r.errors.empty() ? "" : r.errors.front().text());
        const auto& p = device(r, "i40iw0").ports.at(0);
        EXPECT_TRUE(p.counters.empty());
        EXPECT_FALSE(p.xmit_bytes);
        EXPECT_FALSE(p.rcv_bytes);
        EXPECT_EQ(p.hw_counters.at("tcpRetransSegs"), 3u);
        EXPECT_EQ(p.hw_counters.at("ip4InOctets"), 1802466u);
    }
}

// A pre-4.5 kernel (mlx4): counters/ saturates at 32 bits while counters_ext/ goes on. The
// 64-bit value is kept, under the counters/ name, and the bytes follow it.
TEST(SysfsFamilies, CountersExtWinsOverSaturated32BitCounters) {
    const auto r = read_rdma_devices(sysfs_fixture("mlx4-ib"));
    EXPECT_EQ(r.read_errors, 0u) << (r.errors.empty() ? "" : r.errors.front().text());
    const auto& d = device(r, "mlx4_0");
    ASSERT_EQ(d.ports.size(), 2u);
    const auto& p2 = d.ports[1];
    EXPECT_EQ(p2.counters.at("port_xmit_data"), 106161427560u / 4);  // counters/ reads 4294967295
    EXPECT_EQ(p2.xmit_bytes, 106161427560u);
    EXPECT_EQ(p2.rcv_bytes, 9841747136u);
    EXPECT_EQ(p2.counters.at("port_xmit_packets"), 88622850u);
    EXPECT_EQ(p2.counters.at("unicast_xmit_packets"), 88621800u);
    EXPECT_EQ(p2.counters.at("multicast_rcv_packets"), 1064u);
    EXPECT_FALSE(p2.counters.contains("port_xmit_data_64"));
    // Port 1 has no counters_ext/: counters/ as it is.
    EXPECT_EQ(d.ports[0].xmit_bytes, 106036453180u);
}

// What node_exporter's infiniband collector reports for the mlx4 and hfi1 devices: the
// values Prometheus procfs expects from its own fixture tree (sysfs/class_infiniband_test.go,
// TestInfiniBandClass), whose values our fixtures carry. Rates in bytes/s, data counters in
// bytes (x4); counters the procfs test leaves at zero are listed too.
struct NodeExporterPort {
    const char* device;
    uint32_t port;
    int state_id;
    int phys_state_id;
    uint64_t rate_bytes_per_second;
    std::map<std::string, uint64_t> counters;  // procfs field, as its counters/ file name
};

const std::vector<NodeExporterPort>& node_exporter_view() {
    static const std::vector<NodeExporterPort> v = {
        {"hfi1_0",
         1,
         4,
         5,
         12500000000,
         {{"port_rcv_data", 1380366808104},
          {"port_rcv_packets", 638036947},
          {"port_xmit_data", 1094233306172},
          {"port_xmit_packets", 568318856},
          {"port_xmit_wait", 0},
          {"excessive_buffer_overrun_errors", 0},
          {"link_downed", 0},
          {"link_error_recovery", 0},
          {"local_link_integrity_errors", 0},
          {"port_rcv_constraint_errors", 0},
          {"port_rcv_errors", 0},
          {"port_rcv_remote_physical_errors", 0},
          {"port_rcv_switch_relay_errors", 0},
          {"port_xmit_constraint_errors", 0},
          {"port_xmit_discards", 0},
          {"symbol_error", 0},
          {"VL15_dropped", 0}}},
        {"mlx4_0",
         1,
         4,
         5,
         5000000000,
         {{"port_rcv_data", 8884894436},
          {"port_rcv_packets", 87169372},
          {"port_xmit_data", 106036453180},
          {"port_xmit_packets", 85734114},
          {"port_xmit_wait", 3599},
          {"excessive_buffer_overrun_errors", 0},
          {"link_downed", 0},
          {"link_error_recovery", 0},
          {"local_link_integrity_errors", 0},
          {"port_rcv_constraint_errors", 0},
          {"port_rcv_errors", 0},
          {"port_rcv_remote_physical_errors", 0},
          {"port_rcv_switch_relay_errors", 0},
          {"port_xmit_constraint_errors", 0},
          {"port_xmit_discards", 0},
          {"symbol_error", 0},
          {"VL15_dropped", 0}}},
        // Port 2 is laid out as on a pre-4.5 kernel: node_exporter reports its counters_ext/
        // values as node_infiniband_legacy_*; procfs's port_xmit_data (106161427560) is what
        // counters_ext holds here, while counters/ saturated at 2^32-1 words.
        {"mlx4_0",
         2,
         4,
         5,
         5000000000,
         {{"port_rcv_data", 9841747136},
          {"port_rcv_packets", 89332064},
          {"port_xmit_data", 106161427560},
          {"port_xmit_packets", 88622850},
          {"port_xmit_wait", 3846},
          {"excessive_buffer_overrun_errors", 0},
          {"link_downed", 0},
          {"link_error_recovery", 0},
          {"local_link_integrity_errors", 0},
          {"port_rcv_constraint_errors", 0},
          {"port_rcv_errors", 0},
          {"port_rcv_remote_physical_errors", 0},
          {"port_rcv_switch_relay_errors", 0},
          {"port_xmit_constraint_errors", 0},
          {"port_xmit_discards", 0},
          {"symbol_error", 0},
          {"VL15_dropped", 0}}},
    };
    return v;
}

TEST(SysfsFamilies, ReadingsEqualNodeExporters) {
    std::map<std::string, SysfsReadResult> trees;
    trees["hfi1_0"] = read_rdma_devices(sysfs_fixture("hfi1-opa"));
    trees["mlx4_0"] = read_rdma_devices(sysfs_fixture("mlx4-ib"));
    for (const auto& [name, r] : trees) EXPECT_EQ(r.read_errors, 0u) << name;
    for (const auto& want : node_exporter_view()) {
        SCOPED_TRACE(std::string(want.device) + "/" + std::to_string(want.port));
        const auto& d = device(trees.at(want.device), want.device);
        const auto it = std::find_if(d.ports.begin(), d.ports.end(),
                                     [&](const RdmaPort& p) { return p.port == want.port; });
        ASSERT_NE(it, d.ports.end());
        const RdmaPort& p = *it;
        EXPECT_EQ(p.state, want.state_id);
        EXPECT_EQ(p.phys_state, want.phys_state_id);
        ASSERT_TRUE(p.rate_gbps);
        // node_exporter: Gb/s x 125,000,000; ours: Gb/s, exported as x 1e9 / 8: the same.
        EXPECT_EQ(static_cast<uint64_t>(*p.rate_gbps * 1e9 / 8), want.rate_bytes_per_second);
        for (const auto& [counter, value] : want.counters) {
            SCOPED_TRACE(counter);
            if (counter == "port_rcv_data") {
                EXPECT_EQ(p.rcv_bytes, value);
            } else if (counter == "port_xmit_data") {
                EXPECT_EQ(p.xmit_bytes, value);
            } else {
                ASSERT_TRUE(p.counters.contains(counter));
                EXPECT_EQ(p.counters.at(counter), value);
            }
        }
    }
    const auto& hfi = device(trees.at("hfi1_0"), "hfi1_0");
    EXPECT_EQ(hfi.board_id, "HPE 100Gb 1-port OP101 QSFP28 x16 PCIe Gen3 with Intel Omni-Path Adapter");
    EXPECT_EQ(hfi.fw_ver, "1.27.0");
    EXPECT_EQ(hfi.hca_type, "");
    EXPECT_EQ(hfi.driver, "hfi1");
    const auto& mlx4 = device(trees.at("mlx4_0"), "mlx4_0");
    EXPECT_EQ(mlx4.board_id, "SM_1141000001000");
    EXPECT_EQ(mlx4.fw_ver, "2.31.5050");
    EXPECT_EQ(mlx4.hca_type, "MT4099");
    EXPECT_EQ(mlx4.driver, "mlx4_core");
    for (const auto* d : {&hfi, &mlx4})
        for (const auto& p : d->ports) {
            EXPECT_EQ(p.link_layer, "InfiniBand");
            EXPECT_TRUE(p.netdev.empty());
        }
}

// rdma_cm's configfs defaults, where an administrator made the directory: ToS and RoCE mode
// per port; a bad ToS is an error on that file only; a device without the directory reads unset.
TEST(SysfsRead, RdmaCmConfigfsDefaults) {
    ScratchTree t("rdma_cm");
    for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_2"})
        t.write(std::string("class/infiniband/") + dev + "/ports/1/state", "4: ACTIVE\n");
    t.write("kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "106\n");
    t.write("kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode", "RoCE v2\n");
    t.write("kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos", "loud\n");
    const auto r = read_rdma_devices(t.root);
    ASSERT_EQ(r.devices.size(), 3u);
    EXPECT_EQ(r.devices[0].ports.at(0).rdma_cm_default_tos, 106);
    EXPECT_EQ(r.devices[0].ports.at(0).rdma_cm_default_mode, "RoCE v2");
    EXPECT_FALSE(r.devices[1].ports.at(0).rdma_cm_default_tos);
    EXPECT_TRUE(has_error_about(r, "default_roce_tos: not a ToS (0..255): \"loud\""));
    EXPECT_FALSE(r.devices[2].ports.at(0).rdma_cm_default_tos);
    EXPECT_EQ(r.devices[2].ports.at(0).rdma_cm_default_mode, "");
    EXPECT_EQ(r.read_errors, 1u);
}

// ECN per priority at a RoCE port's netdev (mlx5 of MLNX_OFED / DOCA-OFED): a bitmap per
// point; a garbled file is an error on that file and leaves that point unknown; a netdev
// without the directory, and a read with neither the GID tables nor ECN, leave both unset.
TEST(SysfsRead, EcnPerPriorityAtTheRoceNetdev) {
    ScratchTree t("ecn");
    for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_2"}) {
        t.write(std::string("class/infiniband/") + dev + "/ports/1/state", "4: ACTIVE\n");
        t.write(std::string("class/infiniband/") + dev + "/ports/1/link_layer", "Ethernet\n");
    }
    t.write("class/infiniband/mlx5_0/device/net/eth0/ifindex", "2\n");
    t.write("class/infiniband/mlx5_1/device/net/eth1/ifindex", "3\n");
    t.write("class/infiniband/mlx5_2/device/net/eth2/ifindex", "4\n");
    for (int prio = 0; prio < 8; ++prio) {
        const std::string n = std::to_string(prio);
        t.write("class/net/eth0/ecn/roce_rp/enable/" + n, prio == 3 ? "1\n" : "0\n");
        t.write("class/net/eth0/ecn/roce_np/enable/" + n, prio == 3 || prio == 5 ? "1\n" : "0\n");
        t.write("class/net/eth1/ecn/roce_rp/enable/" + n, prio == 6 ? "yes\n" : "1\n");
        t.write("class/net/eth1/ecn/roce_np/enable/" + n, "0\n");
    }
    const auto r = read_rdma_devices(t.root, {.gids = true});
    ASSERT_EQ(r.devices.size(), 3u);
    const auto& p0 = r.devices[0].ports.at(0);
    ASSERT_EQ(p0.netdev, "eth0");
    EXPECT_EQ(p0.ecn_rp_enabled, uint8_t{0x08});
    EXPECT_EQ(p0.ecn_np_enabled, uint8_t{0x28});
    EXPECT_FALSE(r.devices[1].ports.at(0).ecn_rp_enabled);
    EXPECT_EQ(r.devices[1].ports.at(0).ecn_np_enabled, uint8_t{0});
    EXPECT_TRUE(has_error_about(r, "ecn/roce_rp/enable/6: expected 0 or 1, got 'yes'")) << r.errors.at(0).text();
    EXPECT_FALSE(r.devices[2].ports.at(0).ecn_rp_enabled);
    EXPECT_FALSE(r.devices[2].ports.at(0).ecn_np_enabled);
    EXPECT_EQ(r.read_errors, 1u);

    // Without the GID tables ECN is read when asked (the engine asks every minute), and
    // only then.
    const auto no_gids = read_rdma_devices(t.root, {.gids = false});
    EXPECT_EQ(no_gids.devices[0].ports.at(0).ecn_rp_enabled, uint8_t{0x08});
    const auto neither = read_rdma_devices(t.root, {.gids = false, .ecn = false});
    EXPECT_FALSE(neither.devices[0].ports.at(0).ecn_rp_enabled);
}
