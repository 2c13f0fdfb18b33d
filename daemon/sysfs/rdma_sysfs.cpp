// Reads RDMA devices, ports, GID tables and counters (and a few host facts) from a sysfs root.
#include "daemon/sysfs/rdma_sysfs.hpp"
#include "util/clock.hpp"
#include "util/log_safe.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <charconv>
#include <chrono>
#include <cmath>
#include <system_error>
#include <utility>

namespace rocewatch {

namespace fs = std::filesystem;

namespace {

// Sysfs attributes are one page at most; anything longer is not a sysfs attribute.
constexpr std::size_t kMaxFileBytes = 64 * 1024;

std::string_view trim(std::string_view s) {
    const auto* ws = " \t\r\n";
    const auto b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

// Error messages quote what they found, but never a whole page of it, and never a byte that
// would forge a log line (a file holding "7\n[2026-...] [rocewatchd] ..." wrote a second entry).
std::string excerpt(std::string_view s) { return "'" + log_safe(s, 40) + "'"; }

bool parse_in6(std::string_view text, in6_addr& out) {
    // On the stack: a GID read parses 255 entries a port twice (65,000 at 128 NICs).
    const std::string_view t = trim(text);
    char s[INET6_ADDRSTRLEN + 1];
    if (t.empty() || t.size() >= sizeof s) return false;
    t.copy(s, t.size());
    s[t.size()] = '\0';
    return ::inet_pton(AF_INET6, s, &out) == 1;
}

enum class ReadStatus { ok, missing, failed };

// What one read gave. text points into the reader's buffer: it lives until the next read.
struct FileText {
    ReadStatus status = ReadStatus::failed;
    std::string_view text;
    std::string why;  // when failed
};

std::string errno_text(int err) { return std::generic_category().message(err); }

const char* file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

// What a directory entry's type says about reading it, before anything is opened: a FIFO
// or a device node in a listing is skipped unopened. Empty when the file has to be opened.
std::optional<std::string> unreadable_kind(unsigned char d_type) {
    switch (d_type) {
        case DT_DIR: return errno_text(EISDIR);
        case DT_FIFO: return std::string("skipped: ") + file_kind(S_IFIFO);
        case DT_CHR: return std::string("skipped: ") + file_kind(S_IFCHR);
        case DT_BLK: return std::string("skipped: ") + file_kind(S_IFBLK);
        case DT_SOCK: return std::string("skipped: ") + file_kind(S_IFSOCK);
        default: return std::nullopt;
    }
}

// "a" + "b" as fs::path's operator/ joins them, without building an fs::path.
std::string join(std::string_view dir, std::string_view name) {
    std::string s;
    s.reserve(dir.size() + 1 + name.size());
    s.append(dir);
    if (!s.empty() && s.back() != '/') s += '/';
    s.append(name);
    return s;
}

struct FdCloser {
    int fd;
    ~FdCloser() {
        if (fd >= 0) ::close(fd);
    }
};

// A directory held open, so that what lies under it is opened relative to it (openat) and
// the kernel resolves one path component instead of the whole path from the root: path
// lookup was most of what collection cost. Below the root it is opened only when first
// needed (Reader::fd): with its files kept open and its listing known, not at all. The
// path is kept for messages and the skip list. A parent outlives its children.
class Dir {
public:
    static constexpr int kUnopened = -2;
    explicit Dir(const std::string& root) : fd_(kUnopened), path_(root), name_(root) {}
    Dir(const Dir& parent, std::string name)
        : fd_(kUnopened), path_(join(parent.path(), name)), parent_(&parent), name_(std::move(name)) {}
    Dir(const Dir&) = delete;
    Dir& operator=(const Dir&) = delete;
    ~Dir() {
        if (fd_ >= 0) ::close(fd_);
    }
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    friend class Reader;
    mutable int fd_;  // kUnopened until tried; -1 when absent or unreadable
    // Tried, and not there (ENOENT, ENOTDIR) in a parent that opened: an error or an absent
    // parent leaves it false.
    mutable bool missing_ = false;
    std::string path_;
    const Dir* parent_ = nullptr;
    std::string name_;  // relative to parent_, may be several components
};

using Entry = SysfsDirEntry;

// Walks one sysfs tree, turning every unreadable or garbled value into a counted, recorded
// error instead of an exception, so one bad file never costs the rest of the device.
class Reader {
public:
    // roots: the trees this reader reads under. refresh: start the file cache afresh (see
    // SysfsFileCache).
    Reader(SysfsReadResult& result, const SysfsReadOptions& opts, std::initializer_list<std::string> roots,
           bool refresh = false)
        : result_(result), opts_(opts), buf_(kMaxFileBytes + 1), dents_(32 * 1024) {
        if (!opts.files) return;
        cache_lock_ = std::unique_lock(opts.files->mutex(), std::try_to_lock);
        if (!cache_lock_.owns_lock()) return;
        cache_ = opts.files.get();
        if (refresh) cache_->clear();
        for (const auto& r : roots) verify_kept_ |= !cache_->kernel_rendered(r);
    }

    void error(std::string_view path, const std::string& reason) {
        ++result_.read_errors;
        if (result_.errors.size() < SysfsReadResult::kMaxErrorMessages)
            result_.errors.push_back({std::string(path), reason});
    }

    // An entry that is not a device or port: set aside, not an error (bounded as errors are).
    void ignore(std::string path, const std::string& reason) {
        if (result_.ignored.size() < SysfsReadResult::kMaxErrorMessages)
            result_.ignored.push_back({std::move(path), reason});
    }

    // Entries known as directories while the file cache lasts (SysfsFileCache::known_directory).
    [[nodiscard]] bool known_directory(const std::string& path) const {
        return cache_ && cache_->known_directory(path);
    }
    void keep_directory(std::string path) {
        if (cache_) cache_->keep_directory(std::move(path));
    }

    // GID tables are read now and then, not every cycle, and are long (mlx5: 255 slots a
    // port): holding their files open would only crowd out the counters.
    void keep_files_open(bool on) { keep_open_ = on; }

    // The file the last read was on, for messages about its text.
    [[nodiscard]] const std::string& path() const { return path_; }

    // The directory's fd, opened now if it was not yet. An absent directory is not an
    // error: whatever is read under it is simply missing (-1).
    int fd(const Dir& d) {
        if (d.fd_ != Dir::kUnopened) return d.fd_;
        const int parent = d.parent_ ? fd(*d.parent_) : AT_FDCWD;  // a root: its path as given
        d.fd_ = parent == -1 ? -1 : ::openat(parent, d.name_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d.fd_ < 0 && parent != -1) {
            d.missing_ = errno == ENOENT || errno == ENOTDIR;
            if (!d.missing_) error(d.path(), errno_text(errno));
        }
        return d.fd_;
    }

    // Every open goes through here: a file that blocked an earlier read is not tried again,
    // and the caller can see which file a read is on.
    FileText read(const Dir& dir, std::string_view name, unsigned char d_type = DT_UNKNOWN) {
        path_.assign(dir.path());
        if (!path_.empty() && path_.back() != '/') path_ += '/';
        path_.append(name);
        if (opts_.skip && opts_.skip->contains(path_))
            return FileText{.status = ReadStatus::failed, .why = "skipped: an earlier read of it blocked"};
        if (auto why = unreadable_kind(d_type)) return FileText{.why = std::move(*why)};
        if (opts_.progress) opts_.progress->enter(path_);
        SysfsFileCache::DirFiles* kept = cache_ ? &kept_files(dir) : nullptr;
        if (kept) {
            if (auto f = read_cached(*kept, name); f) return std::move(*f);
        }
        const int dfd = fd(dir);
        if (dfd < 0) return FileText{.status = ReadStatus::missing, .why = errno_text(ENOENT)};
        return read_at(dfd, name, d_type == DT_REG, kept);
    }

    // Trimmed text of a file the driver may or may not provide: nullopt when absent
    // (no error) or unreadable (recorded). Valid until the next read.
    std::optional<std::string_view> optional_text(const Dir& dir, std::string_view name,
                                                  unsigned char d_type = DT_UNKNOWN) {
        FileText f = read(dir, name, d_type);
        if (f.status == ReadStatus::ok) return trim(f.text);
        if (f.status == ReadStatus::failed) error(path_, f.why);
        return std::nullopt;
    }

    std::string text_or_empty(const Dir& dir, const std::string& name) {
        return std::string(optional_text(dir, name).value_or(""));
    }

    // Like optional_text, but the file is expected here, so its absence is recorded too.
    std::string required_text(const Dir& dir, const std::string& name) {
        FileText f = read(dir, name);
        if (f.status == ReadStatus::ok) return std::string(trim(f.text));
        error(path_, f.status == ReadStatus::missing ? "missing" : f.why);
        return {};
    }

    // One more series for the port being read, while its budget lasts.
    bool take_series() {
        if (series_left_ == 0) return false;
        --series_left_;
        return true;
    }
    void start_port() { series_left_ = opts_.max_series_per_port; }
    void counters_took(std::chrono::steady_clock::duration d) {
        result_.counter_seconds += std::chrono::duration<double>(d).count();
    }

    std::optional<uint64_t> counter(const Dir& dir, std::string_view name, unsigned char d_type) {
        auto text = optional_text(dir, name, d_type);
        if (!text) return std::nullopt;
        // The kernel's answer for a PMA counter of a device without a performance management
        // agent (iWARP, some IB drivers): a known "not available", absent, not an error.
        if (is_no_pma(*text)) return std::nullopt;
        auto v = parse_u64_counter(*text);
        if (!v) error(path_, "not a counter: " + excerpt(*text));
        return v;
    }

    // "0x3" (lid, sm_lid, cap_mask) or "0" (sm_sl): a u32 in hex with its 0x, else decimal.
    std::optional<uint32_t> u32_value(const Dir& dir, const std::string& name) {
        auto text = optional_text(dir, name);
        if (!text) return std::nullopt;
        auto v = parse_u32_attr(*text);
        if (!v) error(path_, "expected a number, got " + excerpt(*text));
        return v;
    }

    std::optional<std::pair<int, std::string>> enum_value(const Dir& dir, const std::string& name) {
        auto text = optional_text(dir, name);
        if (!text) return std::nullopt;
        auto v = parse_enum_line(*text);
        if (!v) error(path_, "expected '<number>: <name>', got " + excerpt(*text));
        return v;
    }

    // Entries of a directory, sorted by name; an absent directory is simply empty. A
    // cacheable listing is kept with the files until the cache starts afresh: what a
    // device's directories hold does not change while it exists.
    // remember_missing: a directory that is not there (in a parent that is) is kept as an
    // empty listing too; for the counter directories only (counters_ext on most drivers),
    // never for a device's ports, which may still be being made.
    std::vector<Entry> list(const Dir& dir, bool cacheable = true, bool remember_missing = false) {
        const bool keep = cache_ && keep_open_ && cacheable;
        if (keep) {
            if (const auto* known = kept_listing(dir)) {
                std::vector<Entry> out;
                out.reserve(known->size());
                for (const auto& e : *known) out.push_back({std::string(e.name()), e.type});
                return out;
            }
        }
        std::vector<Entry> out;
        const int dfd = fd(dir);
        if (dfd < 0) {
            // Missing, not unreadable: kept empty as well, or each port's directories are
            // opened every read only to find it missing again.
            if (keep && remember_missing && dir.missing_) cache_->keep_listing(dir.path(), out);
            return out;
        }
        for (;;) {
            const ssize_t n = ::getdents64(dfd, dents_.data(), dents_.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) error(dir.path(), errno_text(errno));
            if (n <= 0) break;
            for (ssize_t off = 0; off < n;) {
                const auto* d = reinterpret_cast<const dirent64*>(dents_.data() + off);
                off += d->d_reclen;
                const std::string_view name(d->d_name);
                if (name != "." && name != "..") out.push_back({std::string(name), d->d_type});
            }
        }
        std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
        if (keep) cache_->keep_listing(dir.path(), out);
        return out;
    }

    // The listing kept from an earlier read, without copying it (the counter directories, read
    // every cycle): null when there is none, and then list() reads it. Valid for this read.
    const SysfsFileCache::KeptListing* kept_listing(const Dir& dir) const {
        return cache_ && keep_open_ ? cache_->listing(dir.path()) : nullptr;
    }

    // Entries whose names are non-negative numbers (ports, GID slots), in numeric order.
    std::vector<std::pair<uint32_t, Entry>> numbered(const Dir& dir) {
        std::vector<std::pair<uint32_t, Entry>> out;
        for (auto& e : list(dir)) {
            uint32_t n = 0;
            const auto* end = e.name.data() + e.name.size();
            auto [p, ec] = std::from_chars(e.name.data(), end, n);
            if (ec == std::errc() && p == end) out.emplace_back(n, std::move(e));
        }
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        return out;
    }

private:
    // The cache's files of this directory: one lookup per directory read in a row. The
    // inner maps stay where they are while the cache lives (node-based map).
    SysfsFileCache::DirFiles& kept_files(const Dir& dir) {
        if (!kept_in_ || kept_dir_ != dir.path()) {
            kept_dir_ = dir.path();
            kept_in_ = &cache_->dir_files(kept_dir_);
            // The first visit records what the directory is (one stat), so that the files kept
            // now are not all dropped and opened again on the next read for want of it (at 128
            // NICs, 7,700 files once). Later, a directory with nothing kept (absent, like
            // configfs' on most nodes) costs no stat.
            if (verify_kept_) {
                const bool first = !kept_in_->visited;
                kept_in_->visited = true;
                check_each_ = (first || !kept_in_->fds.empty()) && !settled(*kept_in_);
            }
        }
        return *kept_in_;
    }

    // Outside sysfs and procfs, on entering a directory: whether its kept files can be read
    // without checking each. A directory that changed (another change time, or another
    // directory at that path) since they were kept has them all dropped: they are opened
    // afresh, current as of now. One whose change time is under a second old may still change
    // within the same tick of the filesystem's clock, unseen: its files are checked one by
    // one until it is a second old, and then dropped once more, so that what is kept is
    // current as of a time that any later change would move.
    bool settled(SysfsFileCache::DirFiles& kept) {
        struct stat st {};
        if (::stat(kept_dir_.c_str(), &st) != 0) {
            cache_->forget_all(kept);
            kept.settled = false;
            kept.ino = 0;
            return false;
        }
        timespec now{};
        ::clock_gettime(CLOCK_REALTIME, &now);
        const bool old_enough = st.st_ctim.tv_sec + 1 < now.tv_sec ||
                                (st.st_ctim.tv_sec + 1 == now.tv_sec && st.st_ctim.tv_nsec < now.tv_nsec);
        const bool same = kept.ino == st.st_ino && kept.dev == st.st_dev && kept.ctime.tv_sec == st.st_ctim.tv_sec &&
                          kept.ctime.tv_nsec == st.st_ctim.tv_nsec;
        if (!same) {
            cache_->forget_all(kept);
            kept.dev = st.st_dev;
            kept.ino = st.st_ino;
            kept.ctime = st.st_ctim;
            kept.settled = old_enough;
        } else if (!kept.settled && old_enough) {
            cache_->forget_all(kept);
            kept.settled = true;
        }
        return kept.settled;
    }

    // The file at path_ through the fd kept from an earlier read: nullopt when there is
    // none, or when it fails now (a device gone, a counter turned EINVAL): then it is
    // dropped and opened afresh, which reports what is wrong.
    std::optional<FileText> read_cached(SysfsFileCache::DirFiles& kept, std::string_view name) {
        const int fd = SysfsFileCache::kept_fd(kept, name);
        if (fd < 0) return std::nullopt;
        if (check_each_) {  // not sysfs: the file may have been replaced (see SysfsFileCache)
            struct stat st {};
            if (::fstat(fd, &st) != 0 || st.st_nlink == 0) {
                cache_->forget(kept, name);
                return std::nullopt;
            }
        }
        ssize_t n = 0;
        do {
            n = ::pread(fd, buf_.data(), buf_.size(), 0);
        } while (n < 0 && errno == EINTR);
        if (n < 0 || static_cast<std::size_t>(n) > kMaxFileBytes) {
            cache_->forget(kept, name);
            return std::nullopt;
        }
        return FileText{.status = ReadStatus::ok, .text = std::string_view(buf_.data(), static_cast<std::size_t>(n))};
    }

    // Plain POSIX read: sysfs attributes can fail on read() itself (EINVAL for empty GID
    // slots, EINVAL/EPERM for some ConnectX-7 counters), and we need that errno. O_NONBLOCK
    // and the S_ISREG check keep a FIFO or a device node from blocking the collector: sysfs
    // attributes are always regular files, so anything else is skipped unread. A listing
    // that already said "regular file" spares the fstat.
    // name: the end of path_, which gives it its terminating NUL.
    FileText read_at(int dirfd, std::string_view name, bool known_regular, SysfsFileCache::DirFiles* kept) {
        FileText r;
        const char* const c_name = path_.c_str() + (path_.size() - name.size());
        const int fd = ::openat(dirfd, c_name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
            const int err = errno;
            // ENOTDIR: a path component is a file; for us that is the same as absent.
            r.status = (err == ENOENT || err == ENOTDIR) ? ReadStatus::missing : ReadStatus::failed;
            r.why = errno_text(err);
            return r;
        }
        FdCloser closer{fd};
        if (!known_regular) {
            struct stat st {};
            if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
                r.why = S_ISDIR(st.st_mode) ? errno_text(EISDIR) : std::string("skipped: ") + file_kind(st.st_mode);
                return r;
            }
        }
        // One read: sysfs hands over a whole attribute (a page at most) in one read, and a
        // regular file gives less than asked only at its end, so no second read for EOF.
        // The buffer is one byte over the limit, so a full buffer means "too large".
        ssize_t n = 0;
        do {
            n = ::read(fd, buf_.data(), buf_.size());
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
            r.why = errno_text(errno);
            return r;
        }
        if (static_cast<std::size_t>(n) > kMaxFileBytes) {
            r.why = "skipped: larger than " + std::to_string(kMaxFileBytes / 1024) + " KiB";
            return r;
        }
        r.text = std::string_view(buf_.data(), static_cast<std::size_t>(n));
        r.status = ReadStatus::ok;
        if (kept && keep_open_ && cache_->keep(*kept, name, fd)) closer.fd = -1;
        return r;
    }

    SysfsReadResult& result_;
    const SysfsReadOptions& opts_;
    std::size_t series_left_ = 0;
    std::string path_;         // of the file being read; reused
    std::vector<char> buf_;    // one read's text; reused
    std::vector<char> dents_;  // one getdents64's entries; reused
    std::unique_lock<std::mutex> cache_lock_;
    SysfsFileCache* cache_ = nullptr;  // set while this reader holds the cache's lock
    // The kept files of the directory read last (a port's counters are read in a row).
    std::string kept_dir_;
    SysfsFileCache::DirFiles* kept_in_ = nullptr;
    bool keep_open_ = true;
    bool verify_kept_ = false;  // a kept file may have been replaced (not sysfs or procfs)
    bool check_each_ = false;   // and kept_in_'s directory changed too lately to trust them
};

std::string_view entry_name(const SysfsDirEntry& e) { return e.name; }
std::string_view entry_name(const SysfsFileCache::KeptEntry& e) { return e.name(); }

void read_counter_dir(Reader& rd, const Dir& port, const std::string& name, FlatMap<uint64_t>& out, uint64_t& dropped) {
    const Dir dir(port, name);
    const auto read_each = [&](const auto& entries) {
        for (const auto& e : entries) {
            const std::string_view n = entry_name(e);
            // mlx5 keeps its stats cache lifetime (ms, writable) among the hw_counters.
            if (n == "lifespan") continue;
            // Past the process's table of counter names, a name not seen before is dropped too.
            if (!CounterNames::has_room(n) || !rd.take_series()) {
                ++dropped;  // not even read: the cap bounds the work as well as the series
                continue;
            }
            // The listing is sorted, so each name goes at the end: no search.
            if (auto v = rd.counter(dir, n, e.type)) out.insert_or_assign(n, *v);
        }
    };
    // The kept listing is walked where it lies; the first read lists the directory (and keeps it).
    if (const auto* kept = rd.kept_listing(dir))
        read_each(*kept);
    else
        read_each(rd.list(dir, /*cacheable=*/true, /*remember_missing=*/true));
}

// Kernels before 4.5 keep the 64-bit PMA counters apart, in counters_ext/, while counters/
// holds the 32-bit ones, which saturate (port_xmit_data at 2^32 words = 16 GiB). Where both
// exist the 64-bit value is the one kept, under the counters/ name.
constexpr std::pair<const char*, const char*> kCountersExt[] = {
    {"port_xmit_data_64", "port_xmit_data"},
    {"port_rcv_data_64", "port_rcv_data"},
    {"port_xmit_packets_64", "port_xmit_packets"},
    {"port_rcv_packets_64", "port_rcv_packets"},
    {"port_unicast_xmit_packets", "unicast_xmit_packets"},
    {"port_unicast_rcv_packets", "unicast_rcv_packets"},
    {"port_multicast_xmit_packets", "multicast_xmit_packets"},
    {"port_multicast_rcv_packets", "multicast_rcv_packets"},
};

void merge_counters_ext(Reader& rd, const Dir& port, RdmaPort& p) {
    FlatMap<uint64_t> ext;
    read_counter_dir(rd, port, "counters_ext", ext, p.counters_dropped);
    auto& counters = p.counters.edit();
    for (const auto& entry : ext) {
        // Not a structured binding: clang 14 (Debian 12) cannot capture one in a lambda.
        const auto& [name, value] = entry;
        const auto* it = std::find_if(std::begin(kCountersExt), std::end(kCountersExt),
                                      [&entry](const auto& m) { return entry.first == m.first; });
        // A counters_ext file this table does not know keeps its own name.
        counters[it == std::end(kCountersExt) ? name.view() : it->second] = value;
    }
}

// The GID tables' attribute files: gid_attrs/types and gid_attrs/ndevs, absent on kernels
// before gid_attrs existed (types unknown, not an error).
struct GidAttrs {
    GidAttrs(Reader& rd, const Dir& port_dir, const RdmaPort& port)
        : types(port_dir, "gid_attrs/types"),
          ndevs(port_dir, "gid_attrs/ndevs"),
          have_types(rd.fd(types) >= 0),
          have_ndevs(rd.fd(ndevs) >= 0),
          expect_ndev(port.link_layer == "Ethernet") {}
    const Dir types;
    const Dir ndevs;
    const bool have_types;
    const bool have_ndevs;
    // On InfiniBand ports a GID has no netdev and ndevs/<idx> fails with EINVAL by design.
    const bool expect_ndev;
};

// The netdev of GID `name` (its index), "" where it has none or the file is garbled (counted).
std::string read_gid_netdev(Reader& rd, const GidAttrs& attrs, const std::string& name) {
    if (!attrs.have_ndevs) return {};
    std::string netdev;
    if (attrs.expect_ndev) {
        netdev = rd.required_text(attrs.ndevs, name);
    } else {
        FileText f = rd.read(attrs.ndevs, name);
        if (f.status == ReadStatus::ok) netdev = std::string(trim(f.text));
    }
    if (!netdev.empty() && !valid_netdev_name(netdev)) {
        rd.error(rd.path(), "not a netdev name: " + excerpt(netdev));
        netdev.clear();
    }
    return netdev;
}

// A file per slot: gids/<idx>, and for each slot in use its type and netdev.
void read_gids(Reader& rd, const Dir& port_dir, RdmaPort& port) {
    const Dir gids(port_dir, "gids");
    const GidAttrs attrs(rd, port_dir, port);
    port.gids_source = "sysfs";
    rd.keep_files_open(false);
    for (const auto& [idx, entry] : rd.numbered(gids)) {
        auto text = rd.optional_text(gids, entry.name, entry.type);
        if (!text) continue;
        if (!is_valid_gid(*text)) {
            rd.error(rd.path(), "not a GID: " + excerpt(*text));
            continue;
        }
        // Empty slots: their attrs fail with EINVAL on real kernels, so never touch them.
        if (is_zero_gid(*text)) continue;
        if (!rd.take_series()) {
            ++port.gids_dropped;
            continue;
        }

        GidEntry e;
        e.index = static_cast<int>(idx);
        e.gid = std::string(*text);  // before the next read reuses the buffer
        e.ipv4 = ipv4_from_gid(e.gid);
        if (attrs.have_types) e.type = rd.required_text(attrs.types, entry.name);
        e.netdev = read_gid_netdev(rd, attrs, entry.name);
        port.gids.push_back(std::move(e));
    }
    rd.keep_files_open(true);
}

// The port's entries of a table a GidTableSource read, in index order, held to the same
// checks and series cap as sysfs' (a source is a driver's answer too), each with its netdev
// from sysfs: one file an entry in use, where sysfs alone reads one a slot.
void take_sourced_gids(Reader& rd, const Dir& port_dir, RdmaPort& port, const GidTableSource::Table& table) {
    const GidAttrs attrs(rd, port_dir, port);
    port.gids_source = "verbs";
    std::vector<const GidEntry*> mine;
    for (const auto& [number, e] : table)
        if (number == port.port) mine.push_back(&e);
    std::sort(mine.begin(), mine.end(), [](const GidEntry* a, const GidEntry* b) { return a->index < b->index; });
    rd.keep_files_open(false);
    for (const GidEntry* src : mine) {
        if (src->index < 0 || !is_valid_gid(src->gid)) {
            rd.error(join(port_dir.path(), "gids"), "libibverbs gave no GID at index " + std::to_string(src->index));
            continue;
        }
        if (is_zero_gid(src->gid)) continue;
        if (!rd.take_series()) {
            ++port.gids_dropped;
            continue;
        }
        GidEntry e = *src;
        e.ipv4 = ipv4_from_gid(e.gid);
        e.netdev = read_gid_netdev(rd, attrs, std::to_string(e.index));
        port.gids.push_back(std::move(e));
    }
    rd.keep_files_open(true);
}

RdmaPort read_port(Reader& rd, const Dir& dir, uint32_t number, const RdmaDevice& dev, const SysfsReadOptions& opts,
                   const GidTableSource::Table* sourced) {
    RdmaPort p;
    p.port = number;
    if (reads_port_state(opts)) {
        if (auto v = rd.enum_value(dir, "state")) {
            p.state = v->first;
            p.state_name = v->second;
        }
        if (auto v = rd.enum_value(dir, "phys_state")) {
            p.phys_state = v->first;
            p.phys_state_name = v->second;
        }
        if (auto text = rd.optional_text(dir, "rate")) {
            if (auto g = parse_rate_gbps(*text)) {
                p.rate_gbps = g;
                p.rate_text = std::string(*text);
            } else {
                rd.error(rd.path(), "expected '<n> Gb/sec (...)', got " + excerpt(*text));
            }
        }
    }
    if (reads_identity(opts)) {
        p.link_layer = rd.text_or_empty(dir, "link_layer");
        p.cap_mask = rd.u32_value(dir, "cap_mask");
    }
    // A subnet manager may move lid, sm_lid and sm_sl at any time, with no event to tell.
    if (reads_subnet_manager(opts)) {
        p.lid = rd.u32_value(dir, "lid");
        p.sm_lid = rd.u32_value(dir, "sm_lid");
        p.sm_sl = rd.u32_value(dir, "sm_sl");
    }

    rd.start_port();
    if (opts.counters) {
        const auto started = thread_cpu_time();
        read_counter_dir(rd, dir, "counters", p.counters.edit(), p.counters_dropped);
        read_counter_dir(rd, dir, "hw_counters", p.hw_counters.edit(), p.counters_dropped);
        merge_counters_ext(rd, dir, p);
        // The PMA data counters count 4-byte words (x4 wraps only after 2^64 bytes: years at 400G).
        if (auto it = p.counters.find("port_xmit_data"); it != p.counters.end()) p.xmit_bytes = it->second * 4;
        if (auto it = p.counters.find("port_rcv_data"); it != p.counters.end()) p.rcv_bytes = it->second * 4;
        rd.counters_took(thread_cpu_time() - started);
    }

    if (opts.gids && sourced)
        take_sourced_gids(rd, dir, p, *sourced);
    else if (opts.gids)
        read_gids(rd, dir, p);

    // The port's netdev is the one the kernel bound the device to (device/net, or rxe's
    // parent), as `rdma link` shows it. GID 0 is not: when that netdev is enslaved, the
    // kernel moves the GIDs to the bond master, and the bond rule must see exactly that
    // difference. Only a LAG device (mlx5_bond_N), whose own netdev is the bond, or a
    // device with several netdevs, is bound where its GID 0 points.
    auto gid0 = std::find_if(p.gids.begin(), p.gids.end(), [](const GidEntry& g) { return g.index == 0; });
    if (dev.netdevs.size() == 1 && !is_lag_device_name(dev.name))
        p.netdev = dev.netdevs.front();
    else if (gid0 != p.gids.end() && !gid0->netdev.empty())
        p.netdev = gid0->netdev;

    assign_roce_v2_gid(p, {});
    return p;
}

// The driver's name: the last component of where device/driver points. Unbound: empty, no error.
std::string read_driver(Reader& rd, const Dir& dir) {
    char target[PATH_MAX];
    const ssize_t n = ::readlinkat(rd.fd(dir), "device/driver", target, sizeof target - 1);
    if (n < 0) {
        if (errno != ENOENT) rd.error(join(dir.path(), "device/driver"), errno_text(errno));
        return {};
    }
    const std::string_view t(target, static_cast<std::size_t>(n));
    const auto slash = t.rfind('/');
    return std::string(slash == std::string_view::npos ? t : t.substr(slash + 1));
}

// Why `name` in `dir` is not a directory to read as a device or port, or nullopt when it is
// one: a symlink whose target is gone (the device was unplugged between the listing and
// now, or the kernel left the link behind) or a plain file.
// A listing's d_type of DT_DIR settles it without a stat (ports are real directories).
// A symlink found a directory before is taken as one while the file cache lasts.
std::optional<std::string> not_a_directory(Reader& rd, const Dir& dir, const std::string& name, unsigned char type) {
    if (type == DT_DIR) return std::nullopt;
    std::string path = join(dir.path(), name);
    if (rd.known_directory(path)) return std::nullopt;
    const int dfd = rd.fd(dir);
    if (dfd < 0) return std::nullopt;  // the listing already failed; nothing to judge
    struct stat st {};
    if (::fstatat(dfd, name.c_str(), &st, 0) == 0) {
        if (!S_ISDIR(st.st_mode)) return "not a directory (a stray file)";
        rd.keep_directory(std::move(path));
        return std::nullopt;
    }
    const int err = errno;
    struct stat lst {};
    if (::fstatat(dfd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode))
        return "a symlink to nothing (the device was removed)";
    return errno_text(err);
}

// ecn/roce_{rp,np}/enable/<0..7> ("0" or "1" each) as a bitmap of priorities; unset where the
// directory is absent, or where a file is missing or garbled (that file is an error).
std::optional<uint8_t> read_ecn_point(Reader& rd, const Dir& enable) {
    if (rd.fd(enable) < 0) return std::nullopt;
    uint8_t bits = 0;
    for (int prio = 0; prio < 8; ++prio) {
        const std::string name = std::to_string(prio);
        const std::string text = rd.required_text(enable, name);
        if (text == "1")
            bits = static_cast<uint8_t>(bits | (1u << prio));
        else if (text != "0") {
            if (!text.empty()) rd.error(join(enable.path(), name), "expected 0 or 1, got " + excerpt(text));
            return std::nullopt;
        }
    }
    return bits;
}

// What a device is (see reads_identity): all but its name and ports.
void read_identity(Reader& rd, const Dir& dir, RdmaDevice& d) {
    const std::string& name = d.name;
    d.node_guid = rd.text_or_empty(dir, "node_guid");
    d.sys_image_guid = rd.text_or_empty(dir, "sys_image_guid");
    d.fw_ver = rd.text_or_empty(dir, "fw_ver");
    d.board_id = rd.text_or_empty(dir, "board_id");
    d.hca_type = rd.text_or_empty(dir, "hca_type");
    d.node_type = rd.text_or_empty(dir, "node_type");

    struct stat st {};
    const bool has_device = rd.fd(dir) >= 0 && ::fstatat(rd.fd(dir), "device", &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (has_device) {
        d.driver = read_driver(rd, dir);
        for (auto& e : rd.list(Dir(dir, "device/net"))) d.netdevs.push_back(std::move(e.name));
    }
    // Soft-RoCE has no parent bus device; the kernel names its netdev in `parent` instead.
    const FileText parent = rd.read(dir, "parent");
    const bool has_parent = parent.status != ReadStatus::missing;
    if (parent.status == ReadStatus::ok && !trim(parent.text).empty())
        d.netdevs = {std::string(trim(parent.text))};
    else if (parent.status == ReadStatus::failed)
        rd.error(rd.path(), parent.why);
    if (!has_device && (has_parent || name.starts_with("rxe"))) d.driver = "rxe";
}

RdmaDevice read_device(Reader& rd, const Dir& class_dir, const std::string& name, const SysfsReadOptions& opts) {
    RdmaDevice d;
    d.name = name;
    const Dir dir(class_dir, name);
    if (reads_identity(opts)) read_identity(rd, dir, d);
    const Dir ports(dir, "ports");
    std::optional<GidTableSource::Table> sourced;
    if (opts.gids && opts.gid_tables) sourced = opts.gid_tables->read(name);
    for (const auto& [number, entry] : rd.numbered(ports)) {
        if (auto why = not_a_directory(rd, ports, entry.name, entry.type)) {
            rd.ignore(join(ports.path(), entry.name), *why);
            continue;
        }
        d.ports.push_back(read_port(rd, Dir(ports, entry.name), number, d, opts, sourced ? &*sourced : nullptr));
    }
    return d;
}

}  // namespace

// ---------------------------------------------------------------- pure parsers

std::optional<uint32_t> parse_u32_attr(std::string_view text) {
    text = trim(text);
    int base = 10;
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
        base = 16;
    }
    if (text.empty()) return std::nullopt;
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
    if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
    return v;
}

bool is_no_pma(std::string_view text) { return trim(text) == "N/A (no PMA)"; }

std::optional<std::pair<int, std::string>> parse_enum_line(std::string_view text) {
    text = trim(text);
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto num = trim(text.substr(0, colon));
    const auto name = trim(text.substr(colon + 1));
    if (num.empty() || name.empty()) return std::nullopt;
    int value = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), value);
    if (ec != std::errc() || p != num.data() + num.size()) return std::nullopt;
    return std::pair{value, std::string(name)};
}

