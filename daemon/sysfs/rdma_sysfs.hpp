// Reads RDMA devices, ports, GID tables and counters (and a few host facts) from a sysfs root.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "daemon/model/shared_map.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// ---------------------------------------------------------------- pure parsers

// "4: ACTIVE" -> {4, "ACTIVE"}; "5: LinkUp\n" -> {5, "LinkUp"}. Both halves are required.
[[nodiscard]] std::optional<std::pair<int, std::string>> parse_enum_line(std::string_view text);

// "100 Gb/sec (4X EDR)" -> 100.0, "2.5 Gb/sec (1X SDR)" -> 2.5.
[[nodiscard]] std::optional<double> parse_rate_gbps(std::string_view text);

// "0000:0000:0000:0000:0000:ffff:c0a8:640b" -> "192.168.100.11"; "" when the GID is not an
// IPv4-mapped address or not a GID at all.
[[nodiscard]] std::string ipv4_from_gid(std::string_view gid);

// True for any text that parses as an IPv6 address / GID.
[[nodiscard]] bool is_valid_gid(std::string_view gid);

// True for the all-zero GID that fills a table's empty slots.
[[nodiscard]] bool is_zero_gid(std::string_view gid);

// "N/A (no PMA)": what the kernel prints for a counters/ file of a device that has no
// performance management agent (i40iw, some IB drivers). Not a value, and not an error.
[[nodiscard]] bool is_no_pma(std::string_view text);

// A name the kernel would give a netdev (dev_valid_name): 1..15 bytes, not "." or "..", no
// '/', ':' or whitespace. What a gid_attrs/ndevs file holds is checked against it: a file that
// holds anything else is garbled, not a name.
[[nodiscard]] bool valid_netdev_name(std::string_view name);

// "0x3" (lid, sm_lid, cap_mask: hex with 0x) or "0" (sm_sl: decimal) -> the number.
[[nodiscard]] std::optional<uint32_t> parse_u32_attr(std::string_view text);

// The text of one counter file: a decimal u64, surrounding whitespace allowed.
[[nodiscard]] std::optional<uint64_t> parse_u64_counter(std::string_view text);

// ---------------------------------------------------------------- reading a sysfs tree

struct SysfsError {
    std::string path;
    std::string reason;
    [[nodiscard]] std::string text() const { return path + ": " + reason; }
};

struct SysfsReadResult {
    std::vector<RdmaDevice> devices;  // sorted by name; ports by number; GIDs by index
    uint64_t read_errors = 0;         // values skipped because unreadable or garbled
    std::vector<SysfsError> errors;   // the first kMaxErrorMessages, in the order met
    // Entries under class/infiniband (or a device's ports/) that are not devices (ports): a
    // dangling symlink left by a hot-unplug, a stray file. Skipped, never read errors.
    std::vector<SysfsError> ignored;
    // Whether the ports' counter directories were read (SysfsReadOptions::counters), and the
    // CPU time that took (the reading thread's, not wall time): what a share of a core for
    // counters is charged.
    bool counters_read = true;
    double counter_seconds = 0;
    // Whether what changes only with the device or by hand was read (see reads_identity).
    bool identity_read = true;
    // Whether the ports' lid, sm_lid and sm_sl were read (SysfsReadOptions::subnet_manager).
    bool subnet_manager_read = true;
    // Whether the ports' state, phys_state and rate were read (SysfsReadOptions::port_state).
    bool port_state_read = true;

    static constexpr std::size_t kMaxErrorMessages = 32;
};

// The file a read is on, published before each open so that a caller that stopped waiting
// (a read of a wedged mlx5 counter can take minutes) can name the file that blocked.
class ReadProgress {
public:
    void enter(std::string_view p) {
        std::lock_guard lock(mu_);
        path_.assign(p);  // reuses the capacity: this runs before every open
        ++entered_;
    }
    [[nodiscard]] std::string current() const {
        std::lock_guard lock(mu_);
        return path_;
    }
    // How many files the read has entered: a read whose count still moves is slow, not stuck
    // (a GID table of 1,024 files under emulation takes seconds and is fine).
    [[nodiscard]] uint64_t entered() const {
        std::lock_guard lock(mu_);
        return entered_;
    }

private:
    mutable std::mutex mu_;
    std::string path_;
    uint64_t entered_ = 0;
};

