// ARP sysctls and the ARP table from procfs: see procfs_net.hpp.
#include "daemon/core/procfs_net.hpp"

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

std::optional<int> effective(std::optional<int> all, std::optional<int> own) {
    if (!own) return std::nullopt;
    return all ? std::max(*all, *own) : own;
}

}  // namespace

std::optional<int> parse_sysctl_int(std::string_view text) {
    char buf[32];
    if (text.empty() || text.size() >= sizeof buf) return std::nullopt;
    text.copy(buf, text.size());
    buf[text.size()] = '\0';
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(buf, &end, 10);
    if (end == buf || errno != 0 || v < INT_MIN || v > INT_MAX) return std::nullopt;
    while (*end == ' ' || *end == '\t' || *end == '\n') ++end;
    if (*end != '\0') return std::nullopt;
    return static_cast<int>(v);
}

void read_ipv4_conf(std::vector<Link>& links, const std::filesystem::path& procfs_root,
                    std::shared_ptr<SysfsFileCache> files) {
    static constexpr const char* kNames[] = {"arp_ignore", "arp_announce", "rp_filter"};
    std::vector<KernelFile> wanted;
    wanted.reserve(3 * (links.size() + 1));
    const auto want = [&](const std::string& link) {
        for (const char* n : kNames) wanted.push_back({.dir = "sys/net/ipv4/conf/" + link, .name = n});
    };
    const auto usable = [](const std::string& name) {
        return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
    };
    want("all");
    for (const auto& l : links)
        if (usable(l.name)) want(l.name);
    const auto text = read_kernel_files(procfs_root, wanted, SysfsReadOptions{.files = std::move(files)});
    const auto value = [&](size_t i) { return text[i] ? parse_sysctl_int(*text[i]) : std::nullopt; };
    size_t at = 3;
    for (auto& l : links) {
        if (!usable(l.name)) continue;
        l.arp_ignore = effective(value(0), value(at));
        l.arp_announce = effective(value(1), value(at + 1));
        l.rp_filter = effective(value(2), value(at + 2));
        at += 3;
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
