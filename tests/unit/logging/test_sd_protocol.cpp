// sd_notify(3) and journald's native protocol against real Unix datagram sockets in a
// directory of the test's own (and the abstract namespace), read back as systemd reads them.
#include <gtest/gtest.h>

#include <spdlog/logger.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "daemon/logging/journal.hpp"
#include "daemon/logging/sd_protocol.hpp"

using namespace rocewatch::logging;
namespace fs = std::filesystem;

namespace {

// A bound datagram socket, as systemd's notify socket and journald's are.
class Receiver {
public:
    explicit Receiver(const std::string& name) {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, name.data(), name.size());
        if (name[0] == '@') a.sun_path[0] = '\0';
        const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
        bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0;
        timeval tv{.tv_sec = 2, .tv_usec = 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    ~Receiver() {
        if (fd_ >= 0) ::close(fd_);
    }
    bool bound() const { return bound_; }
    std::string take() {
        std::string buf(1 << 16, '\0');
        const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
        buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
        return buf;
    }

private:
    int fd_ = -1;
    bool bound_ = false;
};

class SdProtocol : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/rw-sd-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        ::unsetenv("NOTIFY_SOCKET");
        ::unsetenv("WATCHDOG_USEC");
        ::unsetenv("WATCHDOG_PID");
        fs::remove_all(dir_);
    }
    fs::path dir_;
};

// journald's reader of the native protocol (journald-native.c), for what the test sends.
std::multimap<std::string, std::string> parse_entry(const std::string& d) {
    std::multimap<std::string, std::string> out;
    size_t at = 0;
    while (at < d.size()) {
        const size_t nl = d.find('\n', at);
        const size_t eq = d.find('=', at);
        if (eq < nl) {
            out.emplace(d.substr(at, eq - at), d.substr(eq + 1, nl - eq - 1));
            at = nl + 1;
            continue;
        }
        const std::string name = d.substr(at, nl - at);
        uint64_t len = 0;
        for (int i = 7; i >= 0; --i) len = len << 8 | static_cast<unsigned char>(d[nl + 1 + i]);
        out.emplace(name, d.substr(nl + 9, len));
        EXPECT_EQ(d[nl + 9 + len], '\n');
        at = nl + 10 + len;
    }
    return out;
}

}  // namespace

TEST_F(SdProtocol, NotifyReachesThePathNotifySocketNames) {
    const std::string path = dir_ / "notify";
    Receiver r(path);
    ASSERT_TRUE(r.bound());
    ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
    ASSERT_TRUE(notify("READY=1\nSTATUS=collecting"));
    EXPECT_EQ(r.take(), "READY=1\nSTATUS=collecting");
    ASSERT_TRUE(notify("WATCHDOG=1"));
    EXPECT_EQ(r.take(), "WATCHDOG=1");
}

TEST_F(SdProtocol, NotifyReachesAnAbstractSocket) {
    const std::string name = "@rw-sd-test-" + std::to_string(::getpid());
    Receiver r(name);
    ASSERT_TRUE(r.bound());
    ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
    ASSERT_TRUE(notify("STOPPING=1"));
    EXPECT_EQ(r.take(), "STOPPING=1");
}

TEST_F(SdProtocol, NotifyWithoutASocketSaysSo) {
    ::unsetenv("NOTIFY_SOCKET");
    EXPECT_FALSE(notify("READY=1"));
    ::setenv("NOTIFY_SOCKET", (dir_ / "nobody").c_str(), 1);
    EXPECT_FALSE(notify("READY=1")) << "no one bound there";
    ::setenv("NOTIFY_SOCKET", "relative/path", 1);
    EXPECT_FALSE(notify("READY=1"));
}

TEST_F(SdProtocol, WatchdogIsOursOnlyWhenThePidMatches) {
    EXPECT_EQ(watchdog_usec(), 0u);
    ::setenv("WATCHDOG_USEC", "30000000", 1);
    EXPECT_EQ(watchdog_usec(), 30000000u) << "no WATCHDOG_PID: ours";
    ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    EXPECT_EQ(watchdog_usec(), 30000000u);
    ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
    EXPECT_EQ(watchdog_usec(), 0u) << "meant for another process";
    ::unsetenv("WATCHDOG_PID");
    ::setenv("WATCHDOG_USEC", "30s", 1);
    EXPECT_EQ(watchdog_usec(), 0u) << "not a number";
}

TEST(JournalDatagram, AValueWithANewlineIsSentWithItsLength) {
    const std::string d = journal_datagram({{"MESSAGE", "two\nlines"}, {"PRIORITY", "4"}});
    EXPECT_EQ(d, std::string("MESSAGE\n\x09\0\0\0\0\0\0\0two\nlines\nPRIORITY=4\n", 37));
}

TEST_F(SdProtocol, TheJournalSinkSendsEveryFieldAsJournaldReadsThem) {
    const std::string path = dir_ / "journal";
    Receiver r(path);
    ASSERT_TRUE(r.bound());
    spdlog::logger log("t", make_journal_sink("rocewatchd", path));
    {
        Fields f({{"RULE", "port_down"}, {"OBJECT", "rocep1s0f0/1"}}, kErr);
        log.warn("alert port_down rocep1s0f0/1 firing\nsecond line");
    }
    auto e = parse_entry(r.take());
    EXPECT_EQ(e.find("MESSAGE")->second, "alert port_down rocep1s0f0/1 firing\nsecond line");
    EXPECT_EQ(e.find("PRIORITY")->second, "3") << "the Fields' priority wins over the level's";
    EXPECT_EQ(e.find("SYSLOG_IDENTIFIER")->second, "rocewatchd");
    EXPECT_EQ(e.find("RULE")->second, "port_down");
    EXPECT_EQ(e.find("OBJECT")->second, "rocep1s0f0/1");
    EXPECT_EQ(e.size(), 5u);
}

TEST_F(SdProtocol, AJournalThatIsNotThereGetsTheLineOnStderr) {
    spdlog::logger log("t", make_journal_sink("rocewatchd", dir_ / "no-journald"));
    testing::internal::CaptureStderr();
    log.warn("link down");
    log.flush();
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "<4>link down\n");
}
