// Reads RDMA devices, ports, GID tables and counters (and a few host facts) from a sysfs root.
#include "daemon/sysfs/rdma_sysfs.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <system_error>

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

// Error messages quote what they found, but never a whole page of it.
std::string excerpt(std::string_view s) {
    constexpr std::size_t kMax = 40;
    std::string out = "'";
    out += s.substr(0, kMax);
    if (s.size() > kMax) out += "...";
    out += "'";
    return out;
}

bool parse_in6(std::string_view text, in6_addr& out) {
    const std::string s(trim(text));
    return !s.empty() && ::inet_pton(AF_INET6, s.c_str(), &out) == 1;
}

enum class ReadStatus { ok, missing, failed };

struct FileText {
    ReadStatus status = ReadStatus::failed;
    std::string text;
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

// Plain POSIX read: sysfs attributes can fail on read() itself (EINVAL for empty GID slots,
// EINVAL/EPERM for some ConnectX-7 counters), and we need that errno, not a stream state.
// O_NONBLOCK and the S_ISREG check keep a FIFO or a device node from blocking the collector:
// sysfs attributes are always regular files, so anything else is skipped unread.
FileText read_file(const fs::path& path) {
    FileText r;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        const int err = errno;
        // ENOTDIR: a path component is a file; for us that is the same as absent.
        r.status = (err == ENOENT || err == ENOTDIR) ? ReadStatus::missing : ReadStatus::failed;
        r.why = errno_text(err);
        return r;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        r.why = S_ISDIR(st.st_mode) ? errno_text(EISDIR) : std::string("skipped: ") + file_kind(st.st_mode);
        ::close(fd);
        return r;
    }
    // sysfs reports 4096 for every attribute and procfs 0; only a stray real file is larger.
    if (static_cast<std::size_t>(st.st_size) > kMaxFileBytes) {
        r.why = "skipped: larger than " + std::to_string(kMaxFileBytes / 1024) + " KiB";
        ::close(fd);
        return r;
    }
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            r.why = errno_text(errno);
            ::close(fd);
            return r;
        }
        if (n == 0) break;
        r.text.append(buf, static_cast<std::size_t>(n));
        if (r.text.size() > kMaxFileBytes) {
            r.why = "skipped: larger than " + std::to_string(kMaxFileBytes / 1024) + " KiB";
            r.text.clear();
            ::close(fd);
            return r;
        }
    }
    ::close(fd);
    r.status = ReadStatus::ok;
    return r;
}

// Walks one sysfs tree, turning every unreadable or garbled value into a counted, recorded
// error instead of an exception, so one bad file never costs the rest of the device.
class Reader {
public:
    Reader(SysfsReadResult& result, const SysfsReadOptions& opts) : result_(result), opts_(opts) {}

    void error(const fs::path& path, const std::string& reason) {
        ++result_.read_errors;
        if (result_.errors.size() < SysfsReadResult::kMaxErrorMessages)
            result_.errors.push_back({path.string(), reason});
    }

    // Every open goes through here: a file that blocked an earlier read is not tried again,
    // and the caller can see which file a read is on.
    FileText read(const fs::path& path) {
        if (opts_.skip && opts_.skip->contains(path.string()))
            return FileText{.status = ReadStatus::failed, .why = "skipped: an earlier read of it blocked"};
        if (opts_.progress) opts_.progress->enter(path);
        return read_file(path);
    }

    // Trimmed text of a file the driver may or may not provide: nullopt when absent
    // (no error) or unreadable (recorded).
    std::optional<std::string> optional_text(const fs::path& path) {
        FileText f = read(path);
        if (f.status == ReadStatus::ok) return std::string(trim(f.text));
        if (f.status == ReadStatus::failed) error(path, f.why);
        return std::nullopt;
    }

    // Like optional_text, but the file is expected here, so its absence is recorded too.
    std::optional<std::string> required_text(const fs::path& path) {
        FileText f = read(path);
        if (f.status == ReadStatus::ok) return std::string(trim(f.text));
        error(path, f.status == ReadStatus::missing ? "missing" : f.why);
        return std::nullopt;
    }

    // One more series for the port being read, while its budget lasts.
    bool take_series() {
        if (series_left_ == 0) return false;
        --series_left_;
        return true;
    }
    void start_port() { series_left_ = opts_.max_series_per_port; }

    std::optional<uint64_t> counter(const fs::path& path) {
        auto text = optional_text(path);
        if (!text) return std::nullopt;
        auto v = parse_u64_counter(*text);
        if (!v) error(path, "not a counter: " + excerpt(*text));
        return v;
    }

