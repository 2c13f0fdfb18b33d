// The watcher's bounded history of link transitions and address changes, on synthetic links.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "daemon/netlink/history.hpp"

using namespace rocewatch;

namespace {

Link link(int ifindex, const std::string& name, bool up, bool carrier, std::vector<std::string> v4 = {}) {
    Link l{.ifindex = ifindex, .name = name, .admin_up = up, .carrier = carrier};
    for (const auto& a : v4)
        l.addresses.push_back({.family = AF_INET, .address = a, .prefixlen = 24, .scope = "global"});
    return l;
}

std::string whats(const LinkHistory& h) {
    std::string s;
    for (const auto& e : h.events()) s += e.link + ":" + e.what + (e.address.empty() ? "" : "=" + e.address) + " ";
    return s;
}

TimePoint at(int s) { return TimePoint{} + std::chrono::seconds(s); }

}  // namespace

TEST(LinkHistory, FirstSightIsNotATransition) {
    LinkHistory h;
    h.observe_view({link(2, "eth0", true, true, {"10.0.0.1"})}, at(0));
    EXPECT_EQ(whats(h), "");
}

TEST(LinkHistory, AdminDownIsNotAlsoACarrierLoss) {
    LinkHistory h;
    h.observe_view({link(2, "eth0", true, true)}, at(0));
    h.observe_link(link(2, "eth0", false, false), at(1), false);
    h.observe_link(link(2, "eth0", true, false), at(2), false);
    h.observe_link(link(2, "eth0", true, true), at(3), false);
    h.observe_link(link(2, "eth0", true, false), at(4), false);  // a cable pull
    EXPECT_EQ(whats(h), "eth0:admin_down eth0:admin_up eth0:carrier_up eth0:carrier_down ");
    EXPECT_EQ(h.events()[0].at, at(1));
}

TEST(LinkHistory, AddressesLostAndGainedBetweenDumps) {
    LinkHistory h;
    h.observe_view({link(2, "eth0", true, true, {"10.0.0.1"}), link(3, "bond0", true, true)}, at(0));
    // A link event carries no addresses: it says nothing about them.
    h.observe_link(link(2, "eth0", true, true), at(1), false);
    EXPECT_EQ(whats(h), "");
    h.observe_view({link(2, "eth0", true, true), link(3, "bond0", true, true, {"10.0.0.1"})}, at(2));
    EXPECT_EQ(whats(h), "eth0:address_removed=10.0.0.1/24 bond0:address_added=10.0.0.1/24 ");
}

TEST(LinkHistory, BoundedOldestDropped) {
    LinkHistory h(3);
    h.observe_view({link(2, "eth0", true, true)}, at(0));
    for (int i = 1; i <= 6; ++i)
        h.observe_link(link(2, "eth0", true, i % 2 == 0), at(i), false);  // one carrier change each
    ASSERT_EQ(h.events().size(), 3u);
    EXPECT_EQ(h.events().front().at, at(4));
    EXPECT_EQ(h.events().back().at, at(6));
}

TEST(LinkHistory, ALinkDeletedAndRecreatedStartsAfresh) {
    LinkHistory h;
    h.observe_view({link(2, "eth0", true, true)}, at(0));
    h.observe_view({}, at(1));
    h.observe_view({link(2, "eth0", false, false)}, at(2));
    EXPECT_EQ(whats(h), "");
}
