// ethtool netlink replies as the kernel builds them (libnl lays out the bytes): link modes,
// FEC with per-lane statistics, pause with statistics; the requests; the family lookup.
// The queries run on real netdevs in the netns suite (test_netlink_netns.cpp).
#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "daemon/netlink/ethtool_nl.hpp"
#include "daemon/netlink/nl_request.hpp"

using namespace rocewatch;

namespace {

constexpr uint16_t kFamily = 27;  // whatever id the kernel gave "ethtool"

class Reply {
public:
    Reply(uint16_t family, uint8_t cmd) : m_(nlmsg_alloc_simple(family, 0), nlmsg_free) {
        genlmsghdr g{.cmd = cmd, .version = 1, .reserved = 0};
        EXPECT_EQ(nlmsg_append(m_.get(), &g, sizeof g, NLMSG_ALIGNTO), 0);
        auto* h = nla_nest_start(m_.get(), 1);  // ETHTOOL_A_*_HEADER
        EXPECT_EQ(nla_put_u32(m_.get(), ETHTOOL_A_HEADER_DEV_INDEX, 4), 0);
        EXPECT_EQ(nla_put_string(m_.get(), ETHTOOL_A_HEADER_DEV_NAME, "enp1s0f0np0"), 0);
        nla_nest_end(m_.get(), h);
    }
    nl_msg* msg() { return m_.get(); }
    std::vector<uint8_t> bytes() {
        const auto* h = nlmsg_hdr(m_.get());
        return {reinterpret_cast<const uint8_t*>(h), reinterpret_cast<const uint8_t*>(h) + h->nlmsg_len};
    }

private:
    std::unique_ptr<nl_msg, void (*)(nl_msg*)> m_;
};

const nlmsghdr* hdr(const std::vector<uint8_t>& b) { return reinterpret_cast<const nlmsghdr*>(b.data()); }

void put_u64_array(nl_msg* m, int type, std::vector<uint64_t> v) {
    EXPECT_EQ(nla_put(m, type, static_cast<int>(v.size() * sizeof(uint64_t)), v.data()), 0);
}

}  // namespace

TEST(EthtoolNl, LinkModesOfA100GFourLaneLink) {
    Reply r(kFamily, ETHTOOL_MSG_LINKMODES_GET_REPLY);
    nla_put_u8(r.msg(), ETHTOOL_A_LINKMODES_AUTONEG, AUTONEG_ENABLE);
    nla_put_u32(r.msg(), ETHTOOL_A_LINKMODES_SPEED, 100000);
    nla_put_u8(r.msg(), ETHTOOL_A_LINKMODES_DUPLEX, DUPLEX_FULL);
    nla_put_u32(r.msg(), ETHTOOL_A_LINKMODES_LANES, 4);
    const auto b = r.bytes();
    PhyLink p;
    ASSERT_TRUE(parse_ethtool_linkmodes(hdr(b), kFamily, p));
    EXPECT_EQ(p.speed_mbps, 100000u);
    EXPECT_EQ(p.lanes, 4u);
    EXPECT_EQ(p.autoneg, true);
    EXPECT_EQ(p.duplex, "full");
    // Another family's message, or another reply of this one, is not read as link modes.
    PhyLink q;
    EXPECT_FALSE(parse_ethtool_linkmodes(hdr(b), kFamily + 1, q));
    EXPECT_FALSE(parse_ethtool_fec(hdr(b), kFamily, q));
    EXPECT_EQ(q, PhyLink{});
}

