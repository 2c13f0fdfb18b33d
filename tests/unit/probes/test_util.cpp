// The shared helpers in util/: hex, constant-time compare, Fd, seconds_between.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <string>
#include <vector>

#include "util/clock.hpp"
#include "util/ct_compare.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"

using namespace rocewatch;

TEST(UtilHex, RoundTrip) {
    EXPECT_EQ(to_hex(std::vector<uint8_t>{0x00, 0x0f, 0xa0, 0xff}), "000fa0ff");
    EXPECT_EQ(bytes_from_hex("000FA0ff"), (std::vector<uint8_t>{0x00, 0x0f, 0xa0, 0xff}));
    EXPECT_EQ(bytes_from_hex(""), std::vector<uint8_t>{});
    EXPECT_FALSE(bytes_from_hex("abc"));
    EXPECT_FALSE(bytes_from_hex("zz"));
    EXPECT_FALSE(bytes_from_hex("0x"));
    std::array<uint8_t, 2> two{};
    EXPECT_TRUE(from_hex("beEF", two));
    EXPECT_EQ(two, (std::array<uint8_t, 2>{0xbe, 0xef}));
    EXPECT_FALSE(from_hex("bee", two)) << "length must be exactly twice the bytes";
    EXPECT_FALSE(from_hex("beeg", two));
}

TEST(UtilCompare, ConstantTimeEqual) {
    EXPECT_TRUE(constant_time_equal(std::string_view("secret"), std::string_view("secret")));
    EXPECT_FALSE(constant_time_equal(std::string_view("secret"), std::string_view("secreT")));
    EXPECT_FALSE(constant_time_equal(std::string_view("secret"), std::string_view("secret!")));
    EXPECT_TRUE(constant_time_equal(std::string_view(), std::string_view()));
    const std::array<uint8_t, 3> a{1, 2, 3}, b{1, 2, 4};
    EXPECT_TRUE(constant_time_equal(a, a));
    EXPECT_FALSE(constant_time_equal(a, b));
}

TEST(UtilFd, ClosesOnceAndMoves) {
    int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(raw, 0);
    {
        Fd a(raw);
        Fd b(std::move(a));
        EXPECT_FALSE(a.valid());
        EXPECT_EQ(b.get(), raw);
    }
    EXPECT_EQ(::fcntl(raw, F_GETFD), -1) << "closed when its owner went";
    Fd c(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int kept = c.release();
    EXPECT_FALSE(c.valid());
    EXPECT_GE(::fcntl(kept, F_GETFD), 0) << "release() hands the fd over, open";
    ::close(kept);
}

TEST(UtilClock, SecondsBetween) {
    const auto t0 = SteadyClock::now();
    EXPECT_DOUBLE_EQ(seconds_between(t0, t0 + std::chrono::milliseconds(1500)), 1.5);
    EXPECT_DOUBLE_EQ(seconds_between(t0 + std::chrono::seconds(2), t0), -2.0);
    const auto w = std::chrono::system_clock::now();
    EXPECT_DOUBLE_EQ(seconds_between(w, w + std::chrono::seconds(3)), 3.0);
    EXPECT_EQ(from_seconds(0.25), std::chrono::milliseconds(250));
}
