// ARP sysctls and the ARP table from a procfs tree written by the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/core/procfs_net.hpp"

using namespace rocewatch;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

}  // namespace

TEST(ProcfsNet, ArpTableKeepsCompleteEntriesOnly) {
    const auto v = parse_proc_net_arp(
        "IP address       HW type     Flags       HW address            Mask     Device\n"
        "10.1.0.2         0x1         0x2         AA:00:00:00:00:01     *        enp1s0f0np0\n"
        "10.1.0.9         0x1         0x0         00:00:00:00:00:00     *        enp1s0f0np0\n"
        "10.2.0.2         0x1         0x6         aa:00:00:00:00:02     *        enp1s0f1np1\n"
        "garbage\n");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].address, "10.1.0.2");
    EXPECT_EQ(v[0].mac, "aa:00:00:00:00:01");
    EXPECT_EQ(v[0].link, "enp1s0f0np0");
    EXPECT_EQ(v[1].link, "enp1s0f1np1");
}

// The kernel acts on the larger of "all" and the link's own value.
TEST(ProcfsNet, SysctlsAreTheEffectiveOnes) {
    const fs::path root = fs::temp_directory_path() / ("rw-procfs-" + std::to_string(::getpid()));
    const auto conf = root / "sys/net/ipv4/conf";
    write(conf / "all/arp_ignore", "0\n");
    write(conf / "all/arp_announce", "2\n");
    write(conf / "all/rp_filter", "0\n");
    write(conf / "eth0/arp_ignore", "1\n");
    write(conf / "eth0/arp_announce", "0\n");
    write(conf / "eth0/rp_filter", "2\n");
    write(root / "net/arp",
          "IP address HW type Flags HW address Mask Device\n10.0.0.2 0x1 0x2 aa:bb:cc:dd:ee:ff * eth0\n");
    write(conf / "eth2/arp_ignore", "1x\n");  // garbled: that file alone is skipped
    write(conf / "eth2/arp_announce", "");
    write(conf / "eth2/rp_filter", "1\n");
    std::vector<Link> links{Link{.name = "eth0"}, Link{.name = "eth1"}, Link{.name = "eth2"}};
    read_ipv4_conf(links, root);
    EXPECT_EQ(links[0].arp_ignore, 1);
    EXPECT_EQ(links[0].arp_announce, 2);
    EXPECT_EQ(links[0].rp_filter, 2);
    EXPECT_FALSE(links[1].arp_ignore) << "no directory for eth1";
    EXPECT_FALSE(links[2].arp_ignore) << "garbled";
    EXPECT_FALSE(links[2].arp_announce) << "empty";
    EXPECT_EQ(links[2].rp_filter, 1);
    EXPECT_EQ(read_arp_table(root).size(), 1u);
    EXPECT_TRUE(read_arp_table(root / "nowhere").empty());
    fs::remove_all(root);
}
