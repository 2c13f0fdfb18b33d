// The collection loop: read sysfs and netlink, judge, publish one immutable snapshot.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "daemon/core/duty_budget.hpp"
#include "daemon/core/snapshot_store.hpp"
#include "daemon/core/wake_signal.hpp"
#include "daemon/logging/journal.hpp"
#include "util/clock.hpp"
#include "daemon/model/cluster.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/driver_stats.hpp"
#include "daemon/model/probe.hpp"
#include "daemon/model/snapshot.hpp"
#include "daemon/rules/alerts.hpp"
#include "daemon/rules/state_store.hpp"
#include "daemon/rules/trends.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"

namespace rocewatch {

// Where the engine gets what it does not read itself. Injected so tests and --once can
// supply links without a live netlink watcher.
struct EngineSources {
    std::function<std::vector<Link>()> links;
    // dcbnl for one netdev (netlink/dcb.hpp's query_dcb); unset: DCB is not read.
    std::function<DcbState(const std::string& netdev)> dcb;
    // The driver's statistics of one netdev, those rocewatch keeps (netlink/ethtool_stats.hpp's
    // DriverStatsReader with is_lossless_stat); unset: not read.
    std::function<DriverStats(const std::string& netdev)> driver_stats;
    // ethtool netlink's link modes, FEC and pause of one netdev (netlink/ethtool_nl.hpp's
    // PhyReader); `known`: its last answer for the same netdev (same ifindex) since the last
    // link event, null after one or for a new netdev (what changes only with the link or the
    // driver is then asked again); unset: not read.
    std::function<PhyLink(const std::string& netdev, const PhyLink* known)> phy;
    // The transceiver module of one netdev (netlink/ethtool_nl.hpp's query_module); unset: not
    // read.
    std::function<Transceiver(const std::string& netdev)> module;
    // lldpd's neighbours on every link, asked over the socket at that path (daemon/lldp's
    // read_lldp, bounded in time); unset: not asked.
    std::function<LldpAnswer(const std::string& socket_path)> lldp;
    std::function<uint64_t()> netlink_events = [] { return uint64_t{0}; };
    std::function<uint64_t()> netlink_resyncs = [] { return uint64_t{0}; };
    // The watcher's link transitions and address changes (netlink/history.hpp).
    std::function<std::vector<LinkEvent>()> link_events = [] { return std::vector<LinkEvent>{}; };
    // The Alertmanager notifier's counters; nothing while none is configured.
    std::function<std::optional<AlertmanagerStats>()> alertmanager = [] { return std::optional<AlertmanagerStats>{}; };
    // The node's probe budget (probes/budget.hpp); nothing while peer probing is off.
    std::function<std::optional<ProbeBudgetStats>()> probe_budget = [] { return std::optional<ProbeBudgetStats>{}; };
    std::function<TimePoint()> now = [] { return Clock::now(); };
    std::string ucx_version;  // of the UCX this binary is linked with, "" without UCX
    // The probe scheduler's latest book (core/probe_store.hpp); an empty book when unset.
    std::function<std::shared_ptr<const ProbeBook>()> probes;
    // The inventory keeper's latest state (daemon/cluster); none when unset.
    std::function<std::shared_ptr<const ClusterState>()> cluster;
    // Raised by netlink and probe results; the engine listens to it while it lives.
    WakeSignal* wake = nullptr;
    // The sysfs reader (read_rdma_devices when unset); tests put in one that blocks.
    std::function<SysfsReadResult(const std::filesystem::path&, const SysfsReadOptions&)> read_sysfs;
    // How long a cycle waits for its file reads; zero: the interval, kept within 2-10 s.
    std::chrono::milliseconds read_deadline{0};
};

class Engine {
public:
    Engine(std::shared_ptr<const Config> config, EngineSources sources, SnapshotStore& store,
           std::shared_ptr<spdlog::logger> log);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Runs one whole cycle and publishes its snapshot.
    std::shared_ptr<const Snapshot> collect_once();
    // Whether alert transitions are logged (the default). --once turns it off: its report on
    // stdout is the alerts, and a second copy of each on stderr is noise to a health check.
    void log_alerts(bool on) { log_alerts_ = on; }

    // Loops until stop(): a cycle every interval, or soon after wake().
    void run();
    // A link, address or bond changed: collect at once (or a second after the last cycle a
    // wake asked for), and read the GID tables on the two cycles after that one (the first
    // judges link and port state without waiting for them), within their share of the time.
    void wake();
    // Only probe results changed: collect soon; the GID tables stay as they are.
    void wake_for_results();
    void stop();

    // SIGHUP: a good config replaces the running one; a bad one is kept out and reported.
    void apply_config(std::shared_ptr<const Config> config);
    void reject_config(std::vector<std::string> errors);
    // The same config with other peers (the inventory's changed): not a reload, so the
    // reload status stays as it is.
    void replace_peers(std::shared_ptr<const Config> config);

private:
    std::shared_ptr<const Config> config() const;
    void load_state();
    void save_state_if_changed();