constexpr double kMaxRateGbps = 100'000;

std::optional<double> parse_rate_gbps(std::string_view text) {
    text = trim(text);
    double v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    // The kernel's rates run to a few thousand Gb/s (12X lanes at 200G); far beyond is garbled.
    if (ec != std::errc() || !std::isfinite(v) || v < 0 || v > kMaxRateGbps) return std::nullopt;
    const std::string_view rest(p, static_cast<std::size_t>(text.data() + text.size() - p));
    if (!rest.starts_with(" Gb/sec")) return std::nullopt;
    return v;
}

bool is_valid_gid(std::string_view gid) {
    in6_addr a{};
    return parse_in6(gid, a);
}

bool valid_netdev_name(std::string_view name) {
    if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
    return std::none_of(name.begin(), name.end(), [](char c) {
        return c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) || c == '\0';
    });
}

bool is_zero_gid(std::string_view gid) {
    in6_addr a{};
    if (!parse_in6(gid, a)) return false;
    return std::all_of(std::begin(a.s6_addr), std::end(a.s6_addr), [](uint8_t b) { return b == 0; });
}

std::string ipv4_from_gid(std::string_view gid) {
    in6_addr a{};
    if (!parse_in6(gid, a) || !IN6_IS_ADDR_V4MAPPED(&a)) return {};
    char buf[INET_ADDRSTRLEN] = {};
    if (!::inet_ntop(AF_INET, &a.s6_addr[12], buf, sizeof buf)) return {};
    return buf;
}

