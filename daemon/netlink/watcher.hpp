// Keeps a live, assembled view of the node's links and addresses from rtnetlink events.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/model/snapshot.hpp"
#include "daemon/netlink/history.hpp"

struct nl_sock;
namespace spdlog {
class logger;
}

namespace rocewatch {

class NetlinkWatcher {
public:
    using OnChange = std::function<void()>;

    // Opens the sockets and does a first full dump; throws std::runtime_error with a clear
    // message on failure. The event socket is subscribed here, before that dump, so no
    // change between create() and start() is lost: it is picked up when the thread starts.
    // `log` may be null (logs are dropped). `on_change` runs on the event thread after each
    // new view is stored; it must not call stop() or destroy the watcher.
    static std::unique_ptr<NetlinkWatcher> create(std::shared_ptr<spdlog::logger> log, OnChange on_change);
    ~NetlinkWatcher();  // stops the thread

    NetlinkWatcher(const NetlinkWatcher&) = delete;
    NetlinkWatcher& operator=(const NetlinkWatcher&) = delete;

    // Starts the event thread (RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR).
    // A second call while running does nothing; start() after stop() resumes.
    void start();
    // Wakes the event thread and joins it; returns within a few milliseconds unless a
    // dump or on_change() is in progress. Idempotent.
    void stop();

    std::vector<Link> links() const;  // latest assembled view, thread-safe copy
    uint64_t events() const;          // netlink event messages seen
    // Admin/carrier transitions (from every link event, so a down-and-up within one burst
    // is kept) and address changes (between dumps), oldest first, bounded.
    std::vector<LinkEvent> link_events() const;
    uint64_t resyncs() const;  // re-dumps after ENOBUFS overruns

    // Synchronous fresh dump of links and addresses; also becomes the latest view.
    // Throws std::runtime_error when the kernel cannot be asked or answers with an error.
    std::vector<Link> dump();

    // Test hook: sets the event socket's receive buffer (bytes; the kernel enforces a
    // minimum of a few KiB) so tests can force an ENOBUFS overrun. Not for production use.
    void set_event_buffer_size_for_testing(int bytes);

private:
    struct NlSockDeleter {
        void operator()(nl_sock* s) const noexcept;
    };
    using NlSockPtr = std::unique_ptr<nl_sock, NlSockDeleter>;

    NetlinkWatcher(std::shared_ptr<spdlog::logger> log, OnChange on_change);
    void open();  // sockets, subscriptions, stop eventfd; throws
    void run();   // the event thread
    // Reads everything queued on the event socket without blocking. Returns false on a
    // socket error other than an overrun; sets `overrun` when the kernel dropped events.
    bool drain_events(bool& overrun);
    // Re-dumps and notifies; logs instead of throwing. Returns false when the dump failed.
    bool refresh();
    // Waits on the stop eventfd only; true when stop was requested.
    bool wait_for_stop(int timeout_ms) const;

    std::shared_ptr<spdlog::logger> log_;
    OnChange on_change_;

    NlSockPtr dump_sock_;   // request/response; guarded by dump_mutex_
    NlSockPtr event_sock_;  // multicast subscriptions; read only by the event thread
    int stop_fd_ = -1;      // eventfd written by stop()

    std::mutex dump_mutex_;  // serialises dumps so the stored view is always the newest
    mutable std::mutex view_mutex_;
    std::vector<Link> view_;
    LinkHistory history_;  // guarded by view_mutex_

    std::atomic<uint64_t> events_{0};
    std::atomic<uint64_t> resyncs_{0};

    std::mutex lifecycle_mutex_;  // start()/stop()
    std::thread thread_;
};

}  // namespace rocewatch
