// The shared helpers in util/: hex, constant-time compare, Fd, seconds_between, json_int.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/clock.hpp"
#include "util/ct_compare.hpp"
#include "util/fd.hpp"
#include "util/hex.hpp"
#include "util/json_int.hpp"

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

TEST(UtilJsonInt, TakesOnlyWholeNumbersWithinTheBounds) {
    using nlohmann::json;
    EXPECT_EQ(json_int<int>(json(3)), 3);
    EXPECT_EQ(json_int<int>(json(-1), -1, 10), -1);
    EXPECT_FALSE(json_int<int>(json(-2), -1, 10));
    EXPECT_FALSE(json_int<int>(json(11), -1, 10));
    EXPECT_FALSE(json_int<int>(json(2.2e120))) << "a float has no int: converting it is undefined";
    EXPECT_FALSE(json_int<int>(json(3.0))) << "a float is refused even when it is whole";
    EXPECT_FALSE(json_int<int>(json("3")));
    EXPECT_FALSE(json_int<int>(json(true)));
    EXPECT_FALSE(json_int<int>(json(nullptr)));
    EXPECT_FALSE(json_int<int>(json(int64_t{1} << 40))) << "past int, not wrapped";
    EXPECT_FALSE(json_int<uint16_t>(json(70000))) << "not wrapped to 4464";
    EXPECT_FALSE(json_int<uint32_t>(json(-1)));
    EXPECT_EQ(json_int<uint64_t>(json(std::numeric_limits<uint64_t>::max())), std::numeric_limits<uint64_t>::max());
    EXPECT_FALSE(json_int<int64_t>(json(std::numeric_limits<uint64_t>::max())));
    EXPECT_EQ(json_int<int64_t>(json(std::numeric_limits<int64_t>::min())), std::numeric_limits<int64_t>::min());
    EXPECT_FALSE(json_int<uint8_t>(json(0), 1, 255)) << "a lower bound above zero holds for unsigned values too";
}

TEST(UtilJsonInt, AnAbsentKeyIsTheFallbackAndAPresentOneMustBeInRange) {
    const auto obj = nlohmann::json{{"gid_index", 3}, {"bad", 2.5}};
    EXPECT_EQ(json_int_or<int>(obj, "gid_index", -1, -1, 255), 3);
    EXPECT_EQ(json_int_or<int>(obj, "absent", -1, -1, 255), -1);
    EXPECT_FALSE(json_int_or<int>(obj, "bad", -1, -1, 255));
}
