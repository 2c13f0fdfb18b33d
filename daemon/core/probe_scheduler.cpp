// Runs the configured probes towards each peer and rail on their intervals, one at a time.
//
// One worker thread runs every probe, scheduled and on demand, so there is never more than
// one probe (bandwidth or not) in flight from this node: a latency probe never measures the
// queue a bandwidth probe built, and a node never sends two bulk transfers at once. The cost
// is that a latency probe due during a bandwidth run starts up to its duration late.
#include "daemon/core/probe_scheduler.hpp"
#include "util/thread_name.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace rocewatch {
namespace {

std::string percent(double f) { return std::to_string(static_cast<int>(std::lround(f * 100))) + "%"; }

// A failed hello or probe that says the peer is not there: ask it again next time.
bool peer_gone(const std::string& reason) {
    return reason == "peer_unreachable" || reason == "connection_refused" || reason == "timeout";
}

}  // namespace

ProbeScheduler::ProbeScheduler(std::shared_ptr<const Config> config, ProbeSchedulerDeps deps, ProbeStore& store,
                               std::shared_ptr<spdlog::logger> log, uint64_t seed)
    : deps_(std::move(deps)),
      store_(store),
      log_(std::move(log)),
      rng_(seed),
      config_(std::move(config)),
      cur_(config_) {}

ProbeScheduler::~ProbeScheduler() { stop(); }

void ProbeScheduler::start() {
    std::lock_guard lock(mu_);
    if (thread_.joinable()) return;
    stopping_ = false;
    cancel_ = false;
    thread_ = std::thread([this] {
        name_this_thread("probe-sched");
        for (;;) {
            auto next = run_due(deps_.now());
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, next - deps_.now(), [&] { return stopping_ || !queue_.empty() || replan_; });
            if (stopping_) return;
        }
    });
}

void ProbeScheduler::stop() {
    std::thread t;
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        cancel_ = true;
        t = std::move(thread_);
        // Whoever waits on a queued probe gets an answer, not a broken promise.
        for (auto& p : queue_) {
            ProbeResult r;
            r.kind = p.job.kind;
            r.peer = p.job.peer.name;
            r.rail = p.job.rail ? p.job.rail->name : "";
            r.reason = kReasonStopped;
            r.detail = "the daemon is stopping";
            p.done.set_value(std::move(r));
        }
        queue_.clear();
    }
    cv_.notify_all();
    if (t.joinable()) t.join();
}

void ProbeScheduler::apply_config(std::shared_ptr<const Config> config) {
    {
        std::lock_guard lock(mu_);
        config_ = std::move(config);
        replan_ = true;
    }
    cv_.notify_all();
}

std::optional<ProbeJob> ProbeScheduler::find_job(const std::string& peer, const std::string& rail,
                                                 ProbeKind kind) const {
    std::lock_guard lock(mu_);
    for (const auto& p : config_->peers) {
        if (p.name != peer) continue;
        // Peer-level kinds (all rails, UCX's own lanes) and peers without rails: no rail.
        if (is_peer_level_kind(kind) || p.rails.empty()) {
            if (!rail.empty()) return std::nullopt;
            if (kind == ProbeKind::rdma_multirail_bw && p.rails.empty()) return std::nullopt;
            return ProbeJob{p, std::nullopt, kind};
        }
        for (const auto& r : p.rails)
            if (r.name == rail || rail.empty()) return ProbeJob{p, r, kind};
    }
    return std::nullopt;
}

std::optional<std::shared_future<ProbeResult>> ProbeScheduler::submit(ProbeJob job) {
    // An operator's POST and the GET /probe scrapes that may wait at once (3, peer_routes.cpp).
    // More would only queue up probes whose callers have given up.
    constexpr size_t kMaxQueued = 4;
    std::shared_future<ProbeResult> f;
    {
        std::lock_guard lock(mu_);
        if (stopping_ || queue_.size() >= kMaxQueued) return std::nullopt;
        queue_.push_back(Pending{std::move(job), {}});
        f = queue_.back().done.get_future().share();
    }
    cv_.notify_all();
    return f;
}

