// Driver statistics over the SIOCETHTOOL ioctl (ethtool -S).
#include "daemon/netlink/ethtool_stats.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/model/driver_stats.hpp"

namespace rocewatch {

namespace {

// More than any driver reports (mlx5 with 64 channels: a few thousand): a count beyond it is
// taken as garbage rather than allocated.
constexpr uint32_t kMaxStats = 1u << 16;

// One SIOCETHTOOL request on `ifname` with `data` as its command buffer: 0 or the errno.
int ethtool(int s, const std::string& ifname, void* data) {
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = static_cast<char*>(data);
    return ::ioctl(s, SIOCETHTOOL, &ifr) == 0 ? 0 : errno;
}

// ETH_SS_STATS' string count, or an errno.
int stats_count(int s, const std::string& ifname, uint32_t& n) {
    // ethtool_sset_info ends in a flexible array: one u32 follows for the one set asked.
    std::vector<uint64_t> buf((sizeof(ethtool_sset_info) + sizeof(uint32_t) + 7) / 8, 0);
    auto* info = reinterpret_cast<ethtool_sset_info*>(buf.data());
    info->cmd = ETHTOOL_GSSET_INFO;
    info->sset_mask = uint64_t{1} << ETH_SS_STATS;
    if (int err = ethtool(s, ifname, info)) return err;
    n = 0;
    if (info->sset_mask & (uint64_t{1} << ETH_SS_STATS))
        std::memcpy(&n, reinterpret_cast<const uint8_t*>(info) + sizeof(ethtool_sset_info), sizeof n);
    return 0;
}

int stat_names(int s, const std::string& ifname, uint32_t n, std::vector<std::string>& out) {
    std::vector<uint64_t> buf((sizeof(ethtool_gstrings) + size_t{n} * ETH_GSTRING_LEN + 7) / 8, 0);
    auto* g = reinterpret_cast<ethtool_gstrings*>(buf.data());
    g->cmd = ETHTOOL_GSTRINGS;
    g->string_set = ETH_SS_STATS;
    g->len = n;
    if (int err = ethtool(s, ifname, g)) return err;
    const auto* base = reinterpret_cast<const char*>(g) + sizeof(ethtool_gstrings);
    out.clear();
    for (uint32_t i = 0; i < std::min(n, g->len); ++i) {
        const char* name = base + size_t{i} * ETH_GSTRING_LEN;
        out.emplace_back(name, ::strnlen(name, ETH_GSTRING_LEN));
    }
    return 0;
}

}  // namespace

DriverStatsReader::~DriverStatsReader() {
    if (fd_ >= 0) ::close(fd_);
}

bool is_lossless_stat(std::string_view name) { return driver_stat_meaning(name).has_value(); }

DriverStats DriverStatsReader::read(const std::string& ifname) {
    DriverStats out;
    if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
        out.error = ENODEV;
        return out;
    }
    int fd = -1;
    {
        std::lock_guard lock(mu_);
        if (fd_ < 0) fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) {
            out.error = errno;
            return out;
        }
        fd = fd_;
    }
    uint32_t n = 0;
    if ((out.error = stats_count(fd, ifname, n))) return out;
    if (n == 0) return out;
    if (n > kMaxStats) {
        out.error = EOVERFLOW;
        return out;
    }
    std::vector<std::string> names;
    {
        std::lock_guard lock(mu_);
        if (auto it = names_.find(ifname); it != names_.end() && it->second.size() == n) names = it->second;
    }
    if (names.empty()) {
        if ((out.error = stat_names(fd, ifname, n, names))) return out;
        std::lock_guard lock(mu_);
        names_[ifname] = names;
    }
    std::vector<uint64_t> buf((sizeof(ethtool_stats) + 7) / 8 + n, 0);
    auto* st = reinterpret_cast<ethtool_stats*>(buf.data());
    st->cmd = ETHTOOL_GSTATS;
    st->n_stats = n;
    if ((out.error = ethtool(fd, ifname, st))) return out;
    // A driver that grew its set between the two calls answers with fewer: take what both agree on.
    const uint32_t got = std::min<uint32_t>({n, st->n_stats, static_cast<uint32_t>(names.size())});
    const auto* values = reinterpret_cast<const uint8_t*>(st) + sizeof(ethtool_stats);
    for (uint32_t i = 0; i < got; ++i) {
        if (keep_ && !keep_(names[i])) continue;
        uint64_t v = 0;
        std::memcpy(&v, values + size_t{i} * sizeof v, sizeof v);
        out.values.emplace_back(names[i], v);
    }
    if (st->n_stats != n) {
        std::lock_guard lock(mu_);
        names_.erase(ifname);  // ask for the names again next time
    }
    return out;
}

}  // namespace rocewatch
