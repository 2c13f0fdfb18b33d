// read_lldp against real lldpd daemons: one in each of two private network namespaces joined by
// a veth pair, each with its own control socket in a private directory.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "daemon/lldp/lldp_client.hpp"
#include "netns_pair.hpp"
#include "test_env.hpp"

extern char** environ;

namespace rocewatch {
namespace {

using namespace std::chrono_literals;
using rocewatch::testing::run_command;

constexpr const char* kLldpd = "/usr/sbin/lldpd";
constexpr const char* kLldpcli = "/usr/sbin/lldpcli";

// Starts argv in its own process group (lldpd forks a privilege-separated child), its output to
// `log`: -1 on failure.
pid_t spawn_group(const std::vector<std::string>& args, const std::string& log) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc == 0 ? pid : -1;
}

class LldpNetns : public ::testing::Test {
protected:
    void SetUp() override {
        ROCEWATCH_REQUIRE_ROOT();
        ASSERT_TRUE(lldp_supported()) << "rocewatch was built without liblldpctl: install liblldpctl-dev";
        if (::access(kLldpd, X_OK) != 0 || ::access(kLldpcli, X_OK) != 0) {
            if (rocewatch::testing::in_ci()) FAIL() << "lldpd is not installed; scripts/deps.sh test installs it";
            GTEST_SKIP() << "needs lldpd (apt install lldpd); runs in CI";
        }
        static testing::Namespaces ns = [] {
            auto s = testing::make_namespace_pair();
            std::string err;
            if (s.error.empty() &&
                run_command("ip link add lla0 type veth peer name llb0 && ip link set llb0 netns " + s.b_path() +
                                " && ip link set lla0 up && " + s.in_b() + "ip link set llb0 up",
                            &err))
                testing::wait_veth_up(s, "lla0", "llb0");
            else if (s.error.empty())
                s.error = err;
            return s;
        }();
        ASSERT_TRUE(ns.ok) << ns.error;
        ns_ = &ns;
        char tmpl[] = "/tmp/rocewatch-lldp.XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        ::chmod(dir_.c_str(), 0755);  // lldpd hands its socket to group _lldpd
    }

    void TearDown() override {
        for (pid_t pg : groups_) {
            ::kill(-pg, SIGCONT);
            ::kill(-pg, SIGTERM);
            int st = 0;
            ::waitpid(pg, &st, 0);
        }
        if (!dir_.empty()) std::filesystem::remove_all(dir_);
    }

    // lldpd on `netdev` in A, or in B through nsenter, with its socket in our directory.
    std::string start_lldpd(const std::string& name, const std::string& netdev, bool in_b) {
        const std::string sock = dir_ + "/" + name + ".socket";
        std::vector<std::string> args;
        if (in_b) args = {"/usr/bin/nsenter", "--net=" + ns_->b_path()};
        for (const auto& a : {std::string(kLldpd), std::string("-d"), std::string("-u"), sock, std::string("-p"),
                              dir_ + "/" + name + ".pid", std::string("-I"), netdev})
            args.push_back(a);
        const pid_t pid = spawn_group(args, dir_ + "/" + name + ".log");
        EXPECT_GT(pid, 0) << "cannot start lldpd";
        if (pid > 0) groups_.push_back(pid);
        for (int i = 0; i < 100 && !std::filesystem::exists(sock); ++i) std::this_thread::sleep_for(50ms);
        EXPECT_TRUE(std::filesystem::exists(sock)) << "lldpd made no socket at " << sock;
        // lldpd starts paused until the lldpcli it runs itself resumes it: resume it here, so
        // that the test does not depend on that child winning the race.
        lldpcli(sock, "resume");
        return sock;
    }

    void lldpcli(const std::string& sock, const std::string& cmd) {
        std::string err;
        EXPECT_TRUE(run_command(std::string(kLldpcli) + " -u " + sock + " " + cmd + " >/dev/null", &err)) << err;
    }