std::optional<uint64_t> parse_u64_counter(std::string_view text) {
    text = trim(text);
    if (text.empty()) return std::nullopt;
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
    return v;
}

// ---------------------------------------------------------------- reading a sysfs tree

SysfsFileCache::SysfsFileCache() {
    rlimit lim{};
    const rlim_t soft = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
    max_fds_ = soft == RLIM_INFINITY ? 1U << 16 : static_cast<std::size_t>(soft / 2);
}

namespace {

// Where name is or would go among a directory's kept files.
template <class Fds>
auto kept_at(Fds& fds, std::string_view name) {
    return std::lower_bound(fds.begin(), fds.end(), name, [](const SysfsFileCache::KeptFd& f, std::string_view key) {
        return CounterNames::name(f.name) < key;
    });
}

// Whether at, from kept_at(fds, name), is name's kept file.
template <class Fds, class It>
bool kept_is(const Fds& fds, It at, std::string_view name) {
    return at != fds.end() && CounterNames::name(at->name) == name;
}

}  // namespace

// A name past the table of counter names is not kept: the file is read afresh each time.
bool SysfsFileCache::keep(DirFiles& in, std::string_view name, int fd) {
    if (kept_ >= max_fds_ || !CounterNames::has_room(name)) return false;
    const auto at = kept_at(in.fds, name);
    if (kept_is(in.fds, at, name)) return false;
    in.fds.insert(at, {CounterNames::id(name), fd});
    ++kept_;
    return true;
}

