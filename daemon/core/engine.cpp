// The collection loop: read sysfs and netlink, judge, publish one immutable snapshot.
#include "daemon/core/engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "daemon/core/procfs_net.hpp"
#include "daemon/model/rdma_port.hpp"
#include "daemon/rules/rules.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"
#include "daemon/sysfs/verbs.hpp"
#include "util/clock.hpp"
#include "util/log_safe.hpp"
#include "util/thread_name.hpp"

namespace rocewatch {
namespace {

// Per-netdev answers that change rarely and cost firmware reads (DCB, transceiver modules): each
// RoCE netdev is asked at most every `refresh`, all of them again when `ask_again`, and the
// answers of netdevs that are no longer RoCE's are dropped.
template <class T, class Read, class Put>
void for_roce_cached(std::vector<Link>& links, const std::set<std::string>& roce,
                     std::map<std::string, std::pair<SteadyClock::time_point, T>>& cache, SteadyClock::duration refresh,
                     bool ask_again, const Read& read, const Put& put) {
    const auto now = SteadyClock::now();
    if (ask_again) cache.clear();
    for (auto& l : links) {
        if (!roce.count(l.name)) continue;
        auto it = cache.find(l.name);
        if (it == cache.end() || now - it->second.first >= refresh)
            it = cache.insert_or_assign(l.name, std::make_pair(now, read(l.name))).first;
        put(l, it->second.second);
    }
    std::erase_if(cache, [&](const auto& e) { return !roce.count(e.first); });
}

// GID tables move only with addresses, links and bonds, and every such netlink event (and a
// re-dump after an overrun) wakes the engine to read them twice. This is the safety net
// beside it: a read of every GID slot costs a second of CPU at 128 NICs (255 slots a port,
// and the kept counter files are opened afresh), which at 60 s was about a quarter of all the
// collection's CPU (issue 14).
constexpr auto kGidRefresh = std::chrono::minutes(5);
// ECN is written through sysfs (no netlink event): read on its own between GID reads.
constexpr auto kEcnRefresh = std::chrono::seconds(60);
// GID reads after wakes: a tenth of the time once six have run back to back (three events'
// worth). A link flapping every 0.4 s cost 106% of a core at 128 NICs without it; a sparse
// event (a cable pulled, a bond slave lost) is read at once as before.
constexpr double kGidShare = 0.1;
constexpr int kGidBurst = 6;
// The ports' counter files are the largest part of a read on a big node (128 NICs of 53 files).
// They are read within a tenth of a percent of a core, charged with the time the reading took
// and the trend stage's time after it (rates and window increases are made only from a read):
// every cycle for a few NICs at a 1 s interval, every 5 s cycle up to about 32 NICs; and
// whatever the share, at least every kCounterMaxAge, as often as a Prometheus scrape at 15 s
// takes them (node_exporter reads them at every scrape). At 128 NICs on the bench's fixture
// tree (15-20 ms a read and about 5 ms of trends) the share alone would space reads 25 s apart,
// so they come every 15 s: at 0.2% they came every 10 s, and the daemon used 1.2 times
// node_exporter's CPU (issue 14). In between, the last values are carried over with their
// rates and the time they were read. The first read, and a new device or port, always reads
// them.
constexpr double kCounterShare = 0.001;
constexpr auto kCounterMaxAge = std::chrono::seconds(15);
constexpr int kCounterBurst = 3;
// A burst of netlink events (a bond losing both slaves) should give one cycle, not ten; and
// links that keep changing, a cycle a second.
constexpr auto kDebounce = std::chrono::milliseconds(20);
constexpr auto kLinkWakeSpacing = std::chrono::seconds(1);
constexpr auto kDcbRefresh = std::chrono::seconds(30);
constexpr auto kModuleRefresh = std::chrono::seconds(60);
// lldpd hears each neighbour every 30 s (its default transmit interval): asking more often
// learns nothing new.
constexpr auto kLldpRefresh = std::chrono::seconds(30);
// Reads still blocked before the engine stops starting new ones: each holds a thread.
constexpr std::size_t kMaxBlockedReads = 4;
// A cycle's file reads that keep making progress are waited for this long in all.
constexpr std::chrono::seconds kMaxCycleRead{60};

// The port numbered `port` of a device in an earlier snapshot; null when it has none.
const RdmaPort* old_port(const RdmaDevice& old, uint32_t port) {
    const auto it = std::find_if(old.ports.begin(), old.ports.end(), [&](const RdmaPort& o) { return o.port == port; });
    return it == old.ports.end() ? nullptr : &*it;
}

// Walks each device and port with its counterpart in the previous snapshot. Returns false,
// and stops, at a device or port the previous snapshot did not have (or with another number
// of ports): it has nothing to carry over.
template <class Device, class Port>
bool with_previous(std::vector<RdmaDevice>& devices, const Snapshot& prev, const Device& device, const Port& port) {
    for (auto& d : devices) {
        const RdmaDevice* old = find_device(prev, d.name);
        if (!old || old->ports.size() != d.ports.size()) return false;
        device(d, *old);
        for (auto& p : d.ports) {
            const RdmaPort* op = old_port(*old, p.port);
            if (!op) return false;
            port(p, *op);
        }
    }
    return true;
}

// A cycle that skipped the GID tables takes them, and the netdev of ports bound where their
// GID 0 points, from the previous snapshot; ECN too where it was not read (not asked for, or
// a port whose netdev only the GID tables name).
bool carry_over_gids(std::vector<RdmaDevice>& devices, const Snapshot& prev, bool ecn_read) {
    return with_previous(
        devices, prev, [](RdmaDevice&, const RdmaDevice&) {},
        [ecn_read](RdmaPort& p, const RdmaPort& op) {
            p.gids = op.gids;
            p.gids_dropped = op.gids_dropped;
            p.gids_source = op.gids_source;
            if (!ecn_read || p.netdev.empty()) {
                p.ecn_rp_enabled = op.ecn_rp_enabled;
                p.ecn_np_enabled = op.ecn_np_enabled;
            }
            if (p.netdev.empty()) p.netdev = op.netdev;
        });
}

// A cycle that left what a device is unread (see reads_identity) takes it from the previous
// snapshot: the device's GUIDs, firmware, board, types, driver and netdevs, and each port's
// link layer, capability mask and rdma_cm defaults (the port's netdev comes with its GIDs).
// With the ports' subnet manager fields too when they were not read (all ports Ethernet), and
// their state, physical state and rate when those were not (all ports RoCE over watched links).
bool carry_over_identity(std::vector<RdmaDevice>& devices, const Snapshot& prev, bool subnet_manager_read,
                         bool port_state_read) {
    return with_previous(
        devices, prev,
        [](RdmaDevice& d, const RdmaDevice& old) {
            d.driver = old.driver;
            d.node_guid = old.node_guid;
            d.sys_image_guid = old.sys_image_guid;
            d.fw_ver = old.fw_ver;
            d.board_id = old.board_id;
            d.hca_type = old.hca_type;
            d.node_type = old.node_type;
            d.netdevs = old.netdevs;
        },
        [subnet_manager_read, port_state_read](RdmaPort& p, const RdmaPort& op) {
            if (!subnet_manager_read) {
                p.lid = op.lid;
                p.sm_lid = op.sm_lid;
                p.sm_sl = op.sm_sl;
            }
            if (!port_state_read) {
                p.state = op.state;
                p.state_name = op.state_name;
                p.phys_state = op.phys_state;
                p.phys_state_name = op.phys_state_name;
                p.rate_gbps = op.rate_gbps;
                p.rate_text = op.rate_text;
            }
            p.link_layer = op.link_layer;
            p.cap_mask = op.cap_mask;
            p.rdma_cm_default_tos = op.rdma_cm_default_tos;
            p.rdma_cm_default_mode = op.rdma_cm_default_mode;
        });
}

// Whether every port of `s` is RoCE over a netdev that is one of its links: whose state,
// physical state and rate the driver derives from that netdev's carrier and speed, which
// rtnetlink reports as they change. Not for InfiniBand, a netdev unknown or in another
// namespace.
bool ports_follow_links(const Snapshot& s) {
    std::unordered_set<std::string_view> links;
    for (const auto& l : s.links) links.insert(l.name);
    for (const auto& d : s.devices)
        for (const auto& p : d.ports)
            if (nic_family(d, p) != NicFamily::roce || p.netdev.empty() || !links.contains(p.netdev)) return false;
    return true;
}

// A cycle that left the counter files unread takes the counters, and the rates and window
// increases made from them, from the previous snapshot (shared, not copied: SharedMap). False
// too when the previous snapshot had no counters (its read blocked).
bool carry_over_counters(std::vector<RdmaDevice>& devices, const Snapshot& prev) {
    if (prev.counters_read_at == TimePoint{}) return false;
    return with_previous(
        devices, prev, [](RdmaDevice&, const RdmaDevice&) {},
        [](RdmaPort& p, const RdmaPort& op) {
            p.counters = op.counters;
            p.hw_counters = op.hw_counters;
            p.counters_dropped = op.counters_dropped;
            p.xmit_bytes = op.xmit_bytes;
            p.rcv_bytes = op.rcv_bytes;
            p.rates = op.rates;
            p.window_increase = op.window_increase;
        });
}

// Counters of devices carried over from an older read are not this cycle's values: left out,
// so that no rate of 0 is made from them (missing is not zero).
std::vector<RdmaDevice> without_counters(std::vector<RdmaDevice> devices) {
    for (auto& d : devices)
        for (auto& p : d.ports) {
            p.counters.clear();
            p.hw_counters.clear();
            p.xmit_bytes.reset();
            p.rcv_bytes.reset();
        }
    return devices;
}

std::chrono::milliseconds read_deadline(const EngineSources& src, const Config& cfg) {
    using std::chrono::milliseconds;
    if (src.read_deadline > milliseconds::zero()) return src.read_deadline;
    return std::clamp(std::chrono::duration_cast<milliseconds>(cfg.daemon.interval), milliseconds(2000),
                      milliseconds(10000));
}

std::vector<std::string> ipv4_addresses(const Link* l) {
    std::vector<std::string> out;
    if (!l) return out;
    for (const auto& a : l->addresses)
        if (a.family == 2 /* AF_INET */) out.push_back(a.address);
    return out;
}

}  // namespace

Engine::Engine(std::shared_ptr<const Config> config, EngineSources sources, SnapshotStore& store,
               std::shared_ptr<spdlog::logger> log)
    : src_(std::move(sources)),
      store_(store),
      log_(std::move(log)),
      config_(std::move(config)),
      gid_budget_(kGidShare, kGidBurst),
      counter_budget_(kCounterShare, kCounterBurst) {
    daemon_.started_at = src_.now();
    daemon_.config_source = config_->source;
    daemon_.config_last_reload = daemon_.started_at;
    trends_ = std::make_unique<TrendTracker>();
    alerts_ = std::make_unique<AlertTracker>(config_->daemon.history_limit);
    if (!config_->daemon.state_dir.empty()) {
        state_ = std::make_unique<StateStore>(config_->daemon.state_dir,
                                              StateStore::max_bytes_for(config_->daemon.history_limit));
        load_state();
    }
    if (src_.wake)
        src_.wake->connect([this](WakeSignal::Reason why) {
            if (why == WakeSignal::Reason::links)
                wake();
            else
                wake_for_results();
        });
}

Engine::~Engine() {
    if (src_.wake) src_.wake->disconnect();
}

std::shared_ptr<const Config> Engine::config() const {
    std::lock_guard lock(mu_);
    return config_;
}

void Engine::load_state() {
    std::string err;
    std::optional<AlertTracker> restored;
    state_->load(&err, [&](const nlohmann::json& j) {
        restored.emplace(AlertTracker::from_json(j, config_->daemon.history_limit));
    });
    // A bad file was set aside (or could not be): say so once in the log and keep it visible
    // as the "state" collector's error in /api/v1/status and rocewatch_collector_success.
    if (!err.empty()) {
        log_->error("alert state not restored: {}", err);
        state_status_.last_error = err;
        state_status_.read_errors = 1;
        return;
    }
    state_status_.success = true;
    if (!restored) return;
    *alerts_ = std::move(*restored);
    auto h = alerts_->history();
    saved_history_size_ = h->size();
    if (!h->empty()) saved_last_transition_ = h->back().at;
    log_->info("restored {} active alerts and {} history entries from {}", alerts_->active().size(), h->size(),
               config_->daemon.state_dir);
}

void Engine::save_state_if_changed() {
    if (!state_) return;
    auto h = alerts_->history();
    TimePoint last = h->empty() ? TimePoint{} : h->back().at;
    if (h->size() == saved_history_size_ && last == saved_last_transition_) return;
    std::string err;
    const bool was_ok = state_status_.success;
    const auto t0 = SteadyClock::now();
    bool saved = false;
    try {  // a state file that cannot be written costs the history on disk, never the cycle
        saved = state_->save(alerts_->to_json(), &err);
    } catch (const std::exception& e) {
        err = e.what();
    }
    state_status_.success = saved;
    state_status_.duration_seconds = seconds_between(t0, SteadyClock::now());
    if (saved) {
        saved_history_size_ = h->size();
        saved_last_transition_ = last;
        if (!was_ok) log_->info("alert state saved again to {}", state_->file().string());
    } else {
        state_status_.last_error = err;
        // Retried every cycle: log the first failure of a run of them, not each one.
        if (was_ok) log_->warn("alert state not saved: {}", err);
    }
}

// ---------------------------------------------------------------- file reads with a deadline

// What one cycle read from files, or what it carried over when the read did not return.
struct Engine::FileRead {
    std::vector<RdmaDevice> devices;
    HostInfo host;
    CollectorStatus sysfs{.name = "sysfs"};
    CollectorStatus verbs{.name = "verbs"};
    CollectorStatus host_status{.name = "host"};
    std::vector<SysfsError> sysfs_errors;
    std::vector<SysfsError> sysfs_ignored;
    bool gids_read = false;
    bool ecn_read = false;
    // The counter files read now (and how long that took), or the last ones carried over.
    bool counters_read = false;
    bool counters_carried = false;
    double counter_seconds = 0;
    // The ports' state read from sysfs now; else carried over, and whether verbs' answer
    // contradicted what was carried (a change no link event told of).
    bool port_state_read = false;
    bool port_state_moved = false;
};

// One cycle's reads, shared between the engine and the thread doing them: whichever ends
// last frees it, so the engine can walk away from a read that never returns.
struct Engine::Reading {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    FileRead result;
    std::shared_ptr<ReadProgress> progress = std::make_shared<ReadProgress>();
    SteadyClock::time_point started = SteadyClock::now();
    std::string blocked_on;  // the file it was on when the engine gave up (engine thread only)
};

namespace {
// Stands for libibverbs in the progress and skip lists: a wedged device blocks there too.
constexpr const char* kVerbsStage = "(libibverbs: opening devices, querying ports and GID tables)";

// Whether the tree read is the host's own /sys, where verbs sees the same devices: a fixture
// tree's devices must not take a real device's GID table by its name.
bool reads_host_sysfs(const Config& cfg) {
    return std::filesystem::path(cfg.daemon.sysfs_root).lexically_normal() == "/sys";
}
}  // namespace

// Runs on the reading thread: touches nothing of the engine, only its arguments.
Engine::FileRead Engine::read_files_now(const Config& cfg, const SysfsReadOptions& opts,
                                        const std::shared_ptr<const Snapshot>& last, const EngineSources& src) {
    FileRead r;
    auto read = [&](const SysfsReadOptions& o) {
        return src.read_sysfs ? src.read_sysfs(cfg.daemon.sysfs_root, o) : read_rdma_devices(cfg.daemon.sysfs_root, o);
    };
    auto t0 = SteadyClock::now();
    try {
        SysfsReadResult rdma = read(opts);
        r.gids_read = opts.gids;
        r.ecn_read = opts.gids || opts.ecn;
        // A device the last snapshot did not have (rdma link add, a driver reload) has no GIDs
        // or counters to carry over: read it all now.
        if ((!rdma.identity_read &&
             !carry_over_identity(rdma.devices, *last, rdma.subnet_manager_read, rdma.port_state_read)) ||
            (!opts.gids && !carry_over_gids(rdma.devices, *last, opts.ecn)) ||
            (!rdma.counters_read && !carry_over_counters(rdma.devices, *last))) {
            SysfsReadOptions all = opts;
            all.gids = true;
            all.counters = true;
            rdma = read(all);
            r.gids_read = true;
            r.ecn_read = true;
        }
        r.counters_read = rdma.counters_read;
        r.counters_carried = !rdma.counters_read;
        r.port_state_read = rdma.port_state_read;
        r.counter_seconds = rdma.counter_seconds;
        r.sysfs.success = true;
        r.sysfs.read_errors = rdma.read_errors;
        for (const auto& e : rdma.errors) r.sysfs.errors.push_back(e.text());
        if (!r.sysfs.errors.empty()) r.sysfs.last_error = r.sysfs.errors.back();
        r.sysfs_errors = std::move(rdma.errors);
        for (const auto& e : rdma.ignored) r.sysfs.ignored.push_back(e.text());
        r.sysfs_ignored = std::move(rdma.ignored);
        r.devices = std::move(rdma.devices);
    } catch (const std::exception& e) {
        r.sysfs.last_error = e.what();
    }
    r.sysfs.duration_seconds = seconds_between(t0, SteadyClock::now());

    // libibverbs: what sysfs does not say (active/max MTU, speed, width).
    t0 = SteadyClock::now();
    if (opts.skip && opts.skip->contains(kVerbsStage)) {
        r.verbs.last_error = std::string("skipped: an earlier call blocked in ") + kVerbsStage;
    } else {
        if (opts.progress) opts.progress->enter(kVerbsStage);
        auto verbs = enrich_with_verbs(r.devices, !r.port_state_read);
        r.port_state_moved = verbs.port_state_moved > 0;
        r.verbs.success = verbs.errors == 0;
        r.verbs.read_errors = verbs.errors;
        r.verbs.last_error = verbs.last_error;
    }
    r.verbs.duration_seconds = seconds_between(t0, SteadyClock::now());

    t0 = SteadyClock::now();
    try {
        // The PCI devices are scanned for a GPU with the GID tables, as the daemon starts,
        // after link events and every kGidRefresh: at 128 NICs a vendor file for each of
        // 160 PCI functions every cycle was a fiftieth of the daemon's CPU (issue 14).
        const auto gpu = last && !opts.gids ? std::optional<bool>(last->host.nvidia_gpu_present) : std::nullopt;
        r.host = read_host_info(cfg.daemon.sysfs_root, cfg.daemon.procfs_root, opts, gpu);
        r.host_status.success = true;
    } catch (const std::exception& e) {
        r.host_status.last_error = e.what();
    }
    r.host_status.duration_seconds = seconds_between(t0, SteadyClock::now());
    return r;
}

Engine::FileRead Engine::read_files(const Config& cfg, bool read_gids, bool read_counters, bool read_port_state) {
    reap_blocked_reads();
    const auto deadline = read_deadline(src_, cfg);
    auto reading = std::make_shared<Reading>();
    if (blocked_.size() >= kMaxBlockedReads) return gave_up(*reading, std::chrono::milliseconds::zero());

    const bool read_ecn = read_gids || SteadyClock::now() - ecn_read_at_ >= kEcnRefresh;
    // The subnet manager's fields every cycle unless every port is known to be Ethernet.
    bool read_sm = !last_;
    if (last_)
        for (const auto& d : last_->devices)
            for (const auto& p : d.ports) read_sm |= p.link_layer != "Ethernet";
    // GID tables through verbs, one ioctl a device, where sysfs takes a file a slot. Made for
    // every read, as the fallback to a full read below needs them too; it lists no device
    // until the first table is asked for. Not after verbs blocked once (the stage's skip).
    std::shared_ptr<GidTableSource> gid_tables;
    if (reads_host_sysfs(cfg) && !(skip_ && skip_->contains(kVerbsStage)))
        gid_tables = std::make_shared<VerbsGidTables>(reading->progress, kVerbsStage);
    const SysfsReadOptions opts{.gids = read_gids,
                                .ecn = read_ecn,
                                .counters = read_counters,
                                .subnet_manager = read_sm,
                                .port_state = read_port_state,
                                .skip = skip_,
                                .progress = reading->progress,
                                .files = sysfs_files_,
                                .gid_tables = std::move(gid_tables)};
    try {
        std::thread([reading, cfg, opts, last = last_, src = src_] {
            name_this_thread("sysfs-read");
            FileRead r = read_files_now(cfg, opts, last, src);
            std::lock_guard lock(reading->mu);
            reading->result = std::move(r);
            reading->done = true;
            reading->cv.notify_all();
        }).detach();
    } catch (const std::exception& e) {  // no thread to be had: read here, as before
        log_->warn("no thread for the file reads ({}): reading on the engine's", e.what());
        FileRead r = read_files_now(cfg, opts, last_, src_);
        note_read(r, reading->started);
        return r;
    }

    // Short slices, so that stop() is never kept waiting for a read. The deadline is for one
    // file: a read that keeps entering new files is slow, not stuck, and is waited for up to
    // kMaxCycleRead in all.
    auto stalled_since = reading->started;
    uint64_t seen = reading->progress->entered();
    const auto cap = reading->started + std::max<SteadyClock::duration>(deadline, kMaxCycleRead);
    std::unique_lock lock(reading->mu);
    while (!reading->done && !stop_requested_) {
        const auto now = SteadyClock::now();
        if (const uint64_t e = reading->progress->entered(); e != seen) {
            seen = e;
            stalled_since = now;
        }
        const auto until = std::min(stalled_since + deadline, cap);
        if (now >= until) break;
        reading->cv.wait_until(lock, std::min(until, now + std::chrono::milliseconds(50)));
    }
    if (reading->done) {
        FileRead r = std::move(reading->result);
        note_read(r, reading->started);
        return r;
    }
    lock.unlock();
    const bool stuck = SteadyClock::now() - stalled_since >= deadline;
    if (stuck) reading->blocked_on = reading->progress->current();
    blocked_.push_back(reading);
    if (!stop_requested_ && !reading->blocked_on.empty()) {
        auto skip = std::make_shared<std::set<std::string>>(*skip_);
        skip->insert(reading->blocked_on);
        skip_ = std::move(skip);
        log_->error("sysfs: reading {} did not return within {} ms: the collector serves the last data it has "
                    "and skips that file until the read returns",
                    reading->blocked_on, deadline.count());
    }
    if (read_gids) gid_budget_.spent(SteadyClock::now() - reading->started, SteadyClock::now());
    return gave_up(*reading, deadline);
}

void Engine::note_read(const FileRead& r, SteadyClock::time_point started) {
    const auto now = SteadyClock::now();
    if (r.gids_read) {
        gids_read_at_ = started;
        gid_budget_.spent(now - started, now);
        log_->debug("sysfs: read with the GID tables in {:.0f} ms", seconds_between(started, now) * 1e3);
    }
    if (r.ecn_read) ecn_read_at_ = started;
    if (r.counters_read) {
        counter_budget_.spent(DutyBudget::Seconds(r.counter_seconds), now);
        log_->debug("sysfs: counter files read in {:.1f} ms", r.counter_seconds * 1e3);
    }
}

// The cycle goes on with the last snapshot's devices and host facts, marked failed and dated.
Engine::FileRead Engine::gave_up(const Reading& r, std::chrono::milliseconds waited) {
    FileRead out;
    if (last_) {
        out.devices = without_counters(last_->devices);
        out.host = last_->host;
    }
    std::string why = waited.count() == 0
                          ? std::to_string(blocked_.size()) + " earlier reads are still blocked; no new read started"
                      : r.blocked_on.empty() ? "the file reads, still going, took more than " +
                                                   std::to_string(kMaxCycleRead.count()) + " s"
                                             : "reading " + r.blocked_on + " did not return within " +
                                                   std::to_string(waited.count()) + " ms; skipped until it does";
    why += last_ ? "; devices and host facts are from an earlier collection, counters left out"
                 : "; no devices read yet";
    out.sysfs.last_error = why;
    out.sysfs.errors = {why};
    out.sysfs.duration_seconds = std::chrono::duration<double>(waited).count();
    out.verbs.last_error = "not run: " + why;
    out.host_status.last_error = "not run: " + why;
    return out;
}

// A blocked read that came back frees its thread and its file: that file is read again.
void Engine::reap_blocked_reads() {
    std::erase_if(blocked_, [&](const std::shared_ptr<Reading>& r) {
        std::lock_guard lock(r->mu);
        if (!r->done) return false;
        if (!r->blocked_on.empty() && skip_->contains(r->blocked_on)) {
            auto skip = std::make_shared<std::set<std::string>>(*skip_);
            skip->erase(r->blocked_on);
            skip_ = std::move(skip);
            log_->warn("sysfs: the read of {} returned after {:.1f} s; it is read again", r->blocked_on,
                       seconds_between(r->started, SteadyClock::now()));
        }
        return true;
    });
}

// Each unreadable or garbled file once, and only a few new ones a cycle: a tree gone bad
// all at once must not flood the journal.
void Engine::log_read_errors(const std::vector<SysfsError>& errors) {
    logged_unreadable_.new_round();
    for (const auto& e : errors) {
        if (!logged_unreadable_.admit(e.path)) continue;
        logging::Fields f({{"FILE", e.path}});
        log_->warn("sysfs: {}: {} (value skipped; this file is logged once)", log_safe(e.path, 256), e.reason);
    }
    if (const auto later = logged_unreadable_.held_back(); later > 0)
        log_->warn("sysfs: {} more unreadable files, logged in the next cycles", later);
}

// An entry that is not a device or port (a dangling link after a hot-unplug, a stray file):
// logged once at info, counted in rocewatch_collector_ignored_entries, never an error.
void Engine::log_ignored(const std::vector<SysfsError>& ignored) {
    logged_ignored_.new_round();
    for (const auto& e : ignored) {
        if (!logged_ignored_.admit(e.path)) continue;
        logging::Fields f({{"FILE", e.path}});
        log_->info("sysfs: {}: {}; ignored (logged once)", log_safe(e.path, 256), e.reason);
    }
}

void Engine::log_transitions(const std::vector<AlertTransition>& transitions) {
    for (const auto& t : transitions) {
        const auto how = logging::transition_log(t);
        logging::Fields f({{"RULE", t.rule},
                           {"OBJECT", t.object},
                           {"DEVICE", logging::object_device(t.object)},
                           {"SEVERITY", to_string(t.severity)},
                           {"SCOPE", to_string(t.scope)},
                           {"ALERT_STATE", to_string(t.to)}},
                          how.priority);
        log_->log(how.level, "{}", logging::transition_message(t));
    }
}

std::shared_ptr<const Snapshot> Engine::collect_once() {
    auto cfg = config();
    auto snap = std::make_shared<Snapshot>();
    snap->generation = ++generation_;
    snap->version = ROCEWATCH_VERSION;
    snap->config = cfg;

    // sysfs, verbs and host facts: every read that a wedged driver can block.
    const auto started = SteadyClock::now();
    bool read_gids = !last_ || started - gids_read_at_ >= kGidRefresh;
    // A cycle after one that put the GID tables off does not put them off again: with events
    // coming faster than cycles, each would otherwise ask for the next at once.
    const bool gids_put_off = collect_again_at_.has_value();
    collect_again_at_.reset();
    bool link_event = false;
    {
        std::lock_guard lock(mu_);
        link_event = std::exchange(port_state_due_, false);
        if (gids_after_this_cycle_ && last_ && !gids_put_off) {
            gids_after_this_cycle_ = false;                     // this cycle: link and port state first
            collect_again_at_ = gid_budget_.ready_at(started);  // and the GID tables right after it
        } else if (gid_reads_due_ > 0) {
            gids_after_this_cycle_ = false;
            if (read_gids || gid_budget_.allows(started)) {
                read_gids = true;
                --gid_reads_due_;
            } else {
                collect_again_at_ = gid_budget_.ready_at(started);  // put off, not dropped
            }
        }
    }
    // Counters within their share of a core, and never older than kCounterMaxAge (by the
    // clock snapshots are stamped with); the first read always has them.
    const bool read_counters = !last_ || counter_budget_.allows(started) ||
                               src_.now() - last_->counters_read_at >= kCounterMaxAge;
    // Port state every cycle unless every port follows a link the watcher reports (see
    // SysfsReadOptions::port_state); then after link events, and with the counters.
    const bool read_port_state = !last_ || link_event || !ports_follow_links(*last_);
    FileRead files = read_files(*cfg, read_gids, read_counters, read_port_state);
    // A read that gave up, or a port whose driver contradicts the state carried over: the next
    // cycle reads the files (this one already has the driver's state).
    if ((read_port_state && !files.port_state_read) || files.port_state_moved) {
        std::lock_guard lock(mu_);
        port_state_due_ = true;
    }
    snap->devices = std::move(files.devices);
    snap->host = std::move(files.host);
    log_read_errors(files.sysfs_errors);
    log_ignored(files.sysfs_ignored);

    // netlink: links, addresses, bonds (the watcher keeps them current between cycles).
    auto t0 = SteadyClock::now();
    CollectorStatus nl_status{.name = "netlink"};
    bool link_counters_carried = false;
    try {
        snap->links = src_.links();
        std::set<std::string> roce;  // the netdevs RoCE runs over
        for (const auto& d : snap->devices)
            for (const auto& p : d.ports)
                if (!p.netdev.empty() && nic_family(d, p) == NicFamily::roce) roce.insert(p.netdev);
        // What a link has beyond rtnetlink's view and moves without an event: the RoCE netdevs'
        // driver counters and ethtool netlink's (link modes, FEC, pause, standard statistics:
        // two ioctls and four round trips a netdev) and every link's ARP sysctls (three procfs
        // files). Read with the ports' counters (within their share of a core, at least every
        // kCounterMaxAge), after a link event (with the GID tables) and when a link is new or
        // was recreated; in between, carried over with the driver counters' rates. Read every
        // cycle, at 128 NICs whose netdevs are links they cost a third of the daemon's CPU.
        bool link_files_read = !last_ || files.counters_read || read_gids;
        std::vector<std::pair<Link*, const Link*>> carry;
        if (!link_files_read) {
            std::unordered_map<std::string_view, const Link*> before;
            for (const auto& l : last_->links) before.emplace(l.name, &l);
            for (auto& l : snap->links) {
                const auto it = before.find(l.name);
                if (it == before.end() || it->second->ifindex != l.ifindex ||
                    (src_.phy && roce.count(l.name) && !it->second->phy)) {
                    link_files_read = true;  // a new link: read them all now
                    break;
                }
                carry.emplace_back(&l, it->second);
            }
        }
        // DCB (PFC, ETS, APP) of the RoCE netdevs: one dcbnl round trip each.
        // After a wake, or every kGidRefresh, both are asked again (a module may have been swapped).
        if (src_.dcb)
            for_roce_cached(snap->links, roce, dcb_cache_, kDcbRefresh, read_gids, src_.dcb,
                            [](Link& l, const DcbState& d) { l.dcb = d; });
        if (src_.module)
            for_roce_cached(snap->links, roce, module_cache_, kModuleRefresh, read_gids, src_.module,
                            [](Link& l, const Transceiver& t) { l.module = t; });
        // The switch and port lldpd hears on every link.
        if (src_.lldp && !cfg->daemon.lldpd_socket.empty()) {
            const auto now = SteadyClock::now();
            if (!lldp_answer_ || read_gids || lldp_socket_ != cfg->daemon.lldpd_socket ||
                now - lldp_asked_at_ >= kLldpRefresh) {
                LldpAnswer a = src_.lldp(cfg->daemon.lldpd_socket);
                // A failed ask keeps what lldpd said last (its entries live 120 s there too).
                if (!a.error.empty() && lldp_answer_ && lldp_socket_ == cfg->daemon.lldpd_socket)
                    a.by_netdev = std::move(lldp_answer_->by_netdev);
                const std::string was = lldp_answer_ ? lldp_answer_->error : "";
                if (a.error != was && !a.error.empty()) log_->warn("lldp: {}", a.error);
                if (a.error != was && a.error.empty() && !a.absent) log_->info("lldp: lldpd answers again");
                lldp_answer_ = std::move(a);
                lldp_socket_ = cfg->daemon.lldpd_socket;
                lldp_asked_at_ = now;
                lldp_seconds_ = seconds_between(now, SteadyClock::now());
            }
            for (auto& l : snap->links)
                if (auto it = lldp_answer_->by_netdev.find(l.name); it != lldp_answer_->by_netdev.end())
                    l.lldp = it->second;
        } else {
            lldp_answer_.reset();
        }
        // ARP sysctls (cabling checks); the ARP table itself below, every cycle. Not charged
        // to the counters' budget, as before they joined this schedule.
        if (link_files_read) read_ipv4_conf(snap->links, cfg->daemon.procfs_root, sysfs_files_);
        const auto link_counters_started = thread_cpu_time();
        if (link_files_read) {
            // The driver's pause, pause-storm and discard counters of the same netdevs (ethtool -S).
            if (src_.driver_stats)
                for (auto& l : snap->links)
                    if (roce.count(l.name))
                        for (auto& [name, v] : src_.driver_stats(l.name).values)
                            l.driver_stats.emplace(std::move(name), v);
            // The physical link through ethtool netlink; its standard counters join the driver's.
            // Between link events, what changes only with the link or the driver is not asked
            // again of the same netdev (PhyReader).
            std::unordered_map<std::string_view, const Link*> known;
            if (src_.phy && last_ && !read_gids && !link_event)
                for (const auto& l : last_->links)
                    if (l.phy) known.emplace(l.name, &l);
            const auto known_phy = [&](const Link& l) -> const PhyLink* {
                const auto it = known.find(l.name);
                return it != known.end() && it->second->ifindex == l.ifindex ? &*it->second->phy : nullptr;
            };
            if (src_.phy)
                for (auto& l : snap->links) {
                    if (!roce.count(l.name)) continue;
                    l.phy = src_.phy(l.name, known_phy(l));
                    const PhyLink& p = *l.phy;
                    const auto put = [&](const char* name, const std::optional<uint64_t>& v) {
                        if (v) l.driver_stats.emplace(name, *v);
                    };
                    put("fec_corrected_blocks", p.fec_corrected_blocks);
                    put("fec_uncorrectable_blocks", p.fec_uncorrectable_blocks);
                    put("fec_corrected_bits", p.fec_corrected_bits);
                    // The IEEE 802.3 / RMON counters by their group/name ("eth-mac/FrameCheckSequenceErrors").
                    for (const auto& [name, v] : p.standard_stats) l.driver_stats.emplace(name, v);
                    // The driver's own port-wide pause counters, where it has them, say the same.
                    if (!l.driver_stats.count("rx_pause_ctrl_phy")) put("rx_pause_frames", p.pause_rx_frames);
                    if (!l.driver_stats.count("tx_pause_ctrl_phy")) put("tx_pause_frames", p.pause_tx_frames);
                }
            if (last_ && (src_.driver_stats || src_.phy))
                counter_budget_.also_spent(thread_cpu_time() - link_counters_started, SteadyClock::now());
        } else {
            for (auto& [l, was] : carry) {
                l->arp_ignore = was->arp_ignore;
                l->arp_announce = was->arp_announce;
                l->rp_filter = was->rp_filter;
                l->driver_stats = was->driver_stats;
                l->driver_stat_rates = was->driver_stat_rates;
                l->driver_stat_increase = was->driver_stat_increase;
                l->phy = was->phy;
            }
        }
        link_counters_carried = !link_files_read;
        snap->neighbours = read_arp_table(cfg->daemon.procfs_root);
        nl_status.success = true;
    } catch (const std::exception& e) {
        nl_status.last_error = e.what();
        log_->error("netlink collection failed: {}", e.what());
    }
    nl_status.duration_seconds = seconds_between(t0, SteadyClock::now());
    snap->netlink_events = src_.netlink_events();
    snap->netlink_resyncs = src_.netlink_resyncs();
    snap->link_events = src_.link_events();
    snap->alertmanager = src_.alertmanager();
    snap->probe_budget = src_.probe_budget();

    snap->host.ucx_version = src_.ucx_version;
    snap->collectors = {files.sysfs, files.verbs, nl_status, files.host_status};
    // lldpd is a collector only where it runs: no socket is no lldpd, not a failure.
    if (lldp_answer_ && !lldp_answer_->absent)
        snap->collectors.push_back(CollectorStatus{.name = "lldp",
                                                   .success = lldp_answer_->error.empty(),
                                                   .duration_seconds = lldp_seconds_,
                                                   .last_error = lldp_answer_->error});
    const TimePoint now = src_.now();
    const auto stamp = [&](CollectorStatus& c) {
        if (c.success) last_success_[c.name] = now;
        if (auto it = last_success_.find(c.name); it != last_success_.end()) c.last_success = it->second;
    };
    for (auto& c : snap->collectors) stamp(c);

    // The GID index RDMA must use depends on the netdev's addresses, which only netlink knows.
    for (auto& dev : snap->devices)
        for (auto& port : dev.ports) assign_roce_v2_gid(port, ipv4_addresses(find_link(*snap, port.netdev)));

    snap->probes = src_.probes ? src_.probes() : nullptr;
    if (!snap->probes) snap->probes = std::make_shared<const ProbeBook>();
    snap->cluster = src_.cluster ? src_.cluster() : nullptr;

    snap->collected_at = now;
    if (files.counters_carried && last_)
        snap->counters_read_at = last_->counters_read_at;
    else if (files.counters_read)
        snap->counters_read_at = now;
    snap->link_counters_read_at = link_counters_carried ? last_->link_counters_read_at : now;
    const auto trends_started = thread_cpu_time();
    trends_->apply(*snap, now, cfg->thresholds);
    // Rates and window increases are made when counters were read: what they cost (a third of
    // a read at 128 NICs) is the counters' too, in CPU time as the read is.
    if (files.counters_read) counter_budget_.also_spent(thread_cpu_time() - trends_started, SteadyClock::now());
    alerts_->update(evaluate_rules(*snap, *cfg), *cfg, now);
    if (log_alerts_) log_transitions(alerts_->last_transitions());
    snap->alerts = alerts_->active();
    snap->history = alerts_->history();
    save_state_if_changed();
    if (state_) stamp(snap->collectors.emplace_back(state_status_));

    {
        std::lock_guard lock(mu_);
        daemon_.ready = true;
        snap->daemon = daemon_;
    }
    std::shared_ptr<const Snapshot> out = std::move(snap);
    last_ = out;
    store_.publish(out);
    return out;
}

void Engine::run() {
    auto next = SteadyClock::now();
    for (;;) {
        {
            std::unique_lock lock(mu_);
            for (;;) {
                if (stopping_) return;
                auto until = next;
                if (woken_) {
                    auto at = woken_at_ + kDebounce;
                    if (link_woken_) at = std::max(at, link_cycle_at_ + kLinkWakeSpacing);
                    until = std::min(until, at);
                }
                if (SteadyClock::now() >= until) break;
                cv_.wait_until(lock, until);
            }
            if (link_woken_) link_cycle_at_ = SteadyClock::now();
            woken_ = false;
            link_woken_ = false;
        }
        bool settling = false;
        try {
            auto snap = collect_once();
            // An alert waiting out its `for` or its `clear_after` is judged again within a second,
            // not at the next full interval: verdicts should not lag the rules' own timing.
            for (const auto& a : snap->alerts)
                settling |= a.state == AlertState::pending || a.last_seen < snap->collected_at;
        } catch (const std::exception& e) {
            log_->error("collection cycle failed: {}", e.what());
        }
        auto now = SteadyClock::now();
        if (now >= next) next = now + config()->daemon.interval;
        if (settling) next = std::min(next, now + std::chrono::seconds(1));
        if (collect_again_at_) next = std::min(next, std::max(now, *collect_again_at_));  // GID reads due
    }
}

void Engine::wake() {
    {
        std::lock_guard lock(mu_);
        if (!woken_) woken_at_ = SteadyClock::now();
        woken_ = true;
        link_woken_ = true;
        gid_reads_due_ = 2;
        gids_after_this_cycle_ = true;
        port_state_due_ = true;
    }
    cv_.notify_all();
}

void Engine::wake_for_results() {
    {
        std::lock_guard lock(mu_);
        if (!woken_) woken_at_ = SteadyClock::now();
        woken_ = true;
    }
    cv_.notify_all();
}

void Engine::stop() {
    stop_requested_ = true;
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
}

void Engine::apply_config(std::shared_ptr<const Config> config) {
    {
        std::lock_guard lock(mu_);
        config_ = std::move(config);
        daemon_.config_source = config_->source;
        daemon_.config_last_reload_ok = true;
        daemon_.config_last_reload = src_.now();
        daemon_.config_last_errors.clear();
    }
    wake();
}

void Engine::replace_peers(std::shared_ptr<const Config> config) {
    {
        std::lock_guard lock(mu_);
        config_ = std::move(config);
    }
    wake();
}

void Engine::reject_config(std::vector<std::string> errors) {
    {
        std::lock_guard lock(mu_);
        daemon_.config_last_reload_ok = false;
        daemon_.config_last_errors = std::move(errors);
    }
    wake();
}

}  // namespace rocewatch