    testing::Namespaces* ns_ = nullptr;
    std::string dir_;
    std::vector<pid_t> groups_;
};

// What lldpd in A hears from lldpd in B over the veth: B's system name and the port ID it sends.
TEST_F(LldpNetns, ReadsTheNeighbourEachLinkHears) {
    const std::string a = start_lldpd("a", "lla0", false);
    const std::string b = start_lldpd("b", "llb0", true);
    lldpcli(b, "configure system hostname leaf-b");
    lldpcli(b, "configure lldp portidsubtype ifname");
    lldpcli(b, "configure ports llb0 lldp portdescription 'to node a rail A'");
    lldpcli(a, "update");
    lldpcli(b, "update");
    LldpAnswer got;
    for (int i = 0; i < 100; ++i) {
        got = read_lldp(a, 1000ms);
        ASSERT_EQ(got.error, "");
        ASSERT_FALSE(got.absent);
        if (got.by_netdev.count("lla0") && got.by_netdev["lla0"].system_name == "leaf-b" &&
            got.by_netdev["lla0"].port_id == "llb0")
            break;
        if (i % 10 == 9) lldpcli(b, "update");
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(got.by_netdev.count("lla0"), 1u) << "lldpd in A heard nothing on lla0";
    const LldpNeighbor& n = got.by_netdev["lla0"];
    EXPECT_EQ(n.protocol, "LLDP");
    EXPECT_EQ(n.system_name, "leaf-b");
    EXPECT_EQ(n.port_id, "llb0");
    EXPECT_EQ(n.port_id_subtype, "ifname");
    EXPECT_EQ(n.port_description, "to node a rail A");
    EXPECT_EQ(n.chassis_id_subtype, "mac");
    EXPECT_EQ(n.chassis_id.size(), 17u) << n.chassis_id;
    EXPECT_EQ(n.neighbours, 1u);
    EXPECT_EQ(lldp_switch_name(n), "leaf-b");
    EXPECT_EQ(lldp_port_name(n), "llb0");
    // And B hears A on its side, by A's port MAC (the default subtype).
    const LldpAnswer from_b = read_lldp(b, 1000ms);
    ASSERT_EQ(from_b.error, "");
    ASSERT_EQ(from_b.by_netdev.count("llb0"), 1u);
    EXPECT_EQ(from_b.by_netdev.at("llb0").port_id_subtype, "mac");
    EXPECT_EQ(lldp_port_name(from_b.by_netdev.at("llb0")), "lla0") << "a MAC port ID gives way to the description";
}

// No socket is no lldpd; a socket nobody listens on, or one that never answers, is an error
// that comes back within the timeout.
TEST_F(LldpNetns, AMissingSilentOrDeadLldpdIsBoundedAndSaysSo) {
    const LldpAnswer missing = read_lldp(dir_ + "/none.socket", 1000ms);
    EXPECT_TRUE(missing.absent);
    EXPECT_EQ(missing.error, "");

    const std::string path = dir_ + "/silent.socket";
    const int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(l, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
    ASSERT_EQ(::listen(l, 4), 0);  // accepted by the kernel, never answered
    const auto t0 = std::chrono::steady_clock::now();
    const LldpAnswer silent = read_lldp(path, 300ms);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_FALSE(silent.absent);
    EXPECT_EQ(silent.error, "lldpd did not answer in time");
    EXPECT_GE(took, 290ms);
    EXPECT_LT(took, 2s);
    ::close(l);  // the path stays, with nothing listening
    const LldpAnswer dead = read_lldp(path, 300ms);
    EXPECT_FALSE(dead.absent);
    EXPECT_NE(dead.error.find("nothing listens on " + path), std::string::npos) << dead.error;

    const std::string too_long(200, 'x');
    EXPECT_NE(read_lldp("/tmp/" + too_long, 300ms).error, "");
}

}  // namespace
}  // namespace rocewatch
