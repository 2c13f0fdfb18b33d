// Keeps the cluster inventory loaded: reads it at start, on SIGHUP and when the file changes (inotify), and publishes
// the state.
#pragma once

#include <spdlog/logger.h>
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/model/cluster.hpp"
#include "daemon/model/config.hpp"
#include "util/fd.hpp"

namespace rocewatch {

// What this node looks like, for finding it in the inventory: its hostname and addresses.
struct LocalIdentity {
    std::string hostname;
    std::vector<std::string> addresses;
};

class InventoryKeeper {
public:
    // `path` "" keeps no inventory. `identity` is asked on every load and every few seconds
    // (an address that comes later still finds us); `listen_port` is our HTTP port.
    InventoryKeeper(std::string path, uint16_t listen_port, std::function<LocalIdentity()> identity,
                    std::shared_ptr<spdlog::logger> log);
    ~InventoryKeeper();
    InventoryKeeper(const InventoryKeeper&) = delete;
    InventoryKeeper& operator=(const InventoryKeeper&) = delete;

    // The watcher thread: inotify on the file's directory, so an editor's write to a temporary
    // file renamed over it is seen as well as a write in place. It runs while a path is set:
    // from start(), or from the reload(path) after it that names the first.
    void start();
    void stop();
    [[nodiscard]] bool running() const;

    // Reads the file now (SIGHUP); with a new path when the config named another one.
    void reload(const std::string& path);
    void reload();

    std::shared_ptr<const ClusterState> latest() const;
    // Bumped whenever the entries or this node's place among them change.
    uint64_t generation() const { return generation_.load(); }

private:
    void load_locked();
    // The file as it was when last loaded (symlinks followed: dev, inode, size, mtime); a
    // different one is loaded again. Catches what the directory's events do not name: a
    // symlink swapped in another directory, as Kubernetes updates a mounted ConfigMap.
    struct FileId {
        dev_t dev = 0;
        ino_t ino = 0;
        off_t size = -1;
        int64_t mtime_ns = 0;
        bool operator==(const FileId&) const = default;
    };
    static std::optional<FileId> file_id(const std::string& path);
    bool moved_locked() const { return file_id(path_) != loaded_id_; }
    std::optional<FileId> loaded_id_;
    void refind_self_locked();
    void arm_watch_locked();
    void start_thread_locked();
    void loop();

    uint16_t listen_port_;
    std::function<LocalIdentity()> identity_;
    std::shared_ptr<spdlog::logger> log_;

    mutable std::mutex mu_;  // all below but the atomics
    bool wanted_ = false;    // start() was called, stop() was not
    std::string path_;
    std::shared_ptr<const ClusterState> state_;
    Fd inotify_;
    Fd stop_event_;  // an eventfd stop() writes: the thread sleeps in poll() until there is work
    int watch_ = -1;
    std::atomic<uint64_t> generation_{0};
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

// The peers the inventory adds to the configured ones: the ring successors of this node,
// leaving out any whose address a [[peers]] entry already has (configured peers win). Empty
// while this node is not found in the inventory.
std::vector<PeerConfig> inventory_peers(const ClusterState& state, const Config& c);

// The rotating peers of round `round` ([cluster] rotating_peers of them, see rotating_peers in
// inventory.hpp), leaving out configured peers as above; each from_inventory and rotating.
std::vector<PeerConfig> rotating_inventory_peers(const ClusterState& state, const Config& c, uint64_t round);

}  // namespace rocewatch