struct SysfsDirEntry {
    std::string name;
    unsigned char type = 0;  // d_type from the listing (DT_UNKNOWN: 0)
};

// Files held open from one read to the next, so that a counter costs one pread at offset 0
// (sysfs renders the attribute afresh for each read from 0) instead of a path lookup, an
// open, a read and a close: most of what collection cost (issue 14). Shared by the reads
// of one collector; a read that finds it busy (an earlier read still stuck in the kernel)
// goes without it. A read with gids (after netlink events, and now and then) starts it
// afresh. Only sysfs and procfs render a file afresh behind the same open file: a tree on
// any other filesystem (a fixture, a copy) can have a file replaced by a rename, so there each
// directory is stat'ed once a read (Reader::settled): one unchanged since its files were kept,
// and a second old then, has them read unchecked; one that changed (its change time or its
// identity) has them opened afresh; one younger than a second has each checked (fstat: still
// linked?) before it is read. One fstat a file was a quarter of the collector's CPU on the
// 128-NIC bench tree. Holds at most max_fds files.
class SysfsFileCache {
public:
    // Half the soft RLIMIT_NOFILE: sockets, probes and verbs need the rest.
    SysfsFileCache();
    explicit SysfsFileCache(std::size_t max_fds) : max_fds_(max_fds) {}
    SysfsFileCache(const SysfsFileCache&) = delete;
    SysfsFileCache& operator=(const SysfsFileCache&) = delete;
    ~SysfsFileCache() { clear(); }

    // Only with mutex() held. Files are kept by directory, then name: a directory's files
    // are found with one lookup of its path (dir_files), and each then in a small map of
    // its own (a lookup by whole path cost a cache miss or two per file at 128 NICs).
    // A directory's kept files: fd by name, in one vector sorted by name, each name an
    // interned one's id (CounterNames: counter files are most of them, and every port has the
    // same). 8 bytes a file: an unordered_map of std::string took about 100 with its node,
    // bucket and long names' heap blocks (0.9 MiB for the 8,600 files kept at 128 NICs, issue
    // 14, heaptrack), a FlatMap of names' views 24.
    struct KeptFd {
        CounterNames::Id name = 0;
        int fd = -1;
    };
    using KeptFds = std::vector<KeptFd>;
    struct DirFiles {
        KeptFds fds;
        // Outside sysfs and procfs: the directory as it was when all its kept files were last
        // checked, set only once its change time was a second old then (so that any later
        // change, even within the filesystem clock's tick, gives another time).
        bool settled = false;
        bool visited = false;  // its identity was recorded once (Reader::settled)
        dev_t dev = 0;
        ino_t ino = 0;
        timespec ctime{};
    };
    [[nodiscard]] DirFiles& dir_files(const std::string& dir) { return fds_[dir]; }
    [[nodiscard]] bool keep(DirFiles& in, std::string_view name, int fd);         // false: full, the caller closes fd
    [[nodiscard]] static int kept_fd(const DirFiles& in, std::string_view name);  // -1: not kept
    void forget(DirFiles& in, std::string_view name);                             // closes its fd
    void forget_all(DirFiles& in);
    // Directory listings, kept alike (the list of devices excepted): null when unknown. A
    // kept entry's name is interned (CounterNames), as every device and port of a model lists
    // the same names, and held as its id: 8 bytes an entry, where a SysfsDirEntry took 40 and
    // a heap block for a name past 15 characters (270 KB less in use at 128 NICs, glibc's
    // count), a view 24. The other listings kept (PCI functions, a device's netdevs) take a
    // name a function or netdev; a listing with a name the table has no room for is not kept,
    // and is read afresh each time.
    struct KeptEntry {
        CounterNames::Id id = 0;
        unsigned char type = 0;
        [[nodiscard]] std::string_view name() const { return CounterNames::name(id); }
    };
    using KeptListing = std::vector<KeptEntry>;
    [[nodiscard]] const KeptListing* listing(const std::string& dir) const;
    void keep_listing(const std::string& dir, const std::vector<SysfsDirEntry>& entries);
    // Device and port entries (symlinks in sysfs) already stat'ed as directories: one stat a
    // device a cycle, through the symlink into devices/, was a tenth of a cycle at 128 NICs.
    // A device removed leaves the listing; one whose link the kernel left behind is an
    // error on its files until the cache starts afresh (after link events, at the latest 5
    // minutes on).
    [[nodiscard]] bool known_directory(const std::string& path) const { return directories_.contains(path); }
    void keep_directory(const std::string& path) { directories_.insert(path); }
    void clear();
    [[nodiscard]] std::size_t size() const { return kept_; }
    // Whether files under root are rendered by the kernel (sysfs, procfs), so that a kept
    // file can never be replaced: asked once per root.
    [[nodiscard]] bool kernel_rendered(const std::string& root);
    [[nodiscard]] std::mutex& mutex() { return mu_; }

private:
    std::mutex mu_;
    std::unordered_map<std::string, DirFiles> fds_;  // by directory path
    std::size_t kept_ = 0;
    std::unordered_map<std::string, KeptListing> listings_;
    std::unordered_set<std::string> directories_;
    std::unordered_map<std::string, bool> kernel_rendered_;
    std::size_t max_fds_;