    std::optional<std::pair<int, std::string>> enum_value(const fs::path& path) {
        auto text = optional_text(path);
        if (!text) return std::nullopt;
        auto v = parse_enum_line(*text);
        if (!v) error(path, "expected '<number>: <name>', got " + excerpt(*text));
        return v;
    }

    // Entry names of a directory, sorted; an absent directory is simply empty.
    std::vector<std::string> list(const fs::path& dir) {
        std::vector<std::string> names;
        std::error_code ec;
        fs::directory_iterator it(dir, ec);
        if (ec) {
            if (ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
                error(dir, ec.message());
            return names;
        }
        for (; it != fs::directory_iterator(); it.increment(ec)) {
            if (ec) break;
            names.push_back(it->path().filename().string());
        }
        if (ec) error(dir, ec.message());
        std::sort(names.begin(), names.end());
        return names;
    }

    // Entries whose names are non-negative numbers (ports, GID slots), in numeric order.
    std::vector<std::pair<uint32_t, std::string>> numbered(const fs::path& dir) {
        std::vector<std::pair<uint32_t, std::string>> out;
        for (auto& name : list(dir)) {
            uint32_t n = 0;
            const auto* end = name.data() + name.size();
            auto [p, ec] = std::from_chars(name.data(), end, n);
            if (ec == std::errc() && p == end) out.emplace_back(n, name);
        }
        std::sort(out.begin(), out.end());
        return out;
    }

private:
    SysfsReadResult& result_;
    const SysfsReadOptions& opts_;
    std::size_t series_left_ = 0;
};

bool path_exists(const fs::path& p) {
    std::error_code ec;
    return fs::exists(fs::symlink_status(p, ec));
}

bool is_dir(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p, ec);
}

void read_counter_dir(Reader& rd, const fs::path& dir, std::map<std::string, uint64_t>& out, uint64_t& dropped) {
    for (auto& name : rd.list(dir)) {
        // mlx5 keeps its stats cache lifetime (ms, writable) among the hw_counters.
        if (name == "lifespan") continue;
        if (!rd.take_series()) {
            ++dropped;  // not even read: the cap bounds the work as well as the series
            continue;
        }
        if (auto v = rd.counter(dir / name)) out[name] = *v;
    }
}

void read_gids(Reader& rd, const fs::path& port_dir, RdmaPort& port) {
    const fs::path types_dir = port_dir / "gid_attrs" / "types";
    const fs::path ndevs_dir = port_dir / "gid_attrs" / "ndevs";
    // Kernels before gid_attrs existed give no types at all: unknown, not an error.
    const bool have_types = is_dir(types_dir);
    const bool have_ndevs = is_dir(ndevs_dir);
    // On InfiniBand ports a GID has no netdev and ndevs/<idx> fails with EINVAL by design.
    const bool expect_ndev = port.link_layer == "Ethernet";

    for (auto& [idx, name] : rd.numbered(port_dir / "gids")) {
        const fs::path gid_path = port_dir / "gids" / name;
        auto gid = rd.optional_text(gid_path);
        if (!gid) continue;
        if (!is_valid_gid(*gid)) {
            rd.error(gid_path, "not a GID: " + excerpt(*gid));
            continue;
        }
        // Empty slots: their attrs fail with EINVAL on real kernels, so never touch them.
        if (is_zero_gid(*gid)) continue;
        if (!rd.take_series()) {
            ++port.gids_dropped;
            continue;
        }

        GidEntry e;
        e.index = static_cast<int>(idx);
        e.gid = *gid;
        e.ipv4 = ipv4_from_gid(*gid);
        if (have_types) e.type = rd.required_text(types_dir / name).value_or("");
        if (have_ndevs) {
            if (expect_ndev) {
                e.netdev = rd.required_text(ndevs_dir / name).value_or("");
            } else {
                FileText f = rd.read(ndevs_dir / name);
                if (f.status == ReadStatus::ok) e.netdev = std::string(trim(f.text));
            }
        }
        port.gids.push_back(std::move(e));
    }
}