TEST(EthtoolNl, NoLinkSaysSpeedUnknownAndNoLanes) {
    Reply r(kFamily, ETHTOOL_MSG_LINKMODES_GET_REPLY);
    nla_put_u8(r.msg(), ETHTOOL_A_LINKMODES_AUTONEG, AUTONEG_DISABLE);
    nla_put_u32(r.msg(), ETHTOOL_A_LINKMODES_SPEED, static_cast<uint32_t>(SPEED_UNKNOWN));
    nla_put_u8(r.msg(), ETHTOOL_A_LINKMODES_DUPLEX, DUPLEX_UNKNOWN);
    const auto b = r.bytes();
    PhyLink p;
    ASSERT_TRUE(parse_ethtool_linkmodes(hdr(b), kFamily, p));
    EXPECT_FALSE(p.speed_mbps);
    EXPECT_FALSE(p.lanes);
    EXPECT_EQ(p.autoneg, false);
    EXPECT_EQ(p.duplex, "");
}

// FEC statistics: the total first, then a value per lane (mlx5 counts lanes); a statistic the
// driver does not count is an empty array, and ETHTOOL_STAT_NOT_SET is no value.
TEST(EthtoolNl, FecModeAndPerLaneStatistics) {
    Reply r(kFamily, ETHTOOL_MSG_FEC_GET_REPLY);
    nla_put_u8(r.msg(), ETHTOOL_A_FEC_AUTO, 0);
    nla_put_u32(r.msg(), ETHTOOL_A_FEC_ACTIVE, ETHTOOL_LINK_MODE_FEC_RS_BIT);
    auto* st = nla_nest_start(r.msg(), ETHTOOL_A_FEC_STATS);
    put_u64_array(r.msg(), ETHTOOL_A_FEC_STAT_CORRECTED, {1000, 250, 250, 300, 200});
    put_u64_array(r.msg(), ETHTOOL_A_FEC_STAT_UNCORR, {3, 0, 3, 0, 0});
    put_u64_array(r.msg(), ETHTOOL_A_FEC_STAT_CORR_BITS, {});
    nla_nest_end(r.msg(), st);
    const auto b = r.bytes();
    PhyLink p;
    ASSERT_TRUE(parse_ethtool_fec(hdr(b), kFamily, p));
    EXPECT_EQ(p.fec_active, "RS");
    EXPECT_EQ(p.fec_auto, false);
    EXPECT_EQ(p.fec_corrected_blocks, 1000u);
    EXPECT_EQ(p.fec_corrected_blocks_lanes, (std::vector<uint64_t>{250, 250, 300, 200}));
    EXPECT_EQ(p.fec_uncorrectable_blocks, 3u);
    EXPECT_EQ(p.fec_uncorrectable_blocks_lanes, (std::vector<uint64_t>{0, 3, 0, 0}));
    EXPECT_FALSE(p.fec_corrected_bits);

    Reply none(kFamily, ETHTOOL_MSG_FEC_GET_REPLY);
    nla_put_u32(none.msg(), ETHTOOL_A_FEC_ACTIVE, ETHTOOL_LINK_MODE_FEC_NONE_BIT);
    auto* st2 = nla_nest_start(none.msg(), ETHTOOL_A_FEC_STATS);
    put_u64_array(none.msg(), ETHTOOL_A_FEC_STAT_CORRECTED, {~uint64_t{0}});
    nla_nest_end(none.msg(), st2);
    const auto b2 = none.bytes();
    PhyLink q;
    ASSERT_TRUE(parse_ethtool_fec(hdr(b2), kFamily, q));
    EXPECT_EQ(q.fec_active, "None");
    EXPECT_FALSE(q.fec_corrected_blocks);
    EXPECT_TRUE(q.fec_corrected_blocks_lanes.empty());
}