    static void close_all(KeptFds& fds);
};

// GID tables read some other way than a file per slot. sysfs takes a file for each of a
// port's slots (1,024 on rxe, 255 on mlx5) to find the few in use; libibverbs'
// ibv_query_gid_table returns a device's entries in use in one ioctl (docs/figures.md: the
// sysfs read costs 55-85x as much on rxe).
class GidTableSource {
public:
    // A device's entries in use as (port, entry).
    using Table = std::vector<std::pair<uint32_t, GidEntry>>;

    virtual ~GidTableSource() = default;
    // The entries in use on every port of the device of that name, each with its index, GID
    // and type (the reader derives the IPv4 address and takes the netdev from sysfs), or
    // nullopt where this source cannot read that device: the reader then reads its table from
    // sysfs.
    [[nodiscard]] virtual std::optional<Table> read(const std::string& device) = 0;
};

// Reads <sysfs_root>/class/infiniband/*. A host without that directory has no RDMA, which is
// a normal state: empty result, no errors. An unreadable or garbled file skips that one
// value and is counted; a file the driver simply does not provide is not an error.
// What is not a regular file (a FIFO, a device node), a symlink loop and a file larger than a
// sysfs page are skipped and counted without blocking.
// Each port's RoCE v2 GID is preselected with assign_roce_v2_gid(port, {}); the collector
// may redo it once it knows the netdevs' addresses.
struct SysfsReadOptions {
    // GID tables change only with addresses, links and bonds, and rxe has 1024 slots per
    // port: the collector reads them after netlink events and now and then, not every cycle.
    // Without them, ports have no gids and a LAG port has no netdev: the caller carries
    // both over from its last full read.
    bool gids = true;
    // ECN per priority at RoCE netdevs (ecn/roce_{rp,np}/enable, 16 files a netdev): always
    // with the GID tables, and in between when this is set. Configuration written through
    // sysfs sends no netlink event, so the collector reads it on a cadence of its own. Ports
    // whose netdev comes from the GID tables (LAG) are read only with them.
    bool ecn = true;
    // The ports' counters/, hw_counters/ and counters_ext/ (most of a read on a big node: 53
    // files a port on mlx5). Without them ports have no counters: the caller carries the last
    // ones over, with the time they were read.
    bool counters = true;
    // A port's lid, sm_lid and sm_sl: an InfiniBand subnet manager may move them at any time,
    // with no event to tell, so they are read every cycle while any port is InfiniBand (or
    // its link layer unknown). On Ethernet (RoCE) they are 0 and unused: without this they
    // are read with the identity only, and the caller carries them over (3 of the 6 files a
    // port a cycle besides its counters).
    bool subnet_manager = true;
    // A port's state, phys_state and rate. A RoCE port's follow its netdev's carrier and speed
    // (the driver derives them from the netdev), and each change of those sends a netlink event:
    // the collector reads them every cycle only while some port is not RoCE over a link it
    // watches, and else after link events, with the identity and with the counters, carrying
    // them over in between (the last three files a RoCE port was read for every cycle).
    bool port_state = true;
    // Counters plus populated GIDs kept per port; the rest is counted in the port's
    // counters_dropped / gids_dropped. A hostile or broken tree must not turn into
    // unbounded /metrics series: real ports have a few hundred at most.
    std::size_t max_series_per_port = 1024;
    // Files an earlier read blocked on: counted as errors, never opened again.
    std::shared_ptr<const std::set<std::string>> skip;
    // Told each file before it is opened; may be null.
    std::shared_ptr<ReadProgress> progress;
    // Files kept open between reads; may be null (every file opened and closed each read).
    std::shared_ptr<SysfsFileCache> files;
    // Where the GID tables come from when `gids` is set; may be null (sysfs alone). The
    // source's entries are checked and capped as sysfs' are, and each entry's netdev is read
    // from gid_attrs/ndevs/<index> (a name as the kernel gives it, in whatever namespace).
    std::shared_ptr<GidTableSource> gid_tables;
};