SteadyClock::duration ProbeScheduler::jitter(ProbeKind k) {
    auto j = probe_timing(cur_->probes, k).jitter;
    if (j.count() <= 0) return SteadyClock::duration::zero();
    std::uniform_int_distribution<int64_t> d(0, j.count());
    return std::chrono::milliseconds(d(rng_));
}

SteadyClock::duration ProbeScheduler::next_after(const ProbeJob& job, const ProbeResult& r) {
    const auto interval = SteadyClock::duration(probe_timing(cur_->probes, job.kind).interval);
    // Not run for something busy that passes within seconds (the peer serving another session,
    // bulk moving through this node): soon again, not a whole interval later.
    const bool busy = r.reason == kReasonPeerBusy || (r.reason == kReasonSkippedBusy && !is_bandwidth_kind(job.kind));
    if (!busy || interval <= kBusyRetry) return interval + jitter(job.kind);
    std::uniform_int_distribution<int64_t> d(0, std::chrono::milliseconds(kBusyRetry).count());
    return std::min<SteadyClock::duration>(interval, kBusyRetry + std::chrono::milliseconds(d(rng_)));
}

void ProbeScheduler::add_entries(PeerConfig peer, SteadyClock::time_point now) {
    if (peer.from_inventory)
        if (auto it = matched_.find(peer.name); it != matched_.end()) peer.rails = it->second;
    if (peer.rotating) {
        // Latency only, each kind once early in the round (then on its interval while the round
        // lasts): a rotating peer is there to cover paths, bandwidth stays with the ring.
        // Spread over the round's first half; once its hello matched its rails, at once.
        const bool matched = !peer.rails.empty();
        const int64_t spread = matched ? 0 : std::chrono::milliseconds(cur_->cluster.rotate_every).count() / 2;
        std::uniform_int_distribution<int64_t> d(0, std::max<int64_t>(spread, 0));
        for (ProbeKind k : kinds_) {
            if (is_bandwidth_kind(k)) continue;
            if (is_peer_level_kind(k) || peer.rails.empty()) {
                if (is_tcp_kind(k) || is_peer_level_kind(k))
                    entries_.push_back({ProbeJob{peer, std::nullopt, k}, now + std::chrono::milliseconds(d(rng_))});
            } else {
                for (const auto& r : peer.rails)
                    entries_.push_back({ProbeJob{peer, r, k}, now + std::chrono::milliseconds(d(rng_))});
            }
        }
        return;
    }
    for (ProbeKind k : kinds_) {
        if (is_peer_level_kind(k)) {
            // All rails at once needs two of them to say anything a per-rail run does not.
            if (k != ProbeKind::rdma_multirail_bw || peer.rails.size() >= 2)
                entries_.push_back({ProbeJob{peer, std::nullopt, k}, now + jitter(k)});
        } else if (!peer.rails.empty()) {
            for (const auto& r : peer.rails) entries_.push_back({ProbeJob{peer, r, k}, now + jitter(k)});
        } else if (is_tcp_kind(k)) {
            // TCP can go to the peer's control host; RDMA needs a rail.
            entries_.push_back({ProbeJob{peer, std::nullopt, k}, now + jitter(k)});
        }
    }
}

