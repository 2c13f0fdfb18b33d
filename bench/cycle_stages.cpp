// The costly stages of a collection cycle and a scrape, each on its own, on a sysfs tree
// (bench/make_nic_tree.py makes them): the counter read (counters/ and hw_counters/, files kept
// open as the daemon keeps them), the trend stage over it, and the /metrics render and its
// deflate. Prints the median per stage, the rendered text's size and a hash of it, so that two
// builds run side by side (bench/stages_side_by_side.sh) are seen to render the same. The heap
// is set up as the daemon's (one arena, a fixed trim threshold, so a block over 128 KiB is
// mapped afresh each time) and its free pages are handed back after each render and deflate,
// as the daemon's renderer does: the render's page faults count as they do there.
//
//   cycle_stages SYSFS_ROOT [ROUNDS]
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/gzip_once.hpp"
#include "api/metrics.hpp"
#include "daemon/rules/trends.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"
#include "util/heap.hpp"

namespace {

using Ms = std::chrono::duration<double, std::milli>;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SYSFS_ROOT [ROUNDS]\n", argv[0]);
        return 2;
    }
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 40;
    (void)mallopt(M_ARENA_MAX, 1);  // as daemon/main.cpp sets them
    (void)mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    rocewatch::SysfsReadOptions opts;
    opts.files = std::make_shared<rocewatch::SysfsFileCache>();
    rocewatch::Snapshot full;  // what a full read gives: what /metrics shows
    full.devices = rocewatch::read_rdma_devices(argv[1], opts).devices;
    if (full.devices.empty() || rounds < 1) {
        std::fprintf(stderr, "%s: no RDMA devices under %s (or no rounds)\n", argv[0], argv[1]);
        return 1;
    }
    opts.gids = false;  // a cycle between GID reads: the counters and port state
    opts.ecn = false;
    rocewatch::TrendTracker trends;
    rocewatch::api::RenderSizes sizes;  // as the daemon's /metrics cache keeps them
    auto at = rocewatch::Clock::now();
    std::map<std::string, std::vector<double>> ms;
    std::size_t bytes = 0, deflated = 0, hash = 0;
    for (int i = 0; i < rounds; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        rocewatch::Snapshot s;
        s.devices = rocewatch::read_rdma_devices(argv[1], opts).devices;
        const auto t1 = std::chrono::steady_clock::now();
        at += std::chrono::seconds(5);
        s.counters_read_at = at;
        trends.apply(s, at);
        const auto t2 = std::chrono::steady_clock::now();
        const auto pieces = rocewatch::api::render_snapshot_pieces(full, &sizes);
        const auto t3 = std::chrono::steady_clock::now();
        const std::vector<std::string_view> views(pieces.begin(), pieces.end());
        const auto prefix = rocewatch::api::deflate_prefix(views);
        const auto t4 = std::chrono::steady_clock::now();
        ms["read"].push_back(Ms(t1 - t0).count());
        ms["trends"].push_back(Ms(t2 - t1).count());
        ms["render"].push_back(Ms(t3 - t2).count());
        ms["deflate"].push_back(Ms(t4 - t3).count());
        const std::string text = rocewatch::api::join_pieces(pieces);  // untimed: for the hash
        bytes = text.size();
        deflated = prefix.deflated.size();
        hash = std::hash<std::string>{}(text);
        rocewatch::give_back_free_heap_pages();  // untimed: it runs either way, off the scrape's path
    }
    std::printf("devices %zu text %zu deflated %zu hash %016zx\n", full.devices.size(), bytes, deflated, hash);
    for (const char* stage : {"read", "trends", "render", "deflate"})
        std::printf("%s %.3f\n", stage, median(ms[stage]));
    return 0;
}
