// NetlinkWatcher against the real kernel, inside a private network namespace (needs root).
//
// The kernel these tests run on has no bonding module, so bonds are covered here only by
// the parser tests (test_netlink_parse.cpp); real bonds are exercised in the QEMU VM tests.
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/netlink/dcb.hpp"
#include "daemon/netlink/ethtool_nl.hpp"
#include "daemon/netlink/ethtool_stats.hpp"
#include "daemon/netlink/watcher.hpp"
#include "test_env.hpp"

using namespace rocewatch;
using Steady = std::chrono::steady_clock;
using Views = std::vector<Link>;

namespace {

// Descriptors this process holds open now.
std::ptrdiff_t open_fds() {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{});
}

constexpr auto kEventDeadline = std::chrono::milliseconds(1000);
constexpr const char* kPrefix = "rwt";  // every link a test creates starts with this

struct NetnsState {
    bool ok = false;
    std::string error;
};

// gtest runs every test in one process, so the namespace is entered once, on first use,
// from the main thread: the watcher threads and the `ip` children created later inherit
// it. The inode check makes sure we never touch the host's interfaces.
const NetnsState& private_netns() {
    static const NetnsState state = [] {
        NetnsState s;
        struct stat before {
        }, after{};
        if (::stat("/proc/thread-self/ns/net", &before) != 0) {
            s.error = std::string("stat netns: ") + std::strerror(errno);
            return s;
        }
        if (::unshare(CLONE_NEWNET) != 0) {
            s.error = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
            return s;
        }
        if (::stat("/proc/thread-self/ns/net", &after) != 0 || after.st_ino == before.st_ino) {
            s.error = "still in the original network namespace after unshare";
            return s;
        }
        if (std::system("ip link set lo up") != 0) {
            s.error = "cannot bring lo up (is iproute2 installed?)";
            return s;
        }
        s.ok = true;
        return s;
    }();
    return state;
}

bool sh(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    const bool ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
    EXPECT_TRUE(ok) << "command failed: " << cmd;
    return ok;
}

std::string capture(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
        ADD_FAILURE() << "popen failed: " << cmd;
        return out;
    }
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = ::pclose(p);
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << "command failed: " << cmd;
    return out;
}