int SysfsFileCache::kept_fd(const DirFiles& in, std::string_view name) {
    const auto at = kept_at(in.fds, name);
    return kept_is(in.fds, at, name) ? at->fd : -1;
}

void SysfsFileCache::forget(DirFiles& in, std::string_view name) {
    const auto at = kept_at(in.fds, name);
    if (kept_is(in.fds, at, name)) {
        ::close(at->fd);
        in.fds.erase(at);
        --kept_;
    }
}

void SysfsFileCache::forget_all(DirFiles& in) {
    kept_ -= in.fds.size();
    close_all(in.fds);
}

void SysfsFileCache::close_all(KeptFds& fds) {
    for (const auto& f : fds) ::close(f.fd);
    fds = {};  // and its vector's block
}

bool SysfsFileCache::kernel_rendered(const std::string& root) {
    if (auto it = kernel_rendered_.find(root); it != kernel_rendered_.end()) return it->second;
    struct statfs fs {};
    const bool yes = ::statfs(root.c_str(), &fs) == 0 &&
                     (fs.f_type == static_cast<decltype(fs.f_type)>(SYSFS_MAGIC) ||
                      fs.f_type == static_cast<decltype(fs.f_type)>(PROC_SUPER_MAGIC));
    if (kernel_rendered_.size() < 16) kernel_rendered_.emplace(root, yes);
    return yes;
}