TEST(EthtoolNl, PauseSettingsAndStatistics) {
    Reply r(kFamily, ETHTOOL_MSG_PAUSE_GET_REPLY);
    nla_put_u8(r.msg(), ETHTOOL_A_PAUSE_AUTONEG, 0);
    nla_put_u8(r.msg(), ETHTOOL_A_PAUSE_RX, 1);
    nla_put_u8(r.msg(), ETHTOOL_A_PAUSE_TX, 1);
    auto* st = nla_nest_start(r.msg(), ETHTOOL_A_PAUSE_STATS);
    nla_put_u64(r.msg(), ETHTOOL_A_PAUSE_STAT_TX_FRAMES, 17);
    nla_put_u64(r.msg(), ETHTOOL_A_PAUSE_STAT_RX_FRAMES, 4242);
    nla_nest_end(r.msg(), st);
    const auto b = r.bytes();
    PhyLink p;
    ASSERT_TRUE(parse_ethtool_pause(hdr(b), kFamily, p));
    EXPECT_EQ(p.pause_autoneg, false);
    EXPECT_EQ(p.pause_rx, true);
    EXPECT_EQ(p.pause_tx, true);
    EXPECT_EQ(p.pause_tx_frames, 17u);
    EXPECT_EQ(p.pause_rx_frames, 4242u);
}

// Truncated at every length, a reply is read up to what is whole, never past its end.
TEST(EthtoolNl, TruncatedRepliesAreReadOnlyAsFarAsTheyAreWhole) {
    Reply r(kFamily, ETHTOOL_MSG_FEC_GET_REPLY);
    nla_put_u32(r.msg(), ETHTOOL_A_FEC_ACTIVE, ETHTOOL_LINK_MODE_FEC_RS_BIT);
    auto* st = nla_nest_start(r.msg(), ETHTOOL_A_FEC_STATS);
    put_u64_array(r.msg(), ETHTOOL_A_FEC_STAT_CORRECTED, {5, 1, 4});
    nla_nest_end(r.msg(), st);
    const auto whole = r.bytes();
    for (size_t len = sizeof(nlmsghdr); len < whole.size(); ++len) {
        std::vector<uint8_t> b(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(len));
        uint32_t l32 = static_cast<uint32_t>(len);
        std::memcpy(b.data(), &l32, sizeof l32);
        PhyLink p;
        (void)parse_ethtool_fec(hdr(b), kFamily, p);
        if (p.fec_corrected_blocks) {
            EXPECT_EQ(*p.fec_corrected_blocks, 5u) << len;
        }
    }
}

// The requests: the header nest names the netdev, asks for compact bitsets and, where asked,
// statistics; the family lookup names "ethtool" and its answer gives the id.
TEST(EthtoolNl, RequestsAndTheFamilyLookup) {
    const auto req = ethtool_get_request(kFamily, ETHTOOL_MSG_FEC_GET, "enp1s0f0np0", ETHTOOL_FLAG_STATS, 9);
    const auto* h = hdr(req);
    EXPECT_EQ(h->nlmsg_type, kFamily);
    EXPECT_EQ(h->nlmsg_seq, 9u);
    EXPECT_EQ(h->nlmsg_len, req.size());
    genlmsghdr g;
    std::memcpy(&g, NLMSG_DATA(h), sizeof g);
    EXPECT_EQ(g.cmd, ETHTOOL_MSG_FEC_GET);
    std::string name;
    uint32_t flags = 0;
    bool nested = false;
    nl::for_each_attr(static_cast<const uint8_t*>(NLMSG_DATA(h)) + GENL_HDRLEN,
                      h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), [&](int t, const uint8_t* v, size_t n) {
                          if (t != ETHTOOL_A_FEC_HEADER) return;
                          nested = true;
                          nl::for_each_attr(v, n, [&](int ht, const uint8_t* hv, size_t hn) {
                              if (ht == ETHTOOL_A_HEADER_DEV_NAME)
                                  name.assign(reinterpret_cast<const char*>(hv),
                                              strnlen(reinterpret_cast<const char*>(hv), hn));
                              if (ht == ETHTOOL_A_HEADER_FLAGS) flags = nl::attr_uint<uint32_t>(hv, hn);
                          });
                      });
    EXPECT_TRUE(nested);
    EXPECT_EQ(name, "enp1s0f0np0");
    EXPECT_EQ(flags, uint32_t{ETHTOOL_FLAG_STATS | ETHTOOL_FLAG_COMPACT_BITSETS});

    const auto fam = genl_family_request("ethtool", 3);
    EXPECT_EQ(hdr(fam)->nlmsg_type, GENL_ID_CTRL);
    Reply answer(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY);
    nla_put_u16(answer.msg(), CTRL_ATTR_FAMILY_ID, kFamily);
    nla_put_string(answer.msg(), CTRL_ATTR_FAMILY_NAME, "ethtool");
    const auto b = answer.bytes();
    EXPECT_EQ(parse_genl_family_id(hdr(b)), kFamily);
}