// Feeds many commands to one `ip` process: thousands of changes within milliseconds.
bool ip_batch(const std::vector<std::string>& lines) {
    FILE* p = ::popen("ip -batch -", "w");
    if (p == nullptr) return false;
    for (const auto& l : lines) std::fprintf(p, "%s\n", l.c_str());
    const int rc = ::pclose(p);
    return WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

const Link* by_name(const Views& v, const std::string& name) {
    for (const auto& l : v)
        if (l.name == name) return &l;
    return nullptr;
}

bool has_addr(const Link* l, const std::string& addr, int prefixlen) {
    if (l == nullptr) return false;
    return std::any_of(l->addresses.begin(), l->addresses.end(),
                       [&](const Address& a) { return a.address == addr && a.prefixlen == prefixlen; });
}

void remove_test_links() {
    const auto links = nlohmann::json::parse(capture("ip -j link show"));
    for (const auto& l : links) {
        const std::string name = l.value("ifname", "");
        // Deleting one end of a veth removes the other: ignore "cannot find device".
        if (name.rfind(kPrefix, 0) == 0) (void)std::system(("ip link del " + name + " 2>/dev/null").c_str());
    }
}

// One line per link in a form both the watcher view and `ip -j -d addr` can produce, so
// a mismatch shows as a readable diff.
std::string describe(const Views& v) {
    std::ostringstream o;
    for (const auto& l : v) {
        std::vector<std::string> addrs;
        for (const auto& a : l.addresses)
            addrs.push_back(a.address + "/" + std::to_string(a.prefixlen) + " " + a.scope);
        std::sort(addrs.begin(), addrs.end());
        o << l.ifindex << ' ' << l.name << " mtu=" << l.mtu << " oper=" << l.operstate << " up=" << l.admin_up
          << " mac=" << l.mac << " master=" << l.master << " kind=" << l.kind << " addrs=[";
        for (const auto& a : addrs) o << a << ';';
        o << "]\n";
    }
    return o.str();
}

std::string describe_kernel() {
    const auto j = nlohmann::json::parse(capture("ip -j -d addr show"));
    Views v;
    for (const auto& e : j) {
        Link l;
        l.ifindex = e.value("ifindex", 0);
        l.name = e.value("ifname", "");
        l.mtu = e.value("mtu", 0u);
        l.operstate = e.value("operstate", "");
        std::transform(l.operstate.begin(), l.operstate.end(), l.operstate.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        const auto flags = e.value("flags", std::vector<std::string>{});
        l.admin_up = std::find(flags.begin(), flags.end(), "UP") != flags.end();
        l.mac = e.value("address", "");
        l.master = e.value("master", "");
        if (e.contains("linkinfo")) l.kind = e["linkinfo"].value("info_kind", "");
        for (const auto& a : e.value("addr_info", nlohmann::json::array()))
            l.addresses.push_back({.family = 0,
                                   .address = a.value("local", ""),
                                   .prefixlen = a.value("prefixlen", 0),
                                   .scope = a.value("scope", "")});
        v.push_back(std::move(l));
    }
    std::sort(v.begin(), v.end(), [](const Link& a, const Link& b) { return a.ifindex < b.ifindex; });
    return describe(v);
}

// Counts on_change() calls so a test can wait for the next one.
class ChangeCounter {
public:
    void notify() {
        {
            std::lock_guard lk(m_);
            ++n_;
        }
        cv_.notify_all();
    }
    uint64_t count() {
        std::lock_guard lk(m_);
        return n_;
    }
    // Waits until the count differs from `seen` or the deadline passes; returns the count.
    uint64_t wait_past(uint64_t seen, Steady::time_point deadline) {
        std::unique_lock lk(m_);
        cv_.wait_until(lk, deadline, [&] { return n_ != seen; });
        return n_;
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    uint64_t n_ = 0;
};

class NetnsWatcher : public ::testing::Test {
protected:
    void SetUp() override {
        ROCEWATCH_REQUIRE_ROOT();
        const auto& ns = private_netns();
        ASSERT_TRUE(ns.ok) << ns.error;
        remove_test_links();
    }

    void TearDown() override {
        watcher_.reset();
        if (::geteuid() == 0 && private_netns().ok) remove_test_links();
        if (!latencies_.empty()) {
            const double worst = *std::max_element(latencies_.begin(), latencies_.end());
            std::printf("[ latency  ] %zu changes, worst %.1f ms\n", latencies_.size(), worst);
        }
    }

    void make_watcher(std::function<void()> extra = {}) {
        auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        auto log = std::make_shared<spdlog::logger>("netlink-test", sink);
        watcher_ = NetlinkWatcher::create(log, [this, extra] {
            changes_.notify();
            if (extra) extra();
        });
    }

    // Runs `cmd` and waits until an on_change() delivers a view satisfying `pred`; the
    // watcher has no timer, so anything it shows after a change was pushed by an event.
    // Latency is measured from the moment `ip` returned (the kernel has sent the event by
    // then) and must be < 1 s; the time from just before `ip` started is printed too. The
    // split matters on a loaded machine: taking a link down waits for an RCU grace period
    // inside the kernel, which alone can take over a second there.
    double expect_event(const std::string& cmd, const std::function<bool(const Views&)>& pred) {
        EXPECT_FALSE(pred(watcher_->links())) << "the change is already visible before: " << cmd;
        uint64_t seen = changes_.count();
        const auto t0 = Steady::now();
        if (!sh(cmd)) return -1;
        const auto t_exit = Steady::now();
        const auto deadline = t_exit + kEventDeadline;
        const auto ms_since = [](Steady::time_point t) {
            return std::chrono::duration<double, std::milli>(Steady::now() - t).count();
        };
        for (;;) {
            const uint64_t now_count = changes_.wait_past(seen, deadline);
            if (now_count == seen) {
                ADD_FAILURE() << "no on_change() with the expected view within 1 s after: " << cmd
                              << " (the command itself took "
                              << std::chrono::duration<double, std::milli>(t_exit - t0).count() << " ms)\nview:\n"
                              << describe(watcher_->links());
                return -1;
            }
            seen = now_count;
            if (pred(watcher_->links())) break;
        }
        const double ms = ms_since(t_exit);
        const double total = ms_since(t0);
        std::printf("[ latency  ] %6.1f ms after ip returned, %6.1f ms from its start  %s\n", ms, total, cmd.c_str());
        EXPECT_LT(ms, 1000.0) << cmd;
        latencies_.push_back(ms);
        return ms;
    }

    // Waits (event or not) until the view equals what `ip` reports.
    bool converges_to_kernel(std::chrono::milliseconds within, std::string* diff) {
        const std::string truth = describe_kernel();
        const auto deadline = Steady::now() + within;
        std::string mine;
        do {
            mine = describe(watcher_->links());
            if (mine == truth) return true;
            changes_.wait_past(changes_.count(), std::min(deadline, Steady::now() + std::chrono::milliseconds(50)));
        } while (Steady::now() < deadline);
        *diff = "watcher:\n" + mine + "kernel:\n" + truth;
        return false;
    }

    ChangeCounter changes_;  // declared before watcher_: outlives the thread calling it
    std::unique_ptr<NetlinkWatcher> watcher_;
    std::vector<double> latencies_;
};

TEST_F(NetnsWatcher, InitialDumpSeesLoopback) {
    make_watcher();
    const Views v = watcher_->links();
    const Link* lo = by_name(v, "lo");
    ASSERT_NE(lo, nullptr) << describe(v);
    EXPECT_EQ(lo->ifindex, 1);
    EXPECT_TRUE(lo->admin_up);
    EXPECT_EQ(lo->operstate, "unknown");
    EXPECT_EQ(lo->mtu, 65536u);
    EXPECT_EQ(lo->mac, "00:00:00:00:00:00");
    EXPECT_EQ(lo->kind, "");
    ASSERT_TRUE(has_addr(lo, "127.0.0.1", 8)) << describe(v);
    for (const auto& a : lo->addresses) {
        EXPECT_EQ(a.scope, "host");
        EXPECT_TRUE(a.family == AF_INET || a.family == AF_INET6);
    }
    EXPECT_EQ(changes_.count(), 0u) << "create() does not call on_change";
    std::string diff;
    EXPECT_TRUE(converges_to_kernel(std::chrono::milliseconds(0), &diff)) << diff;
}

TEST_F(NetnsWatcher, VethLifecycleIsEventDriven) {
    make_watcher();
    watcher_->start();

    expect_event("ip link add rwt0 type veth peer name rwt1", [](const Views& v) {
        const Link* a = by_name(v, "rwt0");
        const Link* b = by_name(v, "rwt1");
        return a && b && a->kind == "veth" && b->kind == "veth" && !a->admin_up && a->operstate == "down" &&
               a->mac.size() == 17;
    });
    expect_event("ip link set rwt0 mtu 9000", [](const Views& v) { return by_name(v, "rwt0")->mtu == 9000; });
    expect_event("ip link set rwt0 up && ip link set rwt1 up", [](const Views& v) {
        const Link* a = by_name(v, "rwt0");
        const Link* b = by_name(v, "rwt1");
        return a->admin_up && b->admin_up && a->operstate == "up" && b->operstate == "up" && a->carrier && b->carrier;
    });
    const auto flaps = by_name(watcher_->links(), "rwt0")->carrier_changes;
    ASSERT_TRUE(flaps);

    // The peer going down takes the carrier away from rwt0: what a cable pull looks like.
    expect_event("ip link set rwt1 down", [](const Views& v) {
        const Link* a = by_name(v, "rwt0");
        const Link* b = by_name(v, "rwt1");
        return !b->admin_up && b->operstate == "down" && a->admin_up && !a->carrier && a->operstate == "lowerlayerdown";
    });
    EXPECT_GT(by_name(watcher_->links(), "rwt0")->carrier_changes.value_or(0), *flaps);

    expect_event("ip link set rwt0 down", [](const Views& v) {
        return !by_name(v, "rwt0")->admin_up && by_name(v, "rwt0")->operstate == "down";
    });
    expect_event("ip link del rwt0", [](const Views& v) { return !by_name(v, "rwt0") && !by_name(v, "rwt1"); });
    EXPECT_GT(watcher_->events(), 6u);
    EXPECT_EQ(watcher_->resyncs(), 0u);
}

TEST_F(NetnsWatcher, MacvlanAndAddressesAreEventDriven) {
    ASSERT_TRUE(sh("ip link add rwt0 type veth peer name rwt1 && ip link set rwt0 up && ip link set rwt1 up"));
    make_watcher();
    watcher_->start();

    expect_event("ip link add link rwt0 name rwtmv0 type macvlan mode bridge && ip link set rwtmv0 up",
                 [](const Views& v) {
                     const Link* m = by_name(v, "rwtmv0");
                     return m && m->kind == "macvlan" && m->admin_up && m->master.empty();
                 });
    expect_event("ip addr add 192.0.2.10/24 dev rwtmv0",
                 [](const Views& v) { return has_addr(by_name(v, "rwtmv0"), "192.0.2.10", 24); });
    const Views now = watcher_->links();
    for (const auto& a : by_name(now, "rwtmv0")->addresses)
        if (a.address == "192.0.2.10") {
            EXPECT_EQ(a.family, AF_INET);
            EXPECT_EQ(a.scope, "global");
        }
    expect_event("ip -6 addr add 2001:db8::10/64 dev rwtmv0 nodad",
                 [](const Views& v) { return has_addr(by_name(v, "rwtmv0"), "2001:db8::10", 64); });
    expect_event("ip addr add 198.51.100.1/32 peer 198.51.100.2 dev rwt0",
                 [](const Views& v) { return has_addr(by_name(v, "rwt0"), "198.51.100.1", 32); });
    expect_event("ip addr del 192.0.2.10/24 dev rwtmv0",
                 [](const Views& v) { return !has_addr(by_name(v, "rwtmv0"), "192.0.2.10", 24); });
    expect_event("ip link set rwtmv0 down", [](const Views& v) { return by_name(v, "rwtmv0")->operstate == "down"; });

    std::string diff;
    EXPECT_TRUE(converges_to_kernel(std::chrono::milliseconds(3000), &diff)) << diff;
}

// A bridge stands in for a bond (no bonding module here): master names are assembled the
// same way, but a bridge port must not get bond slave info.
TEST_F(NetnsWatcher, MasterNameIsAssembled) {
    ASSERT_TRUE(sh("ip link add rwt0 type veth peer name rwt1 && ip link add rwtbr0 type bridge"));
    make_watcher();
    watcher_->start();
    expect_event("ip link set rwt0 master rwtbr0", [](const Views& v) {
        const Link* p = by_name(v, "rwt0");
        const Link* br = by_name(v, "rwtbr0");
        return p && br && p->master == "rwtbr0" && p->master_ifindex == br->ifindex;
    });
    const Views v = watcher_->links();
    EXPECT_FALSE(by_name(v, "rwt0")->slave) << "bridge ports are not bond slaves";
    EXPECT_FALSE(by_name(v, "rwtbr0")->bond);
    EXPECT_EQ(by_name(v, "rwtbr0")->kind, "bridge");
    expect_event("ip link set rwt0 nomaster", [](const Views& v2) { return by_name(v2, "rwt0")->master.empty(); });
}

TEST_F(NetnsWatcher, EnobufsOverrunResyncsToKernelTruth) {
    ASSERT_TRUE(sh("ip link add rwt0 type veth peer name rwt1"));
    make_watcher();
    // The smallest buffer the kernel allows, and nobody reading yet: the flood below is
    // certain to overflow it, so the first read after start() reports ENOBUFS.
    watcher_->set_event_buffer_size_for_testing(1);
    std::vector<std::string> adds;
    for (int i = 0; i < 600; ++i)
        adds.push_back("addr add 10.77." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) +
                       "/32 dev rwt0");
    ASSERT_TRUE(ip_batch(adds));

    const auto t0 = Steady::now();
    watcher_->start();
    std::string diff;
    EXPECT_TRUE(converges_to_kernel(std::chrono::milliseconds(3000), &diff)) << diff;
    std::printf("[ resync   ] view matched ip -j after %.1f ms, %llu resyncs, %llu events\n",
                std::chrono::duration<double, std::milli>(Steady::now() - t0).count(),
                static_cast<unsigned long long>(watcher_->resyncs()),
                static_cast<unsigned long long>(watcher_->events()));
    EXPECT_GE(watcher_->resyncs(), 1u) << "the overflow must have been noticed";
    EXPECT_EQ(by_name(watcher_->links(), "rwt0")->addresses.size(), 600u);

    // Now overrun a running watcher: the view must still end where the kernel ends.
    std::vector<std::string> churn;
    for (int i = 0; i < 600; i += 2)
        churn.push_back("addr del 10.77." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) +
                        "/32 dev rwt0");
    for (int i = 0; i < 200; ++i) churn.push_back("addr add 10.78.0." + std::to_string(i + 1) + "/32 dev rwt0");
    churn.push_back("link set rwt0 mtu 4000");
    ASSERT_TRUE(ip_batch(churn));
    EXPECT_TRUE(converges_to_kernel(std::chrono::milliseconds(3000), &diff)) << diff;
    EXPECT_EQ(by_name(watcher_->links(), "rwt0")->addresses.size(), 500u);
    EXPECT_EQ(by_name(watcher_->links(), "rwt0")->mtu, 4000u);
    std::printf("[ resync   ] after churn on a running watcher: %llu resyncs, %llu events\n",
                static_cast<unsigned long long>(watcher_->resyncs()),
                static_cast<unsigned long long>(watcher_->events()));
}

TEST_F(NetnsWatcher, StopIsPromptAndRestartable) {
    make_watcher();
    watcher_->start();
    watcher_->start();  // second call is a no-op
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto t0 = Steady::now();
    watcher_->stop();
    const double stop_ms = std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
    std::printf("[ stop     ] %.2f ms\n", stop_ms);
    EXPECT_LT(stop_ms, 100.0);
    watcher_->stop();  // idempotent

    // While stopped nothing is applied; after a restart the queued change is.
    ASSERT_TRUE(sh("ip link add rwt0 type veth peer name rwt1"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(by_name(watcher_->links(), "rwt0"));
    watcher_->start();
    const auto deadline = Steady::now() + kEventDeadline;
    while (!by_name(watcher_->links(), "rwt0") && Steady::now() < deadline)
        changes_.wait_past(changes_.count(), std::min(deadline, Steady::now() + std::chrono::milliseconds(20)));
    EXPECT_TRUE(by_name(watcher_->links(), "rwt0")) << "change made while stopped is picked up on start";
    expect_event("ip link set rwt0 mtu 1400", [](const Views& v) { return by_name(v, "rwt0")->mtu == 1400; });

    t0 = Steady::now();
    watcher_.reset();  // destructor stops the thread
    const double destroy_ms = std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
    EXPECT_LT(destroy_ms, 100.0);
}

TEST_F(NetnsWatcher, DumpIsSynchronousAndPublishes) {
    make_watcher();
    ASSERT_TRUE(sh("ip link add rwt0 type veth peer name rwt1"));
    const Views fresh = watcher_->dump();
    EXPECT_TRUE(by_name(fresh, "rwt0"));
    EXPECT_TRUE(by_name(watcher_->links(), "rwt0")) << "dump() becomes the latest view";
    EXPECT_EQ(changes_.count(), 0u) << "dump() is the caller's own; no callback";
    EXPECT_EQ(describe(fresh), describe_kernel());
}

TEST_F(NetnsWatcher, ThrowingCallbackDoesNotStopTheWatcher) {
    make_watcher([] { throw std::runtime_error("callback failure for the test"); });
    watcher_->start();
    expect_event("ip link add rwt0 type veth peer name rwt1",
                 [](const Views& v) { return by_name(v, "rwt0") != nullptr; });
    expect_event("ip link set rwt0 mtu 2000", [](const Views& v) { return by_name(v, "rwt0")->mtu == 2000; });
}

}  // namespace

// Taking a link down to change its MTU and bringing it back at once is one burst of events and
// one re-dump that finds it up again: the history still has the admin-down, from the events,
// and the address it lost, from the dumps.
TEST_F(NetnsWatcher, HistoryKeepsAnAdminDownInsideOneBurst) {
    ASSERT_TRUE(sh("ip link add rwt0 type veth peer name rwt1 && ip link set rwt0 up && ip link set rwt1 up && "
                   "ip addr add 192.0.2.7/24 dev rwt0"));
    make_watcher();
    watcher_->start();
    auto events_of = [&](const std::string& link) {
        std::string s;
        for (const auto& e : watcher_->link_events())
            if (e.link == link) s += e.what + (e.address.empty() ? "" : "=" + e.address) + " ";
        return s;
    };
    EXPECT_EQ(events_of("rwt0"), "") << "a first sight is no transition";
    expect_event("ip link set rwt0 down && ip link set rwt0 mtu 1400 && ip link set rwt0 up",
                 [](const Views& v) { return by_name(v, "rwt0")->mtu == 1400 && by_name(v, "rwt0")->admin_up; });
    const std::string seen = events_of("rwt0");
    EXPECT_NE(seen.find("admin_down admin_up"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("carrier_down"), std::string::npos) << "the admin-down took the carrier: " << seen;
    const auto before = watcher_->link_events().size();
    expect_event("ip addr flush dev rwt0",
                 [](const Views& v) { return !has_addr(by_name(v, "rwt0"), "192.0.2.7", 24); });
    EXPECT_NE(events_of("rwt0").find("address_removed=192.0.2.7/24"), std::string::npos) << events_of("rwt0");
    EXPECT_GT(watcher_->link_events().size(), before);
    // The peer going down is a carrier loss on rwt0, not an admin-down.
    expect_event("ip link set rwt1 down", [](const Views& v) { return !by_name(v, "rwt0")->carrier; });
    const std::string after = events_of("rwt0");
    EXPECT_EQ(after.substr(after.size() - std::string("carrier_down ").size()), "carrier_down ") << after;
}

// dcbnl on real netdevs of the private namespace: veth has no DCB driver, so the kernel
// answers EOPNOTSUPP (as virtio_net and every NIC in reach of the test bed do); a name no
// netdev has gets ENODEV. Neither hangs nor throws. (The reply parser is unit-tested on
// bytes in test_dcb.cpp.)
TEST_F(NetnsWatcher, DcbQueryOnARealNetdevWithoutDcb) {
    ASSERT_TRUE(sh(std::string("ip link add ") + kPrefix + "dcb0 type veth peer name " + kPrefix + "dcb1"));
    const auto veth = query_dcb(std::string(kPrefix) + "dcb0");
    EXPECT_EQ(veth.error, EOPNOTSUPP) << std::strerror(veth.error);
    const auto none = query_dcb(std::string(kPrefix) + "nodev");
    EXPECT_EQ(none.error, ENODEV) << std::strerror(none.error);
}

// Driver statistics over the SIOCETHTOOL ioctl on a real veth of the private namespace: veth
// reports peer_ifindex, which must be its peer's ifindex; with the lossless filter nothing of
// veth's is kept; a name no netdev has gets ENODEV.
TEST_F(NetnsWatcher, DriverStatsOfARealVeth) {
    const std::string a = std::string(kPrefix) + "st0", b = std::string(kPrefix) + "st1";
    ASSERT_TRUE(sh("ip link add " + a + " type veth peer name " + b));
    DriverStatsReader all;
    const auto st = all.read(a);
    ASSERT_EQ(st.error, 0) << std::strerror(st.error);
    const auto it = std::find_if(st.values.begin(), st.values.end(),
                                 [](const auto& v) { return v.first == "peer_ifindex"; });
    ASSERT_NE(it, st.values.end()) << "veth names its peer_ifindex in ethtool -S";
    EXPECT_EQ(it->second, ::if_nametoindex(b.c_str()));
    EXPECT_EQ(all.read(a).values, st.values) << "the second read, with the names kept, reads the same";
    const auto fds_before = open_fds();
    DriverStatsReader reused;
    ASSERT_EQ(reused.read(a).values, st.values);
    EXPECT_EQ(open_fds(), fds_before + 1) << "its socket stays open after a read";
    for (int i = 0; i < 50; ++i) ASSERT_EQ(reused.read(a).values, st.values);
    EXPECT_EQ(open_fds(), fds_before + 1) << "and is the one every later read uses";

    DriverStatsReader lossless(is_lossless_stat);
    const auto kept = lossless.read(a);
    EXPECT_EQ(kept.error, 0);
    EXPECT_TRUE(kept.values.empty());
    EXPECT_EQ(all.read(std::string(kPrefix) + "nodev").error, ENODEV);
}

// ethtool netlink on a real veth of the private namespace: veth reports its link mode (10000
// Mb/s, full duplex, autoneg off) and has neither FEC, pause nor a module (EOPNOTSUPP); a name
// no netdev has gets ENODEV for each part. Neither hangs nor throws.
TEST_F(NetnsWatcher, EthtoolNetlinkOnARealVeth) {
    const std::string a = std::string(kPrefix) + "ph0", b = std::string(kPrefix) + "ph1";
    ASSERT_TRUE(sh("ip link add " + a + " type veth peer name " + b));
    const auto p = query_phy(a);
    ASSERT_EQ(p.linkmodes_error, 0) << std::strerror(p.linkmodes_error);
    EXPECT_EQ(p.speed_mbps, 10000u);
    EXPECT_EQ(p.duplex, "full");
    EXPECT_EQ(p.autoneg, false);
    EXPECT_EQ(p.fec_error, EOPNOTSUPP) << std::strerror(p.fec_error);
    EXPECT_EQ(p.pause_error, EOPNOTSUPP) << std::strerror(p.pause_error);
    // veth keeps none of the standard groups: the kernel answers with no group at all.
    EXPECT_EQ(p.stats_error, 0) << std::strerror(p.stats_error);
    EXPECT_TRUE(p.standard_stats.empty());

    // The reader of every cycle: one socket for all its calls, and given the last answer it asks
    // only what can have moved. Told link modes the kernel would not say (12345 Mb/s), it keeps
    // them; told stats are unsupported (veth answers them), it does not ask; told pause is
    // supported (veth says not), it asks and gets the kernel's EOPNOTSUPP.
    PhyReader reader;
    EXPECT_EQ(reader.read(a), p);
    PhyLink known = p;
    known.speed_mbps = 12345;
    known.stats_error = EOPNOTSUPP;
    known.pause_error = 0;
    const auto again = reader.read(a, &known);
    EXPECT_EQ(again.speed_mbps, 12345u) << "link modes carried, not asked";
    EXPECT_EQ(again.duplex, "full");
    EXPECT_EQ(again.stats_error, EOPNOTSUPP) << "an unsupported part is not asked again";
    EXPECT_EQ(again.pause_error, EOPNOTSUPP) << "a part answered before is asked";
    EXPECT_EQ(again.fec_error, EOPNOTSUPP);
    known.linkmodes_error = ETIMEDOUT;  // an earlier ask that got no answer is asked again
    EXPECT_EQ(reader.read(a, &known).speed_mbps, 10000u);
    const auto fds_before = open_fds();
    PhyReader kept;
    ASSERT_EQ(kept.read(a), p);
    EXPECT_EQ(open_fds(), fds_before + 1) << "its socket stays open after a read";
    for (int i = 0; i < 50; ++i) ASSERT_EQ(kept.read(a, &p), p);
    EXPECT_EQ(open_fds(), fds_before + 1) << "and is the one every later read uses";
    const auto none = query_phy(std::string(kPrefix) + "nodev");
    EXPECT_EQ(none.linkmodes_error, ENODEV) << std::strerror(none.linkmodes_error);
    EXPECT_EQ(none.fec_error, ENODEV);
    // A veth has no transceiver module: the kernel says so for the first page, nothing decoded.
    const auto module = query_module(a);
    EXPECT_EQ(module.error, EOPNOTSUPP) << std::strerror(module.error);
    EXPECT_EQ(module.spec, "");
    EXPECT_EQ(query_module(std::string(kPrefix) + "nodev").error, ENODEV);
}
