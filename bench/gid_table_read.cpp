// A GID table read two ways, side by side, on the real devices of this host (the VM test bed:
// tests/vm/scenarios/gid-read.sh): from sysfs as rocewatch reads it (every slot's gids/N, then
// gid_attrs/types/N and ndevs/N for the non-zero ones, each file opened, read and closed), and
// through libibverbs' ibv_query_gid_table (rdma-core 32 and later), one ioctl a device that
// returns the valid entries of all its ports with their type and netdev. The verbs figures
// include opening and closing each device, as the daemon's verbs stage does every cycle; "open
// and query_port" is that stage as it is (every port queried), so the difference between it and
// "open and query_gid_table" is what the GID query adds.
//
//   build/bench/gid_table_read [rounds]    # medians over rounds (5)
//
// Exit status 1 when the two reads do not find the same number of entries.
#include <dirent.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// The most entries one ioctl can return: the kernel's attribute length is 16 bits, and an
// entry is 32 bytes, so 2,048 and more are refused with EINVAL.
constexpr size_t kMaxEntries = 1024;

struct Count {
    size_t entries = 0;
    size_t files = 0;  // sysfs files read
    int devices = 0;
};

bool read_small(int dir_fd, const char* name, std::array<char, 128>& buf) {
    const int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = ::read(fd, buf.data(), buf.size() - 1);
    ::close(fd);
    if (n < 0) return false;
    buf[static_cast<size_t>(n)] = '\0';
    return true;
}

// The names in a directory, "." and ".." left out.
std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    ::closedir(d);
    return out;
}

// One port's GID table: every slot's gids/N, and types/N and ndevs/N for a slot in use.
void read_sysfs_port(const std::string& port, Count& c) {
    std::array<char, 128> buf{};
    const int gids = ::open((port + "/gids").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int types = ::open((port + "/gid_attrs/types").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int ndevs = ::open((port + "/gid_attrs/ndevs").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* slots = gids >= 0 ? ::fdopendir(::dup(gids)) : nullptr;
    while (slots) {
        const dirent* s = ::readdir(slots);
        if (!s) break;
        if (s->d_name[0] == '.') continue;
        ++c.files;
        if (!read_small(gids, s->d_name, buf)) continue;
        if (std::strncmp(buf.data(), "0000:0000:0000:0000:0000:0000:0000:0000", 39) == 0) continue;
        ++c.entries;
        c.files += 2;
        (void)read_small(types, s->d_name, buf);
        (void)read_small(ndevs, s->d_name, buf);
    }
    if (slots) ::closedir(slots);
    for (const int fd : {gids, types, ndevs})
        if (fd >= 0) ::close(fd);
}

// Every port of every device, as the daemon reads them.
Count read_sysfs() {
    Count c;
    const std::string root = "/sys/class/infiniband/";
    for (const auto& dev : names_in(root)) {
        ++c.devices;
        for (const auto& port : names_in(root + dev + "/ports")) read_sysfs_port(root + dev + "/ports/" + port, c);
    }
    return c;
}

// Every device opened and closed; with `gids`, its GID table queried in between, else each of
// its ports (what the daemon's verbs stage asks today).
Count read_verbs(bool gids) {
    Count c;
    int num = 0;
    ibv_device** list = ::ibv_get_device_list(&num);
    if (!list) return c;
    static std::array<ibv_gid_entry, kMaxEntries> entries;
    for (int i = 0; i < num; ++i) {
        ibv_context* ctx = ::ibv_open_device(list[i]);
        if (!ctx) continue;
        ++c.devices;
        if (gids) {
            const ssize_t n = ::ibv_query_gid_table(ctx, entries.data(), entries.size(), 0);
            if (n < 0)
                std::fprintf(stderr, "ibv_query_gid_table(%s): %s\n", ::ibv_get_device_name(list[i]),
                             std::strerror(static_cast<int>(-n)));
            else
                c.entries += static_cast<size_t>(n);
        } else {
            ibv_device_attr dev{};
            const int ports = ::ibv_query_device(ctx, &dev) == 0 ? dev.phys_port_cnt : 0;
            for (int port = 1; port <= ports; ++port) {
                ibv_port_attr attr{};
                (void)::ibv_query_port(ctx, static_cast<uint8_t>(port), &attr);
            }
        }
        ::ibv_close_device(ctx);
    }
    ::ibv_free_device_list(list);
    return c;
}

double median_ms(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double timed_ms(const std::function<void()>& f) {
    const auto t0 = Clock::now();
    f();
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    std::vector<double> sysfs_ms, open_ms, table_ms;
    Count sysfs, table;
    for (int r = 0; r < rounds; ++r) {
        sysfs_ms.push_back(timed_ms([&] { sysfs = read_sysfs(); }));
        open_ms.push_back(timed_ms([&] { (void)read_verbs(false); }));
        table_ms.push_back(timed_ms([&] { table = read_verbs(true); }));
    }
    std::printf(
        "devices %d; sysfs: %zu entries from %zu files, median %.1f ms; verbs, open and query_port: median %.1f ms; "
        "verbs, open and query_gid_table: %zu entries, median %.1f ms\n",
        sysfs.devices, sysfs.entries, sysfs.files, median_ms(sysfs_ms), median_ms(open_ms), table.entries,
        median_ms(table_ms));
    return sysfs.entries == table.entries ? 0 : 1;
}