void SysfsFileCache::clear() {
    for (auto& [dir, files] : fds_) close_all(files.fds);
    fds_.clear();
    kept_ = 0;
    listings_.clear();
    directories_.clear();
}

auto SysfsFileCache::listing(const std::string& dir) const -> const KeptListing* {
    const auto it = listings_.find(dir);
    return it == listings_.end() ? nullptr : &it->second;
}

void SysfsFileCache::keep_listing(const std::string& dir, const std::vector<SysfsDirEntry>& entries) {
    if (!std::all_of(entries.begin(), entries.end(), [](const auto& e) { return CounterNames::has_room(e.name); }))
        return;
    KeptListing kept;
    kept.reserve(entries.size());
    for (const auto& e : entries) kept.push_back({CounterNames::id(e.name), e.type});
    listings_.insert_or_assign(dir, std::move(kept));
}

bool is_lag_device_name(std::string_view name) { return name.find("_bond") != std::string_view::npos; }

SysfsReadResult read_rdma_devices(const fs::path& sysfs_root, const SysfsReadOptions& opts) {
    SysfsReadResult result;
    result.counters_read = opts.counters;
    result.identity_read = reads_identity(opts);
    result.subnet_manager_read = reads_subnet_manager(opts);
    result.port_state_read = reads_port_state(opts);
    Reader rd(result, opts, {sysfs_root.string()}, /*refresh=*/opts.gids);
    const Dir root(sysfs_root.string());
    const Dir class_dir(root, "class/infiniband");
    // list() sorts the names; devices come out in the same order. Devices come and go:
    // their list is read every time.
    for (const auto& e : rd.list(class_dir, /*cacheable=*/false)) {
        if (auto why = not_a_directory(rd, class_dir, e.name, e.type)) {
            rd.ignore(join(class_dir.path(), e.name), *why);
            continue;
        }
        result.devices.push_back(read_device(rd, class_dir, e.name, opts));
    }
    // Configuration, written by hand with no event to tell (see reads_identity): read every
    // minute and after netlink events, carried over in between.
    if (!result.identity_read) return result;
    // rdma_cm's per-port defaults (default_roce_tos decides which DSCP, and so which priority,
    // RoCE traffic of rdma_cm applications gets), where configfs has them.
    const Dir cm(root, "kernel/config/rdma_cm");
    for (auto& d : result.devices) {
        const Dir dev(cm, d.name);
        const Dir ports(dev, "ports");
        for (auto& p : d.ports) {
            const Dir pd(ports, std::to_string(p.port));
            if (auto t = rd.optional_text(pd, "default_roce_tos")) {
                if (auto v = parse_u32_attr(*t); v && *v <= 255)
                    p.rdma_cm_default_tos = static_cast<int>(*v);
                else
                    rd.error(join(pd.path(), "default_roce_tos"), "not a ToS (0..255): \"" + std::string(*t) + "\"");
            }
            p.rdma_cm_default_mode = rd.text_or_empty(pd, "default_roce_mode");
        }
    }
    // ECN per priority at each RoCE port's netdev, where the driver has the files (16 a netdev).
    const Dir net(root, "class/net");
    for (auto& d : result.devices)
        for (auto& p : d.ports) {
            if (p.netdev.empty() || p.link_layer != "Ethernet") continue;
            const Dir netdev(net, p.netdev);
            const Dir rp_enable(netdev, "ecn/roce_rp/enable"), np_enable(netdev, "ecn/roce_np/enable");
            p.ecn_rp_enabled = read_ecn_point(rd, rp_enable);
            p.ecn_np_enabled = read_ecn_point(rd, np_enable);
        }
    return result;
}