void ProbeScheduler::plan(SteadyClock::time_point now) {
    // A job planned before keeps its turn: a reload (a config push to the whole cluster, an
    // inventory edit) that re-ran every bandwidth probe within its jitter would flood every
    // rail at once. Its next run is still no later than a whole new interval from now.
    const auto key = [](const ProbeJob& j) { return std::tuple{j.peer.name, j.rail ? j.rail->name : "", j.kind}; };
    std::map<std::tuple<std::string, std::string, ProbeKind>, SteadyClock::time_point> planned;
    for (const auto& e : entries_)
        if (!e.job.peer.rotating) planned.emplace(key(e.job), e.due);
    entries_.clear();
    kinds_.clear();
    for (const auto& name : cur_->probes.enabled) {
        auto k = probe_kind_from_string(name);
        if (!k) continue;
        if (runnable(*k))
            kinds_.push_back(*k);
        else
            log_->warn("probe kind {} is enabled but not available in this build; not scheduled", name);
    }
    // Results and hellos of peers the config no longer names would otherwise stay for good.
    std::set<std::string> names;
    for (const auto& peer : cur_->peers) names.insert(peer.name);
    std::erase_if(matched_, [&](const auto& kv) { return !names.count(kv.first); });
    rematch_.clear();
    rotating_.clear();
    round_.reset();  // the next rotate() adds this round's rotating peers again
    for (const auto& peer : cur_->peers) add_entries(peer, now);
    for (auto& e : entries_) {
        const auto it = planned.find(key(e.job));
        if (it == planned.end()) continue;
        const auto t = probe_timing(cur_->probes, e.job.kind);
        e.due = std::min(it->second, now + SteadyClock::duration(t.interval) + SteadyClock::duration(t.jitter));
    }
    hellos_.clear();
    store_.update([&](ProbeBook& b) {
        if (cur_->cluster.rotating_peers == 0) b.mesh.clear();
        b.rotating.clear();
        b.round.reset();
        std::erase_if(b.results, [&](const auto& kv) { return !names.count(kv.first.peer); });
        std::erase_if(b.latency_totals, [&](const auto& kv) { return !names.count(kv.first.peer); });
        std::erase_if(b.peers, [&](const auto& kv) { return !names.count(kv.first); });
    });
}

// This round's rotating peers out: their entries, hellos, matched rails and peer states (their
// results live on in the mesh summary).
void ProbeScheduler::drop_rotating() {
    std::set<std::string> names;
    for (const auto& p : rotating_) names.insert(p.name);
    std::erase_if(entries_, [&](const Entry& e) { return e.job.peer.rotating; });
    for (const auto& n : names) {
        hellos_.erase(n);
        matched_.erase(n);
        rematch_.erase(n);
    }
    store_.update([&](ProbeBook& b) {
        std::erase_if(b.peers, [&](const auto& kv) { return names.count(kv.first); });
        b.rotating.clear();
        b.round.reset();
    });
    rotating_.clear();
}

// At a round's start, swaps the rotating peers for the new round's. Returns when the next
// round starts (or an hour on, when nothing rotates).
SteadyClock::time_point ProbeScheduler::rotate(SteadyClock::time_point now) {
    const int64_t every = std::chrono::milliseconds(cur_->cluster.rotate_every).count();
    if (cur_->cluster.rotating_peers == 0 || every <= 0) {
        if (!rotating_.empty()) drop_rotating();
        return now + std::chrono::hours(1);
    }
    const int64_t wall_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deps_.wall_now().time_since_epoch()).count();
    const auto round = static_cast<uint64_t>(std::max<int64_t>(wall_ms, 0) / every);
    const auto next_round = now + std::chrono::milliseconds(every - std::max<int64_t>(wall_ms, 0) % every);
    if (round_ == round) return next_round;
    round_ = round;
    drop_rotating();
    std::set<std::string> fixed;
    for (const auto& p : cur_->peers) fixed.insert(p.name);
    for (auto& p : deps_.rotating(*cur_, round)) {
        if (fixed.count(p.name)) continue;  // a ring or configured peer: probed as such
        p.from_inventory = p.rotating = true;
        rotating_.push_back(p);
        add_entries(std::move(p), now);
    }
    store_.update([&](ProbeBook& b) {
        b.round = round;
        for (const auto& p : rotating_) b.rotating[p.name] = p.address;
    });
    if (!rotating_.empty()) log_->debug("rotation round {}: {} rotating peer(s)", round, rotating_.size());
    return next_round;
}

// An inventory peer's hello gave it other rails: its probes now go over them, and results
// on rails it no longer has (or towards its control host) are dropped.
void ProbeScheduler::replan_matched(SteadyClock::time_point now) {
    for (const auto& name : rematch_) {
        std::erase_if(entries_, [&](const Entry& e) { return e.job.peer.name == name; });
        for (const auto& peer : cur_->peers)
            if (peer.name == name) add_entries(peer, now);
        for (const auto& peer : rotating_)
            if (peer.name == name) add_entries(peer, now);
        std::set<std::string> rails;
        for (const auto& r : matched_[name]) rails.insert(r.name);
        if (rails.empty()) rails.insert("");
        store_.update([&](ProbeBook& b) {
            std::erase_if(b.results,
                          [&](const auto& kv) { return kv.first.peer == name && !rails.count(kv.first.rail); });
        });
        log_->info("peer {}: probing over {} matched rail(s)", name, matched_[name].size());
    }
    rematch_.clear();
}

