// ARP sysctls and the ARP table from procfs: see procfs_net.hpp.
#include "daemon/core/procfs_net.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

namespace rocewatch {
namespace {

// One small integer file under `dir` (an open directory, or -1: none), read with one read into
// the stack: these are three files a link a cycle, and an ifstream a file cost more than the
// kernel's part at 128 links.
std::optional<int> read_int(int dir, const std::string& rel) {
    if (dir < 0) return std::nullopt;
    const int fd = ::openat(dir, rel.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return std::nullopt;
    char buf[32];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return std::nullopt;
    buf[n] = '\0';
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(buf, &end, 10);
    if (end == buf || errno != 0 || v < INT_MIN || v > INT_MAX) return std::nullopt;
    while (*end == ' ' || *end == '\t' || *end == '\n') ++end;
    if (*end != '\0') return std::nullopt;
    return static_cast<int>(v);
}

std::optional<int> effective(std::optional<int> all, std::optional<int> own) {
    if (!own) return std::nullopt;
    return all ? std::max(*all, *own) : own;
}

}  // namespace

void read_ipv4_conf(std::vector<Link>& links, const std::filesystem::path& procfs_root) {
    const auto conf_path = procfs_root / "sys" / "net" / "ipv4" / "conf";
    const int conf = ::open(conf_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const auto all_ignore = read_int(conf, "all/arp_ignore");
    const auto all_announce = read_int(conf, "all/arp_announce");
    const auto all_rp = read_int(conf, "all/rp_filter");
    std::string rel;
    for (auto& l : links) {
        if (l.name.empty() || l.name.find('/') != std::string::npos || l.name == "." || l.name == "..") continue;
        const auto file = [&](const char* name) -> const std::string& {
            rel.assign(l.name).append("/").append(name);
            return rel;
        };
        l.arp_ignore = effective(all_ignore, read_int(conf, file("arp_ignore")));
        l.arp_announce = effective(all_announce, read_int(conf, file("arp_announce")));
        l.rp_filter = effective(all_rp, read_int(conf, file("rp_filter")));
    }
    if (conf >= 0) ::close(conf);
}

std::vector<Neighbour> parse_proc_net_arp(const std::string& text) {
    // IP address       HW type     Flags       HW address            Mask     Device
    // 192.168.100.12   0x1         0x2         30:c5:99:3e:6a:23     *        enp1s0f0np0
    std::vector<Neighbour> out;
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string ip, hwtype, flags, mac, mask, dev;
        if (!(f >> ip >> hwtype >> flags >> mac >> mask >> dev)) continue;
        unsigned long fl = 0;
        try {
            fl = std::stoul(flags, nullptr, 16);
        } catch (...) {
            continue;
        }
        if (!(fl & 0x2) || mac == "00:00:00:00:00:00") continue;  // ATF_COM: resolved
        std::transform(mac.begin(), mac.end(), mac.begin(), [](unsigned char c) { return std::tolower(c); });
        out.push_back({.address = ip, .mac = mac, .link = dev});
    }
    return out;
}

std::vector<Neighbour> read_arp_table(const std::filesystem::path& procfs_root) {
    std::ifstream f(procfs_root / "net" / "arp");
    if (!f) return {};
    std::stringstream ss;
    ss << f.rdbuf();
    return parse_proc_net_arp(ss.str());
}

}  // namespace rocewatch
