// IPv4 prefix arithmetic behind subnet_overlap.
#include <gtest/gtest.h>

#include "daemon/rules/ipv4.hpp"

using namespace rocewatch;

TEST(Ipv4, ParsesDottedQuads) {
    EXPECT_EQ(ipv4::parse("192.168.100.15"), 0xC0A8640Fu);
    EXPECT_EQ(ipv4::parse("0.0.0.0"), 0u);
    EXPECT_EQ(ipv4::parse("255.255.255.255"), 0xFFFFFFFFu);
    for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4/24", "a.b.c.d", "1..2.3", " 1.2.3.4",
                            "1.2.3.4 ", "1.2.3.1000", "::ffff:1.2.3.4"})
        EXPECT_FALSE(ipv4::parse(bad)) << bad;
    EXPECT_EQ(ipv4::format(0xC0A8640Fu), "192.168.100.15");
}

TEST(Ipv4, Masks) {
    EXPECT_EQ(ipv4::mask(0), 0u);
    EXPECT_EQ(ipv4::mask(8), 0xFF000000u);
    EXPECT_EQ(ipv4::mask(24), 0xFFFFFF00u);
    EXPECT_EQ(ipv4::mask(31), 0xFFFFFFFEu);
    EXPECT_EQ(ipv4::mask(32), 0xFFFFFFFFu);
    EXPECT_EQ(ipv4::mask(40), 0xFFFFFFFFu);
    EXPECT_EQ(ipv4::mask(-1), 0u);
    EXPECT_EQ(ipv4::format(ipv4::network(*ipv4::parse("192.168.100.15"), 24)), "192.168.100.0");
    EXPECT_EQ(ipv4::format(ipv4::network(*ipv4::parse("10.1.2.3"), 12)), "10.0.0.0");
}

TEST(Ipv4, OverlapUnderTheShorterPrefix) {
    const auto a = *ipv4::parse("192.168.100.11");
    const auto b = *ipv4::parse("192.168.100.15");
    const auto c = *ipv4::parse("192.168.200.11");
    EXPECT_TRUE(ipv4::overlap(a, 24, b, 24));   // a second interface in a rail's subnet
    EXPECT_FALSE(ipv4::overlap(a, 24, c, 24));  // one subnet per rail
    EXPECT_TRUE(ipv4::overlap(a, 24, b, 32));   // a host route inside the subnet
    EXPECT_TRUE(ipv4::overlap(a, 16, c, 24));   // a /16 holding the other /24
    EXPECT_FALSE(ipv4::overlap(a, 30, b, 30));  // .8/30 vs .12/30
    EXPECT_TRUE(ipv4::overlap(a, 0, c, 32));    // a default-sized prefix holds everything
}

TEST(Ipv4, LinkLocal) {
    EXPECT_TRUE(ipv4::is_link_local(*ipv4::parse("169.254.1.2")));
    EXPECT_FALSE(ipv4::is_link_local(*ipv4::parse("169.255.1.2")));
    EXPECT_FALSE(ipv4::is_link_local(*ipv4::parse("192.168.100.11")));
}
