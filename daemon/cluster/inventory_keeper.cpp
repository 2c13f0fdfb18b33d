// Keeps the cluster inventory loaded: reads it at start, on SIGHUP and when the file changes (inotify), and publishes
// the state.
#include "daemon/cluster/inventory_keeper.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>

#include "daemon/cluster/inventory.hpp"
#include "util/clock.hpp"
#include "util/host_port.hpp"
#include "util/thread_name.hpp"

namespace rocewatch {
namespace {

// How often this node's identity is compared with the inventory again without a file change
// (an address that arrives after start), and how often a missing directory is looked for.
constexpr auto kRecheck = std::chrono::seconds(5);
// Editors write, rename and chmod in a burst: one read after it settles.
constexpr auto kSettle = std::chrono::milliseconds(100);

std::vector<std::string> targets(const ClusterState& s) {
    std::vector<std::string> out;
    for (const auto& e : s.inventory.entries) out.push_back(e.target);
    return out;
}

}  // namespace

InventoryKeeper::InventoryKeeper(std::string path, uint16_t listen_port, std::function<LocalIdentity()> identity,
                                 std::shared_ptr<spdlog::logger> log)
    : listen_port_(listen_port), identity_(std::move(identity)), log_(std::move(log)), path_(std::move(path)) {
    std::lock_guard lock(mu_);
    auto s = std::make_shared<ClusterState>();
    s->path = path_;
    state_ = std::move(s);
    inotify_.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    stop_event_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!inotify_) log_->warn("inventory: inotify unavailable ({}); changes are read on SIGHUP only", errno);
    if (!path_.empty()) {
        arm_watch_locked();
        load_locked();
    }
}

InventoryKeeper::~InventoryKeeper() { stop(); }

// Adding a watch on a directory already watched returns the same descriptor and queues
// nothing. Only a different one (the directory was replaced, or the path changed) retires the
// old watch, whose removal queues IN_IGNORED for it: the loop takes IN_IGNORED as a change
// only for the watch it holds, or every reload would queue the next one.
void InventoryKeeper::arm_watch_locked() {
    if (!inotify_ || path_.empty()) return;
    const auto dir = std::filesystem::path(path_).parent_path();
    const int wd = inotify_add_watch(inotify_.get(), (dir.empty() ? std::string(".") : dir.string()).c_str(),
                                     IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB |
                                         IN_DELETE_SELF | IN_MOVE_SELF);
    if (watch_ >= 0 && watch_ != wd) inotify_rm_watch(inotify_.get(), watch_);
    watch_ = wd;
}

