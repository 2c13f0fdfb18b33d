// ARP sysctls and the ARP table from procfs: see procfs_net.hpp.
#include "daemon/core/procfs_net.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>

namespace rocewatch {
namespace {

std::optional<int> read_int(const std::filesystem::path& p) {
    std::ifstream f(p);
    int v = 0;
    if (f >> v) return v;
    return std::nullopt;
}

std::optional<int> effective(std::optional<int> all, std::optional<int> own) {
    if (!own) return std::nullopt;
    return all ? std::max(*all, *own) : own;
}

}  // namespace

void read_ipv4_conf(std::vector<Link>& links, const std::filesystem::path& procfs_root) {
    const auto conf = procfs_root / "sys" / "net" / "ipv4" / "conf";
    const auto all_ignore = read_int(conf / "all" / "arp_ignore");
    const auto all_announce = read_int(conf / "all" / "arp_announce");
    const auto all_rp = read_int(conf / "all" / "rp_filter");
    for (auto& l : links) {
        if (l.name.empty() || l.name.find('/') != std::string::npos || l.name == "." || l.name == "..") continue;
        l.arp_ignore = effective(all_ignore, read_int(conf / l.name / "arp_ignore"));
        l.arp_announce = effective(all_announce, read_int(conf / l.name / "arp_announce"));
        l.rp_filter = effective(all_rp, read_int(conf / l.name / "rp_filter"));
    }
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