std::optional<int> select_roce_v2_ipv4_gid(const RdmaPort& port, const std::vector<std::string>& preferred_ipv4) {
    if (port.netdev.empty()) return std::nullopt;
    std::vector<const GidEntry*> candidates;
    for (const auto& g : port.gids)
        if (g.type == "RoCE v2" && g.netdev == port.netdev && !g.ipv4.empty()) candidates.push_back(&g);
    if (candidates.empty()) return std::nullopt;
    std::sort(candidates.begin(), candidates.end(),
              [](const GidEntry* a, const GidEntry* b) { return a->index < b->index; });
    for (const auto& addr : preferred_ipv4)
        for (const auto* g : candidates)
            if (g->ipv4 == addr) return g->index;
    return candidates.front()->index;
}

void assign_roce_v2_gid(RdmaPort& port, const std::vector<std::string>& netdev_ipv4) {
    port.roce_v2_ipv4_gid_index.reset();
    port.roce_v2_ipv4_address.clear();
    const auto idx = select_roce_v2_ipv4_gid(port, netdev_ipv4);
    if (!idx) return;
    for (const auto& g : port.gids) {
        if (g.index == *idx) {
            port.roce_v2_ipv4_gid_index = idx;
            port.roce_v2_ipv4_address = g.ipv4;
            return;
        }
    }
}