const PeerHello* ProbeScheduler::fresh_hello(const ProbeJob& job, SteadyClock::time_point now, ProbeResult& failed) {
    auto it = hellos_.find(job.peer.name);
    if (it != hellos_.end() && it->second.first.hello_ok && now - it->second.second < kHelloMaxAge)
        return &*it->second.first.hello;
    auto deadline = now + std::min<SteadyClock::duration>(std::chrono::seconds(2),
                                                          probe_timing(cur_->probes, job.kind).budget);
    // An on-demand caller (GET /probe) gives up at its own deadline: so does the hello.
    if (job.deadline) deadline = std::min(deadline, *job.deadline);
    PeerState st;
    try {
        st = deps_.hello(job.peer, deadline);
    } catch (const std::exception& e) {
        st.hello_ok = false;
        st.hello_error = "internal_error";
        st.hello.reset();
        log_->error("hello to {}: {}", job.peer.name, e.what());
    }
    st.name = job.peer.name;
    st.address = job.peer.address;
    st.hello_at = deps_.wall_now();
    store_.update([&](ProbeBook& b) { b.peers[st.name] = st; });
    hellos_[job.peer.name] = {st, now};
    if (st.hello_ok && st.hello && job.peer.from_inventory) {
        auto rails = deps_.match_rails(job.peer, *st.hello);
        auto& have = matched_[job.peer.name];
        if (rails != have) {
            have = std::move(rails);
            rematch_.insert(job.peer.name);
        }
    }
    if (st.hello_ok && st.hello) return &*hellos_[job.peer.name].first.hello;
    failed.reason = st.hello_error.empty() ? "protocol_error" : st.hello_error;
    failed.detail = "hello to " + job.peer.name + " (" + job.peer.address + ") failed: " + failed.reason +
                    (st.hello_detail.empty() ? "" : " (" + st.hello_detail + ")");
    return nullptr;
}

ProbeResult ProbeScheduler::execute(const ProbeJob& job, bool scheduled) {
    auto t0 = deps_.now();
    ProbeResult r;
    r.kind = job.kind;
    r.peer = job.peer.name;
    r.rail = job.rail ? job.rail->name : "";
    r.started = deps_.wall_now();
    auto finish = [&](ProbeResult res) {
        if (res.duration_seconds == 0) res.duration_seconds = std::chrono::duration<double>(deps_.now() - t0).count();
        if (!res.success && peer_gone(res.reason)) hellos_.erase(job.peer.name);
        if (job.peer.rotating)
            store_.update([&](ProbeBook& b) { b.add_mesh(res, 2 * cur_->cluster.rotate_every); });
        else if (res.reason != kReasonStopped)
            store_.update([&](ProbeBook& b) { b.add(res); });
        log_->debug("probe {} to {}{}{}: {}", to_string(res.kind), res.peer, res.rail.empty() ? "" : "/", res.rail,
                    res.success ? "ok" : res.reason);
        return res;
    };

    const ProbeTiming timing = probe_timing(cur_->probes, job.kind);
    if (scheduled && timing.busy_fraction) {
        double limit = *timing.busy_fraction;
        if (auto used = deps_.rail_utilisation(job); used && *used > limit) {
            r.reason = kReasonSkippedBusy;
            r.detail = "rail " + (r.rail.empty() ? std::string("to ") + r.peer : r.rail) + " already carries " +
                       percent(*used) + " of its link rate (busy_fraction " + percent(limit) +
                       "): bandwidth probe skipped so it does not compete with real traffic";
            log_->info("{}", r.detail);
            return finish(std::move(r));
        }
    }
    const PeerHello* hello = fresh_hello(job, t0, r);
    if (!hello) return finish(std::move(r));
    // A rotating peer's first hello matched its rails: it is probed over them at once
    // (replan_matched), not to its control host as well; nothing to record.
    if (job.peer.rotating && !job.rail && rematch_.count(job.peer.name)) return r;
    if (scheduled && !is_bandwidth_kind(job.kind) && deps_.moving_bulk()) {
        r.reason = kReasonSkippedBusy;
        r.detail = "a peer's bandwidth probe is moving bulk through this node: " + std::string(to_string(job.kind)) +
                   " put off so it does not measure that queue";
        log_->debug("probe {} to {} not run: {}", to_string(job.kind), job.peer.name, r.detail);
        return finish(std::move(r));
    }
    if (auto why = deps_.admit()) {
        r.reason = kReasonSkippedBudget;
        r.detail = *why;
        log_->debug("probe {} to {} not run: {}", to_string(job.kind), job.peer.name, *why);
        return finish(std::move(r));
    }
    try {
        auto deadline = t0 + SteadyClock::duration(timing.budget);
        if (job.deadline) deadline = std::min(deadline, *job.deadline);
        const auto bulk = is_bandwidth_kind(job.kind) ? deps_.mark_bulk() : nullptr;
        ProbeResult res = deps_.run(job, *hello, Deadline{deadline, &cancel_});
        deps_.charge(res.bytes);
        if (!res.success && cancel_) {
            res.detail = "the daemon stopped or reloaded during the probe (" + res.reason + ": " + res.detail + ")";
            res.reason = kReasonStopped;
        }
        res.peer = r.peer;
        res.rail = r.rail;
        res.kind = job.kind;
        if (res.started == TimePoint{}) res.started = r.started;
        return finish(std::move(res));
    } catch (const std::exception& e) {
        r.reason = "internal_error";
        r.detail = e.what();
        return finish(std::move(r));
    }
}