// Whether a read with these options reads what changes only with the device (GUIDs, firmware,
// board, HCA and node type, driver, netdevs; a port's link layer and capability mask) or by
// hand (rdma_cm's configfs defaults): with the GID tables or ECN (which needs the netdevs),
// so every minute and after netlink events. Other reads leave all of it empty, and the
// caller carries it over from its last read: 11 of the 17 files a one-port device read a cycle
// besides its counters, and a stat and a readlink.
[[nodiscard]] inline bool reads_identity(const SysfsReadOptions& o) { return o.gids || o.ecn; }

// Whether a read with these options reads the ports' state, phys_state and rate.
[[nodiscard]] inline bool reads_port_state(const SysfsReadOptions& o) {
    return o.port_state || o.counters || reads_identity(o);
}

// Whether a read with these options reads the ports' lid, sm_lid and sm_sl.
[[nodiscard]] inline bool reads_subnet_manager(const SysfsReadOptions& o) {
    return o.subnet_manager || reads_identity(o);
}

[[nodiscard]] SysfsReadResult read_rdma_devices(const std::filesystem::path& sysfs_root,
                                                const SysfsReadOptions& opts = {});

// mlx5 names a RoCE LAG device mlx5_bond_N: its own netdev is the bond, and GIDs on the bond
// are how it is meant to work, not the failure of an enslaved port.
[[nodiscard]] bool is_lag_device_name(std::string_view name);

// Index of the RoCE v2 GID whose netdev is the port's and whose GID is IPv4-mapped. When
// there are several, the first address in preferred_ipv4 that has one wins, else the lowest
// index. Unset when the port has no netdev or no such GID.
[[nodiscard]] std::optional<int> select_roce_v2_ipv4_gid(const RdmaPort& port,
                                                         const std::vector<std::string>& preferred_ipv4);

// Sets port.roce_v2_ipv4_gid_index / roce_v2_ipv4_address (clears them when there is none).
void assign_roce_v2_gid(RdmaPort& port, const std::vector<std::string>& netdev_ipv4);

// ---------------------------------------------------------------- other kernel files

// One small file under a tree: the directory under the root (one or more components), the
// file's name in it.
struct KernelFile {
    std::string dir;
    std::string name;
};

// The text of each of `files` under `root` (procfs' ARP sysctls, three a link), read as the
// device files are: through opts.files when set, so that a file read before costs one pread
// (on a tree outside sysfs and procfs, checked as SysfsFileCache says). Files of one directory
// should come in a row. Unset: absent, unreadable, not a regular file, or over a page. Errors
// are not reported (the caller judges a missing value); opts.skip and opts.progress apply.
[[nodiscard]] std::vector<std::optional<std::string>> read_kernel_files(const std::filesystem::path& root,
                                                                        const std::vector<KernelFile>& files,
                                                                        const SysfsReadOptions& opts);

// ---------------------------------------------------------------- host facts

// hostname from <procfs_root>/sys/kernel/hostname; NVIDIA GPU from the PCI devices in
// <sysfs_root>/bus/pci/devices; nvidia_peermem from <sysfs_root>/module. ucx_version is left
// empty. Best effort: what cannot be read stays at its default.
// opts.skip and opts.progress apply as for read_rdma_devices.
// gpu_known: whether the last scan of the PCI devices found an NVIDIA GPU; given, they are not
// scanned again (a vendor file for each PCI function: read with the GID tables only, after
// link events and every few minutes, as GPUs are not hot-plugged in practice).
[[nodiscard]] HostInfo read_host_info(const std::filesystem::path& sysfs_root, const std::filesystem::path& procfs_root,
                                      const SysfsReadOptions& opts = {}, std::optional<bool> gpu_known = std::nullopt);

}  // namespace rocewatch