std::optional<InventoryKeeper::FileId> InventoryKeeper::file_id(const std::string& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileId{st.st_dev, st.st_ino, st.st_size,
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

void InventoryKeeper::load_locked() {
    loaded_id_ = file_id(path_);  // before the read: a change during it is loaded next time
    auto next = std::make_shared<ClusterState>(*state_);
    next->path = path_;
    next->last_attempt = Clock::now();
    ++next->loads;
    if (path_.empty()) {
        next->inventory = {};
        next->last_load_ok = true;
        next->last_error.clear();
    } else {
        auto r = read_inventory(path_);
        if (r.inventory) {
            next->inventory = std::move(*r.inventory);
            next->last_load_ok = true;
            next->last_error.clear();
            next->loaded_at = next->last_attempt;
            for (const auto& w : next->inventory.warnings) log_->warn("inventory {}: {}", path_, w);
        } else {
            next->last_load_ok = false;
            next->last_error = r.error;
            ++next->load_failures;
            log_->error("inventory rejected, keeping the previous one ({} entries): {}", next->inventory.entries.size(),
                        r.error);
        }
    }
    const bool changed = targets(*next) != targets(*state_);
    state_ = std::move(next);
    if (changed) {
        log_->info("inventory {}: {} entries", path_, state_->inventory.entries.size());
        ++generation_;
    }
    refind_self_locked();
}

void InventoryKeeper::refind_self_locked() {
    const LocalIdentity id = identity_ ? identity_() : LocalIdentity{};
    SelfMatch m = find_self(state_->inventory, id.hostname, id.addresses, listen_port_);
    if (m.index == state_->self.index && m.reason == state_->self.reason) return;
    auto next = std::make_shared<ClusterState>(*state_);
    if (m.index != next->self.index) {
        ++generation_;
        if (m.index)
            log_->info("inventory: this node is {} ({})", next->inventory.entries[*m.index].target, m.reason);
        else if (!next->inventory.entries.empty())
            log_->warn("inventory: this node is not in it: {}", m.reason);
    }
    next->self = std::move(m);
    state_ = std::move(next);
}

void InventoryKeeper::reload(const std::string& path) {
    std::lock_guard lock(mu_);
    if (path != path_) {
        path_ = path;
        arm_watch_locked();
    }
    load_locked();
    start_thread_locked();
}

void InventoryKeeper::reload() {
    std::lock_guard lock(mu_);
    load_locked();
}

std::shared_ptr<const ClusterState> InventoryKeeper::latest() const {
    std::lock_guard lock(mu_);
    return state_;
}

void InventoryKeeper::start() {
    std::lock_guard lock(mu_);
    wanted_ = true;
    stopping_ = false;
    uint64_t drained = 0;
    if (stop_event_) (void)!read(stop_event_.get(), &drained, sizeof drained);  // a stop() before
    start_thread_locked();
}

// No inventory, no thread: a node without one has nothing to watch (issue 14's memory). A
// reload that names the first inventory starts it.
void InventoryKeeper::start_thread_locked() {
    if (!wanted_ || path_.empty() || thread_.joinable()) return;
    thread_ = std::thread([this] {
        name_this_thread("inventory");
        loop();
    });
}

bool InventoryKeeper::running() const {
    std::lock_guard lock(mu_);
    return thread_.joinable();
}

void InventoryKeeper::stop() {
    std::thread t;
    {
        std::lock_guard lock(mu_);
        wanted_ = false;
        stopping_ = true;
        t = std::move(thread_);
    }
    const uint64_t one = 1;
    if (stop_event_) (void)!write(stop_event_.get(), &one, sizeof one);
    if (t.joinable()) t.join();
}

void InventoryKeeper::loop() {
    auto next_check = SteadyClock::now() + kRecheck;
    alignas(inotify_event) char buf[16 * 1024];
    while (!stopping_) {
        bool ours = false;
        bool others = false;  // events for other names in the directory: a symlink swap, say
        // Asleep until the file's directory changes, stop() is called or the next recheck is
        // due: no wake-ups in between (without an eventfd, every 200 ms to see a stop).
        const auto until_check = std::chrono::ceil<std::chrono::milliseconds>(next_check - SteadyClock::now());
        const int timeout = stop_event_ ? static_cast<int>(std::clamp<int64_t>(until_check.count(), 0, 60'000)) : 200;
        pollfd p[2] = {{.fd = stop_event_ ? stop_event_.get() : -1, .events = POLLIN, .revents = 0},
                       {.fd = inotify_ ? inotify_.get() : -1, .events = POLLIN, .revents = 0}};
        const int ready = poll(p, 2, timeout);
        if (stopping_) break;
        if (inotify_ && ready > 0 && (p[1].revents & POLLIN)) {
            std::string name;
            int watch = -1;
            {
                std::lock_guard lock(mu_);
                name = std::filesystem::path(path_).filename().string();
                watch = watch_;
            }
            for (;;) {
                const ssize_t n = read(inotify_.get(), buf, sizeof(buf));
                if (n <= 0) break;
                for (ssize_t off = 0; off < n;) {
                    const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
                    if ((ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF)) ||
                        ((ev->mask & IN_IGNORED) && ev->wd == watch) || (ev->len > 0 && name == ev->name))
                        ours = true;
                    else if (ev->len > 0)
                        others = true;
                    off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
                }
            }
        }
        if (ours) {
            std::this_thread::sleep_for(kSettle);
            while (inotify_ && read(inotify_.get(), buf, sizeof(buf)) > 0) {
            }
            std::lock_guard lock(mu_);
            // The directory itself went away or was replaced: watch it again.
            arm_watch_locked();
            load_locked();
        } else if (others) {
            std::lock_guard lock(mu_);
            if (moved_locked()) load_locked();
        }
        if (SteadyClock::now() >= next_check) {
            next_check = SteadyClock::now() + kRecheck;
            std::lock_guard lock(mu_);
            if (watch_ < 0) arm_watch_locked();
            if (moved_locked()) load_locked();  // a symlink changed in a directory not watched
            refind_self_locked();
        }
    }
}

namespace {
std::vector<PeerConfig> peers_at(const ClusterState& state, const Config& c, const std::vector<size_t>& indices,
                                 bool rotating) {
    // A [[peers]] entry wins over the inventory's for the same node (same address) and for the
    // same name: two peers of one name would share one hello and one set of results.
    std::set<std::string> configured;
    for (const auto& p : c.peers) {
        configured.insert(p.address);
        configured.insert(p.name);
    }
    std::vector<PeerConfig> out;
    const auto& entries = state.inventory.entries;
    for (size_t i : indices) {
        const auto& e = entries[i];
        // The target as written names the peer (as Prometheus' instance label does); the address
        // always has its port, "10.0.0.7" meaning 10.0.0.7:9879 (kDefaultInventoryPort).
        const std::string address = host_port(e.host, e.port);
        if (configured.count(address) || configured.count(e.target)) continue;
        out.push_back(PeerConfig{
            .name = e.target, .address = address, .rails = {}, .from_inventory = true, .rotating = rotating});
    }
    return out;
}
}  // namespace

std::vector<PeerConfig> inventory_peers(const ClusterState& state, const Config& c) {
    if (!state.self.index || c.cluster.ring_successors == 0) return {};
    return peers_at(state, c,
                    ring_successors(state.inventory.entries.size(), *state.self.index, c.cluster.ring_successors),
                    false);
}

std::vector<PeerConfig> rotating_inventory_peers(const ClusterState& state, const Config& c, uint64_t round) {
    if (!state.self.index || c.cluster.rotating_peers == 0) return {};
    return peers_at(state, c,
                    rotating_peers(state.inventory.entries.size(), *state.self.index, c.cluster.ring_successors,
                                   c.cluster.rotating_peers, round),
                    true);
}

}  // namespace rocewatch