    // The file reads of one cycle (sysfs, verbs, host facts), each on a thread of its own
    // so that a read that never returns costs that thread, not the engine.
    struct FileRead;
    struct Reading;
    FileRead read_files(const Config& cfg, bool read_gids, bool read_counters, bool read_port_state);
    static FileRead read_files_now(const Config& cfg, const SysfsReadOptions& opts,
                                   const std::shared_ptr<const Snapshot>& last, const EngineSources& src);
    FileRead gave_up(const Reading& r, std::chrono::milliseconds waited);
    // A finished read: when GIDs and ECN were read, and what the GID and counter reads cost.
    void note_read(const FileRead& r, SteadyClock::time_point started);
    void reap_blocked_reads();
    void log_read_errors(const std::vector<SysfsError>& errors);
    void log_ignored(const std::vector<SysfsError>& ignored);
    // Every alert transition of the last update, at its priority, with RULE=, OBJECT=,
    // DEVICE=, SEVERITY=, SCOPE= for the journal.
    void log_transitions(const std::vector<AlertTransition>& transitions);

    EngineSources src_;
    SnapshotStore& store_;
    std::shared_ptr<spdlog::logger> log_;

    mutable std::mutex mu_;  // guards config_, daemon_, the wake and GID flags, stopping_
    std::condition_variable cv_;
    std::shared_ptr<const Config> config_;
    DaemonStatus daemon_;
    bool log_alerts_ = true;
    bool woken_ = false;
    bool stopping_ = false;
    // GID tables change only when addresses, links or bonds do, and rxe has 1024 slots per
    // port: they are read on the two cycles after a wake (the kernel updates them from a
    // work queue, so the first may still be stale) and every kGidRefresh otherwise.
    int gid_reads_due_ = 1;
    // Set by wake(): the next cycle skips the GID tables (rxe: 1024 slots a port, seconds
    // under emulation) so that a port going down is judged within milliseconds, and the
    // cycles that read them follow at once.
    bool gids_after_this_cycle_ = false;
    // Set by wake(): the next cycle reads the ports' state, physical state and rate, which
    // between link events are carried over for RoCE ports over watched links.
    bool port_state_due_ = false;
    // When the first wake of a burst came, and whether links (not only probe results) woke
    // the engine: link wakes after the first are spaced kLinkWakeSpacing apart, so that a
    // flapping link costs a cycle a second, not one per event.
    SteadyClock::time_point woken_at_{};
    bool link_woken_ = false;

    // Touched only by the collecting thread.
    // A GID read after a wake reopens every kept file (128 NICs: over a second on a fixture
    // tree). A link that flaps wakes the engine again and again: such reads get a share of
    // the time (kGidShare), after a few back to back (kGidBurst), and a read put off is made
    // when the share allows, so the tables after the last event are always read.
    DutyBudget gid_budget_;
    std::optional<SteadyClock::time_point> collect_again_at_;  // a GID read due then
    // The counter files: kCounterShare of a core, charged with what reading them took.
    DutyBudget counter_budget_;
    SteadyClock::time_point link_cycle_at_{};  // the last cycle a link wake asked for
    // DCB answers per netdev and when they were asked for: DCB settings change rarely, and on
    // mlx5 each answer costs firmware register reads, so a netdev is asked at most every
    // kDcbRefresh (and at once after a wake: links changed).
    std::map<std::string, std::pair<SteadyClock::time_point, DcbState>> dcb_cache_;
    // Transceiver modules likewise, every kModuleRefresh: temperature and optical power move
    // over minutes, and on mlx5 each 128-byte page is a firmware register read (MCIA).
    std::map<std::string, std::pair<SteadyClock::time_point, Transceiver>> module_cache_;
    // lldpd's last answer, when it was asked and at which socket.
    std::optional<LldpAnswer> lldp_answer_;
    SteadyClock::time_point lldp_asked_at_{};
    std::string lldp_socket_;
    double lldp_seconds_ = 0;
    std::unique_ptr<TrendTracker> trends_;
    std::unique_ptr<AlertTracker> alerts_;
    std::unique_ptr<StateStore> state_;
    // Load and save health, published as the "state" collector; last_error stays after a
    // later success so a set-aside file is not forgotten.
    CollectorStatus state_status_{.name = "state"};
    size_t saved_history_size_ = 0;
    TimePoint saved_last_transition_{};
    uint64_t generation_ = 0;
    SteadyClock::time_point gids_read_at_{};
    SteadyClock::time_point ecn_read_at_{};
    std::shared_ptr<const Snapshot> last_;  // the previous snapshot, for carrying GIDs over
    // Reads that blocked past their deadline, abandoned to their threads; the files they
    // are on are skipped until they return.
    std::vector<std::shared_ptr<Reading>> blocked_;
    std::shared_ptr<const std::set<std::string>> skip_ = std::make_shared<const std::set<std::string>>();
    // sysfs files kept open between cycles: a counter costs one pread (issue 14).
    std::shared_ptr<SysfsFileCache> sysfs_files_ = std::make_shared<SysfsFileCache>();
    std::map<std::string, TimePoint> last_success_;  // by collector name
    // Each unreadable file is logged once: at most 10 new ones a cycle, 4,096 remembered.
    logging::OnceLimiter logged_unreadable_{10, 4096};
    logging::OnceLimiter logged_ignored_{10, 4096};
    std::atomic<bool> stop_requested_{false};  // ends a wait on a blocked read
};

}  // namespace rocewatch
