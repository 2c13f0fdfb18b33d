// Runs the configured probes towards each peer and rail on their intervals, one at a time.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/core/probe_store.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/probe.hpp"
#include "probes/deadline.hpp"

namespace rocewatch {

// One probe to run: towards which peer, over which rail ("" = the peer's control host).
struct ProbeJob {
    PeerConfig peer;
    std::optional<PeerRailConfig> rail;
    ProbeKind kind = ProbeKind::tcp_lat;
    // On-demand callers (GET /probe) bound the probe by their own timeout; the earlier of
    // this and the kind's configured budget applies.
    std::optional<std::chrono::steady_clock::time_point> deadline;
};

// What the scheduler needs from the outside world, injected so tests drive it without
// sockets or clocks.
struct ProbeSchedulerDeps {
    // Runs one probe with the peer's hello in hand; must return by `deadline` (pulled in
    // when the scheduler stops), never throw.
    std::function<ProbeResult(const ProbeJob&, const PeerHello&, Deadline deadline)> run;
    // GET /api/v1/peer/hello of the peer; on failure a PeerState with hello_error set.
    std::function<PeerState(const PeerConfig&, SteadyClock::time_point deadline)> hello;
    // Fraction (0..1) of the rail's link rate real traffic uses now; nullopt when unknown.
    std::function<std::optional<double>(const ProbeJob&)> rail_utilisation = [](const ProbeJob&) {
        return std::optional<double>{};
    };
    // Kinds this build has a runner for (RDMA needs libibverbs, UCX libucp).
    std::function<bool(ProbeKind)> available = [](ProbeKind k) { return is_tcp_kind(k); };
    // The rails of a peer taken from the inventory, matched from its hello
    // (daemon/cluster/rail_match); none: its probes go to its control host.
    std::function<std::vector<PeerRailConfig>(const PeerConfig&, const PeerHello&)> match_rails =
        [](const PeerConfig&, const PeerHello&) { return std::vector<PeerRailConfig>{}; };
    // The inventory's rotating peers of a round under the running config ([cluster]
    // rotating_peers; round = wall-clock time / rotate_every, the same on every node); none
    // without an inventory.
    std::function<std::vector<PeerConfig>(const Config&, uint64_t round)> rotating = [](const Config&, uint64_t) {
        return std::vector<PeerConfig>{};
    };
    // The node's probe budget (probes/budget.hpp): nullopt when a run may start (and is
    // counted), else why not; and the payload bytes a run moved.
    std::function<std::optional<std::string>()> admit = [] { return std::optional<std::string>{}; };
    std::function<void(uint64_t bytes)> charge = [](uint64_t) {};
    // Bandwidth-probe bulk through this node (ProbeBudget::bulk): a mark held while one of our
    // bandwidth runs moves it, and whether any moves now (ours, or a peer's session on our data
    // port). A scheduled latency probe is put off while bulk moves: it would measure the queue.
    std::function<std::shared_ptr<void>()> mark_bulk = [] { return std::shared_ptr<void>(); };
    std::function<bool()> moving_bulk = [] { return false; };
    std::function<SteadyClock::time_point()> now = [] { return SteadyClock::now(); };
    std::function<TimePoint()> wall_now = [] { return Clock::now(); };
};

class ProbeScheduler {
public:
    // How long a peer's hello is trusted before it is asked again.
    static constexpr std::chrono::seconds kHelloMaxAge{60};
    // A scheduled probe the peer refused as busy (serving another peer's session) is tried
    // again after this plus up to as much again at random, or its interval if shorter:
    // not a whole interval later (a bandwidth probe's is long), and not all callers at once.
    static constexpr std::chrono::seconds kBusyRetry{5};
    // How long the result of a kind not in probes.enabled, run on demand, is kept and judged.
    static constexpr std::chrono::minutes kOnDemandKeep{15};

    ProbeScheduler(std::shared_ptr<const Config> config, ProbeSchedulerDeps deps, ProbeStore& store,
                   std::shared_ptr<spdlog::logger> log, uint64_t seed = std::random_device{}());
    ~ProbeScheduler();
    ProbeScheduler(const ProbeScheduler&) = delete;
    ProbeScheduler& operator=(const ProbeScheduler&) = delete;

    void start();  // the worker thread
    void stop();   // prompt: the running probe's deadline is pulled in; idempotent

    // Runs every scheduled probe due at `now` on the calling thread, then the on-demand
    // queue; returns when the next scheduled probe is due. The worker loops over this;
    // tests call it directly with their own clock.
    SteadyClock::time_point run_due(SteadyClock::time_point now);

    // Queues an on-demand probe for the worker; the future is ready when it has run.
    // nullopt when the queue is full (one waiting on-demand probe per kind of caller is
    // plenty: the HTTP handlers answer 429/503).
    std::optional<std::shared_future<ProbeResult>> submit(ProbeJob job);

    // The job for peer/rail/kind from the config; nullopt when no such peer or rail.
    std::optional<ProbeJob> find_job(const std::string& peer, const std::string& rail, ProbeKind kind) const;

    // Kinds this scheduler can run (those it has a runner for).
    bool runnable(ProbeKind k) const { return deps_.available(k); }

    void apply_config(std::shared_ptr<const Config> config);

private:
    struct Entry {
        ProbeJob job;
        SteadyClock::time_point due;
    };
    ProbeResult execute(const ProbeJob& job, bool scheduled);
    void plan(SteadyClock::time_point now);
    void add_entries(PeerConfig peer, SteadyClock::time_point now);
    SteadyClock::time_point rotate(SteadyClock::time_point now);
    void drop_rotating();
    void replan_matched(SteadyClock::time_point now);
    SteadyClock::time_point expire_on_demand(SteadyClock::time_point now);
    SteadyClock::duration jitter(ProbeKind k);
    SteadyClock::duration next_after(const ProbeJob& job, const ProbeResult& r);
    const PeerHello* fresh_hello(const ProbeJob& job, SteadyClock::time_point now, ProbeResult& failed);

    ProbeSchedulerDeps deps_;
    ProbeStore& store_;
    std::shared_ptr<spdlog::logger> log_;
    std::mt19937_64 rng_;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::shared_ptr<const Config> config_;
    bool replan_ = true;
    bool stopping_ = false;
    std::atomic<bool> cancel_{false};  // the running probe's Deadline::cancel
    struct Pending {
        ProbeJob job;
        std::promise<ProbeResult> done;
    };
    std::deque<Pending> queue_;

    // Worker-thread state; cur_ is the config the worker runs with (config_ under mu_).
    std::shared_ptr<const Config> cur_;
    std::vector<Entry> entries_;
    std::map<std::string, std::pair<PeerState, SteadyClock::time_point>> hellos_;
    std::vector<ProbeKind> kinds_;                                // enabled and runnable
    std::map<std::string, std::vector<PeerRailConfig>> matched_;  // inventory peers' rails, by name
    std::set<std::string> rematch_;                               // peers whose matched rails changed
    std::vector<PeerConfig> rotating_;                            // this round's rotating peers
    std::optional<uint64_t> round_;                               // the round they are of
    std::thread thread_;
};

}  // namespace rocewatch
