// ARP sysctls and the ARP table from a procfs tree written by the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

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

// With a file cache the sysctls are kept open from read to read (one pread each), and still
// read as they are now: a value written in place, a file replaced by a rename (a tree outside
// procfs can have that), a link whose directory went away.
TEST(ProcfsNet, SysctlsKeptOpenAreReadAsTheyAreNow) {
    const fs::path root = fs::temp_directory_path() / ("rw-procfs-kept-" + std::to_string(::getpid()));
    const auto conf = root / "sys/net/ipv4/conf";
    for (const char* link : {"all", "eth0", "eth1"}) {
        write(conf / link / "arp_ignore", "0\n");
        write(conf / link / "arp_announce", "0\n");
        write(conf / link / "rp_filter", "0\n");
    }
    auto files = std::make_shared<SysfsFileCache>(64);
    std::vector<Link> links{Link{.name = "eth0"}, Link{.name = "eth1"}};
    read_ipv4_conf(links, root, files);
    EXPECT_EQ(links[0].arp_ignore, 0);
    EXPECT_EQ(files->size(), 9u) << "every file kept";

    write(conf / "eth0/arp_ignore", "1\n");  // in place
    write(conf / "eth0/rp_filter.new", "2\n");
    fs::rename(conf / "eth0/rp_filter.new", conf / "eth0/rp_filter");
    fs::remove_all(conf / "eth1");
    read_ipv4_conf(links, root, files);
    EXPECT_EQ(links[0].arp_ignore, 1);
    EXPECT_EQ(links[0].rp_filter, 2) << "the renamed file, not the one kept";
    EXPECT_FALSE(links[1].arp_ignore) << "gone";
    EXPECT_EQ(files->size(), 6u);
    fs::remove_all(root);
}

// The real procfs of this namespace: loopback's sysctls, read through kept files (pread on a
// sysctl file), give the same values as opened afresh.
TEST(ProcfsNet, RealProcfsSysctlsReadThroughKeptFiles) {
    auto files = std::make_shared<SysfsFileCache>(64);
    std::vector<Link> fresh{Link{.name = "lo"}}, kept{Link{.name = "lo"}};
    read_ipv4_conf(fresh, "/proc");
    ASSERT_TRUE(fresh[0].arp_ignore && fresh[0].arp_announce && fresh[0].rp_filter) << "lo has its sysctls";
    for (int i = 0; i < 3; ++i) {
        read_ipv4_conf(kept, "/proc", files);
        EXPECT_EQ(kept[0].arp_ignore, fresh[0].arp_ignore) << "read " << i;
        EXPECT_EQ(kept[0].arp_announce, fresh[0].arp_announce) << "read " << i;
        EXPECT_EQ(kept[0].rp_filter, fresh[0].rp_filter) << "read " << i;
    }
    EXPECT_EQ(files->size(), 6u) << "lo's and all's three, kept";
}