RdmaPort read_port(Reader& rd, const fs::path& dir, uint32_t number, const RdmaDevice& dev,
                   const SysfsReadOptions& opts) {
    RdmaPort p;
    p.port = number;
    if (auto v = rd.enum_value(dir / "state")) {
        p.state = v->first;
        p.state_name = v->second;
    }
    if (auto v = rd.enum_value(dir / "phys_state")) {
        p.phys_state = v->first;
        p.phys_state_name = v->second;
    }
    if (auto text = rd.optional_text(dir / "rate")) {
        if (auto g = parse_rate_gbps(*text)) {
            p.rate_gbps = g;
            p.rate_text = *text;
        } else {
            rd.error(dir / "rate", "expected '<n> Gb/sec (...)', got " + excerpt(*text));
        }
    }
    p.link_layer = rd.optional_text(dir / "link_layer").value_or("");

    rd.start_port();
    read_counter_dir(rd, dir / "counters", p.counters, p.counters_dropped);
    read_counter_dir(rd, dir / "hw_counters", p.hw_counters, p.counters_dropped);
    // The PMA data counters count 4-byte words (x4 wraps only after 2^64 bytes: years at 400G).
    if (auto it = p.counters.find("port_xmit_data"); it != p.counters.end()) p.xmit_bytes = it->second * 4;
    if (auto it = p.counters.find("port_rcv_data"); it != p.counters.end()) p.rcv_bytes = it->second * 4;

    if (opts.gids) read_gids(rd, dir, p);

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

RdmaDevice read_device(Reader& rd, const fs::path& dir, const std::string& name, const SysfsReadOptions& opts) {
    RdmaDevice d;
    d.name = name;
    d.node_guid = rd.optional_text(dir / "node_guid").value_or("");
    d.sys_image_guid = rd.optional_text(dir / "sys_image_guid").value_or("");
    d.fw_ver = rd.optional_text(dir / "fw_ver").value_or("");
    d.board_id = rd.optional_text(dir / "board_id").value_or("");
    d.hca_type = rd.optional_text(dir / "hca_type").value_or("");
    d.node_type = rd.optional_text(dir / "node_type").value_or("");

    const fs::path device = dir / "device";
    const bool has_device = path_exists(device);
    if (has_device) {
        std::error_code ec;
        const fs::path target = fs::read_symlink(device / "driver", ec);
        if (!ec)
            d.driver = target.filename().string();
        else if (ec != std::errc::no_such_file_or_directory)  // unbound: no driver, no error
            rd.error(device / "driver", ec.message());
        d.netdevs = rd.list(device / "net");
    }
    // Soft-RoCE has no parent bus device; the kernel names its netdev in `parent` instead.
    const bool has_parent = path_exists(dir / "parent");
    if (has_parent) {
        if (auto parent = rd.optional_text(dir / "parent"); parent && !parent->empty()) d.netdevs = {*parent};
    }
    if (!has_device && (has_parent || name.starts_with("rxe"))) d.driver = "rxe";

    for (auto& [number, port_name] : rd.numbered(dir / "ports"))
        d.ports.push_back(read_port(rd, dir / "ports" / port_name, number, d, opts));
    return d;
}

}  // namespace

// ---------------------------------------------------------------- pure parsers

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

std::optional<double> parse_rate_gbps(std::string_view text) {
    text = trim(text);
    double v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || !std::isfinite(v) || v < 0) return std::nullopt;
    const std::string_view rest(p, static_cast<std::size_t>(text.data() + text.size() - p));
    if (!rest.starts_with(" Gb/sec")) return std::nullopt;
    return v;
}

bool is_valid_gid(std::string_view gid) {
    in6_addr a{};
    return parse_in6(gid, a);
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

bool is_lag_device_name(std::string_view name) { return name.find("_bond") != std::string_view::npos; }

SysfsReadResult read_rdma_devices(const fs::path& sysfs_root, const SysfsReadOptions& opts) {
    SysfsReadResult result;
    Reader rd(result, opts);
    const fs::path class_dir = sysfs_root / "class" / "infiniband";
    for (auto& name : rd.list(class_dir)) result.devices.push_back(read_device(rd, class_dir / name, name, opts));
    // list() sorted the names already; devices come out in the same order.
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

// ---------------------------------------------------------------- host facts

HostInfo read_host_info(const fs::path& sysfs_root, const fs::path& procfs_root, const SysfsReadOptions& opts) {
    HostInfo h;
    // Host facts are best effort (see the header): errors are not reported.
    SysfsReadResult ignored;
    Reader rd(ignored, opts);
    if (FileText f = rd.read(procfs_root / "sys" / "kernel" / "hostname"); f.status == ReadStatus::ok)
        h.hostname = std::string(trim(f.text));

    // Display controllers are PCI class 0x03xx (0x0300 VGA, 0x0302 3D: data-centre GPUs).
    const fs::path pci = sysfs_root / "bus" / "pci" / "devices";
    for (auto& name : rd.list(pci)) {
        const FileText vendor = rd.read(pci / name / "vendor");
        const FileText cls = rd.read(pci / name / "class");
        if (vendor.status != ReadStatus::ok || cls.status != ReadStatus::ok) continue;
        std::string v(trim(vendor.text));
        std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
        if (v == "0x10de" && trim(cls.text).starts_with("0x03")) {
            h.nvidia_gpu_present = true;
            break;
        }
    }
    h.nvidia_peermem_loaded = is_dir(sysfs_root / "module" / "nvidia_peermem");
    return h;
}

}  // namespace rocewatch
