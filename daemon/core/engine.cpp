// The collection loop: read sysfs and netlink, judge, publish one immutable snapshot.
#include "core/engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "rules/rules.hpp"
#include "sysfs/rdma_sysfs.hpp"
#include "sysfs/verbs.hpp"

namespace rocewatch {
namespace {

constexpr auto kGidRefresh = std::chrono::seconds(60);

// A cycle that skipped the GID tables takes them, and the netdev of ports bound where their
// GID 0 points, from the previous snapshot.
// Returns false when a device or port is new, and so has nothing to carry over.
bool carry_over_gids(std::vector<RdmaDevice>& devices, const Snapshot& prev) {
    for (auto& d : devices) {
        const RdmaDevice* old = find_device(prev, d.name);
        if (!old || old->ports.size() != d.ports.size()) return false;
        for (auto& p : d.ports)
            for (const auto& op : old->ports)
                if (op.port == p.port) {
                    p.gids = op.gids;
                    if (p.netdev.empty()) p.netdev = op.netdev;
                }
    }
    return true;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
    : src_(std::move(sources)), store_(store), log_(std::move(log)), config_(std::move(config)) {
    daemon_.started_at = src_.now();
    daemon_.config_source = config_->source;
    daemon_.config_last_reload = daemon_.started_at;
    trends_ = std::make_unique<TrendTracker>();
    alerts_ = std::make_unique<AlertTracker>(config_->daemon.history_limit);
    if (!config_->daemon.state_dir.empty()) {
        state_ = std::make_unique<StateStore>(config_->daemon.state_dir);
        load_state();
    }
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
    const auto t0 = std::chrono::steady_clock::now();
    state_status_.success = state_->save(alerts_->to_json(), &err);
    state_status_.duration_seconds = seconds_since(t0);
    if (state_status_.success) {
        saved_history_size_ = h->size();
        saved_last_transition_ = last;
        if (!was_ok) log_->info("alert state saved again to {}", state_->file().string());
    } else {
        state_status_.last_error = err;
        // Retried every cycle: log the first failure of a run of them, not each one.
        if (was_ok) log_->warn("alert state not saved: {}", err);
    }
}

std::shared_ptr<const Snapshot> Engine::collect_once() {
    auto cfg = config();
    auto snap = std::make_shared<Snapshot>();
    snap->generation = ++generation_;
    snap->version = ROCEWATCH_VERSION;
    snap->config = cfg;

    // sysfs: devices, ports, GIDs, counters.
    auto t0 = std::chrono::steady_clock::now();
    bool read_gids = !last_ || t0 - gids_read_at_ >= kGidRefresh;
    {
        std::lock_guard lock(mu_);
        if (gid_reads_due_ > 0) {
            read_gids = true;
            --gid_reads_due_;
        }
    }
    SysfsReadResult rdma;
    CollectorStatus sysfs_status{.name = "sysfs"};
    try {
        rdma = read_rdma_devices(cfg->daemon.sysfs_root, SysfsReadOptions{.gids = read_gids});
        // A device the last snapshot did not have (rdma link add, a driver reload) has no GIDs
        // to carry over: read them now.
        if (!read_gids && !carry_over_gids(rdma.devices, *last_)) {
            rdma = read_rdma_devices(cfg->daemon.sysfs_root);
            read_gids = true;
        }
        if (read_gids) gids_read_at_ = t0;
        sysfs_status.success = true;
        sysfs_status.read_errors = rdma.read_errors;
        if (!rdma.errors.empty()) sysfs_status.last_error = rdma.errors.back();
    } catch (const std::exception& e) {
        sysfs_status.last_error = e.what();
        log_->error("sysfs collection failed: {}", e.what());
    }
    sysfs_status.duration_seconds = seconds_since(t0);
    snap->devices = std::move(rdma.devices);

    // libibverbs: what sysfs does not say (active/max MTU, speed, width).
    t0 = std::chrono::steady_clock::now();
    CollectorStatus verbs_status{.name = "verbs"};
    auto verbs = enrich_with_verbs(snap->devices);
    verbs_status.success = verbs.errors == 0;
    verbs_status.read_errors = verbs.errors;
    verbs_status.last_error = verbs.last_error;
    verbs_status.duration_seconds = seconds_since(t0);

    // netlink: links, addresses, bonds (the watcher keeps them current between cycles).
    t0 = std::chrono::steady_clock::now();
    CollectorStatus nl_status{.name = "netlink"};
    try {
        snap->links = src_.links();
        nl_status.success = true;
    } catch (const std::exception& e) {
        nl_status.last_error = e.what();
        log_->error("netlink collection failed: {}", e.what());
    }
    nl_status.duration_seconds = seconds_since(t0);
    snap->netlink_events = src_.netlink_events();
    snap->netlink_resyncs = src_.netlink_resyncs();

    // Host facts.
    t0 = std::chrono::steady_clock::now();
    CollectorStatus host_status{.name = "host"};
    try {
        snap->host = read_host_info(cfg->daemon.sysfs_root, cfg->daemon.procfs_root);
        host_status.success = true;
    } catch (const std::exception& e) {
        host_status.last_error = e.what();
    }
    snap->host.ucx_version = src_.ucx_version;
    host_status.duration_seconds = seconds_since(t0);
    snap->collectors = {sysfs_status, verbs_status, nl_status, host_status};

    // The GID index RDMA must use depends on the netdev's addresses, which only netlink knows.
    for (auto& dev : snap->devices)
        for (auto& port : dev.ports) assign_roce_v2_gid(port, ipv4_addresses(find_link(*snap, port.netdev)));

    snap->probes = src_.probes ? src_.probes() : nullptr;
    if (!snap->probes) snap->probes = std::make_shared<const ProbeBook>();

    auto now = src_.now();
    snap->collected_at = now;
    trends_->apply(*snap, now, cfg->thresholds);
    alerts_->update(evaluate_rules(*snap, *cfg), *cfg, now);
    snap->alerts = alerts_->active();
    snap->history = alerts_->history();
    save_state_if_changed();
    if (state_) snap->collectors.push_back(state_status_);

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
    // A burst of netlink events (a bond losing both slaves) should give one cycle, not ten.
    constexpr auto kDebounce = std::chrono::milliseconds(20);
    auto next = std::chrono::steady_clock::now();
    for (;;) {
        {
            std::unique_lock lock(mu_);
            cv_.wait_until(lock, next, [&] { return stopping_ || woken_; });
            if (stopping_) return;
            if (woken_) {
                woken_ = false;
                cv_.wait_for(lock, kDebounce, [&] { return stopping_; });
                if (stopping_) return;
                woken_ = false;
            }
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
        auto now = std::chrono::steady_clock::now();
        if (now >= next) next = now + config()->daemon.interval;
        if (settling) next = std::min(next, now + std::chrono::seconds(1));
    }
}

void Engine::wake() {
    {
        std::lock_guard lock(mu_);
        woken_ = true;
        gid_reads_due_ = 2;
    }
    cv_.notify_all();
}

void Engine::stop() {
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

void Engine::reject_config(std::vector<std::string> errors) {
    {
        std::lock_guard lock(mu_);
        daemon_.config_last_reload_ok = false;
        daemon_.config_last_errors = std::move(errors);
    }
    wake();
}

}  // namespace rocewatch
