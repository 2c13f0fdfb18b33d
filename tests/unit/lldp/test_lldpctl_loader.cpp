// liblldpctl loaded on first use: not mapped until lldpd answers on a socket, then every
// function the client calls is found in liblldpctl.so.4 and works through its pointer. The test
// binary links no liblldpctl (RTLD_NOLOAD finds it unmapped at start).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "daemon/lldp/lldp_client.hpp"
#include "daemon/lldp/lldpctl_loader.hpp"

namespace rocewatch {
namespace {

using namespace std::chrono_literals;

RW_USING_LLDPCTL

bool mapped() {
    void* h = ::dlopen("liblldpctl.so.4", RTLD_NOW | RTLD_NOLOAD);
    if (h) ::dlclose(h);
    return h != nullptr;
}

// One test: the order is the point (gtest runs a file's tests in order, but not under shuffle).
TEST(Lldpctl, LoadedOnlyOnceLldpdIsThereAndFindsEveryFunction) {
    ASSERT_TRUE(lldp_supported());
    EXPECT_FALSE(mapped()) << "the test binary is linked against liblldpctl";

    // No socket: lldpd is not running, and nothing is loaded.
    char dir[] = "/tmp/rocewatch-lldpctl.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const std::string missing = std::string(dir) + "/none.socket";
    const LldpAnswer none = read_lldp(missing, 200ms);
    EXPECT_TRUE(none.absent);
    EXPECT_EQ(none.error, "");
    EXPECT_FALSE(mapped()) << "loaded for a socket that is not there";

    // A socket that accepts and never answers: the client talks to it, so loads the library,
    // and the deadline ends the ask.
    const std::string path = std::string(dir) + "/mute.socket";
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(s, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
    ASSERT_EQ(::listen(s, 4), 0);
    const LldpAnswer mute = read_lldp(path, 200ms);
    EXPECT_FALSE(mute.absent);
    EXPECT_EQ(mute.error, "lldpd did not answer in time");
    EXPECT_TRUE(mapped()) << "not loaded once lldpd's socket accepted";
    ::close(s);
    ::unlink(path.c_str());
    ::rmdir(dir);

    EXPECT_EQ(lldp::load_lldpctl(), std::nullopt);
    EXPECT_EQ(lldp::load_lldpctl(), std::nullopt) << "a second call is the first's answer";
#define RW_EXPECT_FOUND(name) EXPECT_NE(lldp::fn::name, nullptr) << #name;
    RW_LLDPCTL_FUNCTIONS(RW_EXPECT_FOUND)
#undef RW_EXPECT_FOUND
}

ssize_t refuse(lldpctl_conn_t*, const uint8_t*, size_t, void*) { return LLDPCTL_ERR_CALLBACK_FAILURE; }

TEST(Lldpctl, CallsGoThroughThePointers) {
    ASSERT_EQ(lldp::load_lldpctl(), std::nullopt);
    EXPECT_STREQ(lldpctl_strerror(LLDPCTL_ERR_NOMEM), "Not enough memory available");
    lldpctl_conn_t* conn = lldpctl_new_name("/nonexistent", refuse, refuse, nullptr);
    ASSERT_NE(conn, nullptr);
    EXPECT_EQ(lldpctl_get_interfaces(conn), nullptr) << "a send that fails is no answer";
    EXPECT_EQ(lldpctl_last_error(conn), LLDPCTL_ERR_CALLBACK_FAILURE);
    EXPECT_STRNE(lldpctl_last_strerror(conn), "") << "a macro, through lldpctl_strerror's pointer";
    EXPECT_EQ(lldpctl_release(conn), 0);
}

}  // namespace
}  // namespace rocewatch