// MODULE_EEPROM_GET: the request names the half page (offset, 128 bytes, page, bank, two-wire
// address); the reply's data attribute is the page, whatever else the kernel puts beside it.
TEST(EthtoolNl, ModuleEepromRequestAndReply) {
    const auto req = ethtool_module_eeprom_request(kFamily, "enp1s0f0np0", {0x50, 0x11, 0, 128}, 5);
    const auto* h = hdr(req);
    EXPECT_EQ(h->nlmsg_type, kFamily);
    EXPECT_EQ(h->nlmsg_len, req.size());
    genlmsghdr g;
    std::memcpy(&g, NLMSG_DATA(h), sizeof g);
    EXPECT_EQ(g.cmd, ETHTOOL_MSG_MODULE_EEPROM_GET);
    std::map<int, uint32_t> v32;
    std::string name;
    nl::for_each_attr(static_cast<const uint8_t*>(NLMSG_DATA(h)) + GENL_HDRLEN,
                      h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), [&](int t, const uint8_t* v, size_t n) {
                          if (t == ETHTOOL_A_MODULE_EEPROM_HEADER)
                              nl::for_each_attr(v, n, [&](int ht, const uint8_t* hv, size_t hn) {
                                  if (ht == ETHTOOL_A_HEADER_DEV_NAME)
                                      name.assign(reinterpret_cast<const char*>(hv),
                                                  strnlen(reinterpret_cast<const char*>(hv), hn));
                              });
                          else if (n == 1)
                              v32[t] = v[0];
                          else if (n == 4)
                              v32[t] = nl::attr_uint<uint32_t>(v, n);
                      });
    EXPECT_EQ(name, "enp1s0f0np0");
    EXPECT_EQ(v32[ETHTOOL_A_MODULE_EEPROM_OFFSET], 128u);
    EXPECT_EQ(v32[ETHTOOL_A_MODULE_EEPROM_LENGTH], 128u);
    EXPECT_EQ(v32[ETHTOOL_A_MODULE_EEPROM_PAGE], 0x11u);
    EXPECT_EQ(v32[ETHTOOL_A_MODULE_EEPROM_BANK], 0u);
    EXPECT_EQ(v32[ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS], 0x50u);

    Reply r(kFamily, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY);
    std::vector<uint8_t> page(128);
    for (size_t i = 0; i < page.size(); ++i) page[i] = static_cast<uint8_t>(i * 7);
    EXPECT_EQ(nla_put(r.msg(), ETHTOOL_A_MODULE_EEPROM_DATA, static_cast<int>(page.size()), page.data()), 0);
    const auto b = r.bytes();
    std::vector<uint8_t> got;
    EXPECT_TRUE(parse_ethtool_module_eeprom(hdr(b), kFamily, got));
    EXPECT_EQ(got, page);
    std::vector<uint8_t> none;
    EXPECT_FALSE(parse_ethtool_module_eeprom(hdr(b), kFamily + 1, none)) << "another family's message";
    Reply fec(kFamily, ETHTOOL_MSG_FEC_GET_REPLY);
    const auto fb = fec.bytes();
    EXPECT_FALSE(parse_ethtool_module_eeprom(hdr(fb), kFamily, none)) << "another command's reply";
    EXPECT_TRUE(none.empty());
}