// ---------------------------------------------------------------- other kernel files

std::vector<std::optional<std::string>> read_kernel_files(const fs::path& root, const std::vector<KernelFile>& files,
                                                          const SysfsReadOptions& opts) {
    SysfsReadResult ignored;
    Reader rd(ignored, opts, {root.string()});
    const Dir top(root.string());
    std::unique_ptr<Dir> dir;         // the directory of the files in a row
    const std::string* in = nullptr;  // and its name under the root
    std::vector<std::optional<std::string>> out;
    out.reserve(files.size());
    for (const auto& f : files) {
        if (!dir || *in != f.dir) {
            dir = std::make_unique<Dir>(top, f.dir);
            in = &f.dir;
        }
        FileText t = rd.read(*dir, f.name);
        out.push_back(t.status == ReadStatus::ok ? std::optional<std::string>(t.text) : std::nullopt);
    }
    return out;
}

// ---------------------------------------------------------------- host facts

HostInfo read_host_info(const fs::path& sysfs_root, const fs::path& procfs_root, const SysfsReadOptions& opts,
                        std::optional<bool> gpu_known) {
    HostInfo h;
    // Host facts are best effort (see the header): errors are not reported.
    SysfsReadResult ignored;
    Reader rd(ignored, opts, {sysfs_root.string(), procfs_root.string()});
    const Dir proc(procfs_root.string());
    if (FileText f = rd.read(proc, "sys/kernel/hostname"); f.status == ReadStatus::ok)
        h.hostname = std::string(trim(f.text));

    // Display controllers are PCI class 0x03xx (0x0300 VGA, 0x0302 3D: data-centre GPUs).
    // Every PCI function is looked at: the class is read only for NVIDIA's.
    const Dir root(sysfs_root.string());
    const Dir pci(root, "bus/pci/devices");
    if (gpu_known) {
        h.nvidia_gpu_present = *gpu_known;
    } else {
        for (const auto& e : rd.list(pci)) {
            const FileText vendor = rd.read(pci, e.name + "/vendor");
            if (vendor.status != ReadStatus::ok) continue;
            std::string v(trim(vendor.text));
            std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
            if (v != "0x10de") continue;
            const FileText cls = rd.read(pci, e.name + "/class");
            if (cls.status == ReadStatus::ok && trim(cls.text).starts_with("0x03")) {
                h.nvidia_gpu_present = true;
                break;
            }
        }
    }
    struct stat st {};
    h.nvidia_peermem_loaded = rd.fd(root) >= 0 && ::fstatat(rd.fd(root), "module/nvidia_peermem", &st, 0) == 0 &&
                              S_ISDIR(st.st_mode);
    return h;
}

}  // namespace rocewatch