// A kind that runs only when asked (POST /api/v1/probes/run, not in probes.enabled) has no
// next run to replace its result: it is shown and judged for kOnDemandKeep after it ran, then
// dropped, so a one-off that failed does not hold its alert for good. Returns when the next
// such result is due to go.
SteadyClock::time_point ProbeScheduler::expire_on_demand(SteadyClock::time_point now) {
    const TimePoint wall = deps_.wall_now();
    const auto scheduled = [&](ProbeKind k) { return std::find(kinds_.begin(), kinds_.end(), k) != kinds_.end(); };
    const auto expired = [&](const ProbeKey& k, const std::deque<ProbeResult>& results) {
        return !scheduled(k.kind) && (results.empty() || wall - results.back().started >= kOnDemandKeep);
    };
    auto next = SteadyClock::time_point::max();
    bool any = false;
    for (const auto& [k, results] : store_.latest()->results) {
        if (expired(k, results)) {
            any = true;
        } else if (!scheduled(k.kind)) {
            const auto left = std::chrono::ceil<SteadyClock::duration>(kOnDemandKeep - (wall - results.back().started));
            next = std::min(next, now + left);
        }
    }
    if (any)
        store_.update([&](ProbeBook& b) {
            std::erase_if(b.results, [&](const auto& kv) { return expired(kv.first, kv.second); });
        });
    return next;
}

SteadyClock::time_point ProbeScheduler::run_due(SteadyClock::time_point now) {
    {
        std::lock_guard lock(mu_);
        if (replan_) {
            replan_ = false;
            cur_ = config_;
            plan(now);
        }
    }
    auto drain = [&] {
        for (;;) {
            Pending p;
            {
                std::lock_guard lock(mu_);
                if (queue_.empty() || stopping_) return;
                p = std::move(queue_.front());
                queue_.pop_front();
            }
            p.done.set_value(execute(p.job, false));
        }
    };
    drain();
    const auto next_round = rotate(now);
    for (auto& e : entries_) {
        {
            std::lock_guard lock(mu_);
            if (stopping_ || replan_) break;
        }
        if (e.due > now) continue;
        const ProbeResult r = execute(e.job, true);
        now = deps_.now();
        e.due = now + next_after(e.job, r);
        drain();
        if (!rematch_.empty()) break;  // entries_ changes under this loop
    }
    if (!rematch_.empty()) replan_matched(now);
    auto next = std::max(std::min(next_round, expire_on_demand(now)), now);
    for (const auto& e : entries_) next = std::min(next, e.due);
    return next;
}

}  // namespace rocewatch