// STATS_GET: the request asks for the four standard groups as a compact bitset; the reply's
// groups are read by their id, each statistic by its index, into the names ethtool prints.
// A statistic the driver does not count is left out, as is a group this build does not know.
TEST(EthtoolNl, StandardStatisticsGroups) {
    const auto req = ethtool_stats_request(kFamily, "enp1s0f0np0", 11);
    const auto* h = hdr(req);
    genlmsghdr g;
    std::memcpy(&g, NLMSG_DATA(h), sizeof g);
    EXPECT_EQ(g.cmd, ETHTOOL_MSG_STATS_GET);
    bool nomask = false;
    uint32_t size = 0, bits = 0;
    nl::for_each_attr(static_cast<const uint8_t*>(NLMSG_DATA(h)) + GENL_HDRLEN,
                      h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), [&](int t, const uint8_t* v, size_t n) {
                          if (t != ETHTOOL_A_STATS_GROUPS) return;
                          nl::for_each_attr(v, n, [&](int bt, const uint8_t* bv, size_t bn) {
                              if (bt == ETHTOOL_A_BITSET_NOMASK) nomask = bn == 0;
                              if (bt == ETHTOOL_A_BITSET_SIZE) size = nl::attr_uint<uint32_t>(bv, bn);
                              if (bt == ETHTOOL_A_BITSET_VALUE) bits = nl::attr_uint<uint32_t>(bv, bn);
                          });
                      });
    EXPECT_TRUE(nomask);
    EXPECT_EQ(size, 4u);
    EXPECT_EQ(bits, 0xfu) << "eth-phy, eth-mac, eth-ctrl, rmon";

    Reply r(kFamily, ETHTOOL_MSG_STATS_GET_REPLY);
    const auto group = [&](uint32_t id, std::vector<std::pair<int, uint64_t>> stats) {
        auto* grp = nla_nest_start(r.msg(), ETHTOOL_A_STATS_GRP);
        nla_put_u32(r.msg(), ETHTOOL_A_STATS_GRP_ID, id);
        nla_put_u32(r.msg(), ETHTOOL_A_STATS_GRP_SS_ID, 20 + id);
        for (const auto& [index, v] : stats) {
            auto* st = nla_nest_start(r.msg(), ETHTOOL_A_STATS_GRP_STAT);
            nla_put_u64(r.msg(), index, v);
            nla_nest_end(r.msg(), st);
        }
        nla_nest_end(r.msg(), grp);
    };
    group(ETHTOOL_STATS_ETH_PHY, {{ETHTOOL_A_STATS_ETH_PHY_5_SYM_ERR, 17}});
    group(ETHTOOL_STATS_ETH_MAC, {{ETHTOOL_A_STATS_ETH_MAC_6_FCS_ERR, 42},
                                  {ETHTOOL_A_STATS_ETH_MAC_5_RX_PKT, 123456789},
                                  {ETHTOOL_A_STATS_ETH_MAC_7_ALIGN_ERR, ~uint64_t{0}}});  // not counted
    group(ETHTOOL_STATS_RMON, {{ETHTOOL_A_STATS_RMON_JABBER, 3}});
    group(99, {{0, 5}});  // a group from a newer kernel
    const auto b = r.bytes();
    PhyLink p;
    EXPECT_TRUE(parse_ethtool_stats(hdr(b), kFamily, p));
    EXPECT_EQ(p.standard_stats, (std::map<std::string, uint64_t>{{"eth-mac/FrameCheckSequenceErrors", 42},
                                                                 {"eth-mac/FramesReceivedOK", 123456789},
                                                                 {"eth-phy/SymbolErrorDuringCarrier", 17},
                                                                 {"rmon/etherStatsJabbers", 3}}));
    PhyLink other;
    EXPECT_FALSE(parse_ethtool_stats(hdr(b), kFamily + 1, other));
    EXPECT_TRUE(other.standard_stats.empty());
}
