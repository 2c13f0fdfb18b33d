// dcbnl's IEEE replies as the kernel builds them (libnl lays out the bytes; no driver in reach
// implements DCB: netdevsim, veth and virtio_net all answer EOPNOTSUPP), and RoCE's priority.
#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "daemon/netlink/dcb.hpp"

using namespace rocewatch;

namespace {

// A DCB_CMD_IEEE_GET reply: dcbmsg, DCB_ATTR_IFNAME, then the DCB_ATTR_IEEE nest.
class Reply {
public:
    Reply() : m_(nlmsg_alloc_simple(RTM_GETDCB, 0), nlmsg_free) {
        dcbmsg dm{};
        dm.dcb_family = AF_UNSPEC;
        dm.cmd = DCB_CMD_IEEE_GET;
        EXPECT_EQ(nlmsg_append(m_.get(), &dm, sizeof dm, NLMSG_ALIGNTO), 0);
        EXPECT_EQ(nla_put_string(m_.get(), DCB_ATTR_IFNAME, "enp1s0f0np0"), 0);
        ieee_ = nla_nest_start(m_.get(), DCB_ATTR_IEEE);
    }
    Reply& pfc(uint8_t en, uint8_t cap = 8) {
        ieee_pfc p{};
        p.pfc_cap = cap;
        p.pfc_en = en;
        EXPECT_EQ(nla_put(m_.get(), DCB_ATTR_IEEE_PFC, sizeof p, &p), 0);
        return *this;
    }
    Reply& ets(std::array<uint8_t, 8> prio_tc) {
        ieee_ets e{};
        std::memcpy(e.prio_tc, prio_tc.data(), 8);
        e.tc_tsa[0] = IEEE_8021QAZ_TSA_ETS;
        e.tc_tx_bw[0] = 100;
        EXPECT_EQ(nla_put(m_.get(), DCB_ATTR_IEEE_ETS, sizeof e, &e), 0);
        return *this;
    }
    Reply& apps(std::vector<dcb_app> table) {
        auto* nest = nla_nest_start(m_.get(), DCB_ATTR_IEEE_APP_TABLE);
        for (const auto& a : table) EXPECT_EQ(nla_put(m_.get(), DCB_ATTR_IEEE_APP, sizeof a, &a), 0);
        nla_nest_end(m_.get(), nest);
        return *this;
    }
    std::vector<uint8_t> bytes(bool dcbx = true) {
        nla_nest_end(m_.get(), ieee_);
        if (dcbx) {
            EXPECT_EQ(nla_put_u8(m_.get(), DCB_ATTR_DCBX, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE), 0);
        }
        const auto* h = nlmsg_hdr(m_.get());
        return {reinterpret_cast<const uint8_t*>(h), reinterpret_cast<const uint8_t*>(h) + h->nlmsg_len};
    }

private:
    std::unique_ptr<nl_msg, decltype(&nlmsg_free)> m_;
    nlattr* ieee_ = nullptr;
};

const nlmsghdr* hdr(const std::vector<uint8_t>& b) { return reinterpret_cast<const nlmsghdr*>(b.data()); }

TEST(Dcb, ParsesPfcEtsAppAndDcbx) {
    const auto b = Reply()
                       .pfc(0x08)
                       .ets({0, 0, 0, 3, 0, 0, 0, 0})
                       .apps({{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}, {IEEE_8021QAZ_APP_SEL_DSCP, 6, 48}})
                       .bytes();
    const auto d = parse_dcb_ieee(hdr(b));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->pfc_enabled, 0x08);
    EXPECT_EQ(d->pfc_cap, 8);
    ASSERT_TRUE(d->prio_tc);
    EXPECT_EQ((*d->prio_tc)[3], 3);
    EXPECT_EQ((*d->tc_tsa)[0], IEEE_8021QAZ_TSA_ETS);
    ASSERT_EQ(d->apps.size(), 2u);
    EXPECT_EQ(d->apps[0], (DcbApp{.selector = IEEE_8021QAZ_APP_SEL_DSCP, .protocol = 26, .priority = 3}));
    EXPECT_EQ(d->dcbx, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE);
}

TEST(Dcb, ADriverWithoutEtsOrAppGivesOnlyWhatItSent) {
    const auto b = Reply().pfc(0).bytes(false);
    const auto d = parse_dcb_ieee(hdr(b));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->pfc_enabled, 0);
    EXPECT_FALSE(d->prio_tc);
    EXPECT_TRUE(d->apps.empty());
    EXPECT_FALSE(d->dcbx);
}

TEST(Dcb, OtherMessagesAndTruncatedAttributesAreNotMisread) {
    auto b = Reply().pfc(0x08).bytes();
    auto* h = reinterpret_cast<nlmsghdr*>(b.data());
    h->nlmsg_type = RTM_NEWLINK;
    EXPECT_FALSE(parse_dcb_ieee(h));
    h->nlmsg_type = RTM_GETDCB;
    reinterpret_cast<dcbmsg*>(NLMSG_DATA(h))->cmd = DCB_CMD_GSTATE;
    EXPECT_FALSE(parse_dcb_ieee(h));
    // Cut inside the IEEE nest: whatever was cut is dropped, never read past the end.
    auto c = Reply().pfc(0x08).apps({{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}}).bytes(false);
    for (size_t len = NLMSG_LENGTH(sizeof(dcbmsg)); len < c.size(); ++len) {
        std::vector<uint8_t> cut(c.begin(), c.begin() + static_cast<long>(len));
        reinterpret_cast<nlmsghdr*>(cut.data())->nlmsg_len = static_cast<uint32_t>(len);
        const auto d = parse_dcb_ieee(reinterpret_cast<const nlmsghdr*>(cut.data()));
        ASSERT_TRUE(d) << len;
        EXPECT_LE(d->apps.size(), 1u);
    }
}

TEST(Dcb, RequestNamesTheNetdevAndTheIeeeGetCommand) {
    const auto req = dcb_ieee_request("enp1s0f0np0", 7);
    const auto* h = hdr(req);
    EXPECT_EQ(h->nlmsg_type, RTM_GETDCB);
    EXPECT_EQ(h->nlmsg_seq, 7u);
    EXPECT_EQ(reinterpret_cast<const dcbmsg*>(NLMSG_DATA(h))->cmd, DCB_CMD_IEEE_GET);
    const auto* a = reinterpret_cast<const nlattr*>(static_cast<const uint8_t*>(NLMSG_DATA(h)) +
                                                    NLMSG_ALIGN(sizeof(dcbmsg)));
    EXPECT_EQ(a->nla_type, DCB_ATTR_IFNAME);
    EXPECT_STREQ(reinterpret_cast<const char*>(a) + NLA_HDRLEN, "enp1s0f0np0");
    EXPECT_LE(h->nlmsg_len, req.size());
}

TEST(Dcb, RocePriorityFromDscpThenUdpPortThenDefault) {
    DcbIeee trust_dscp;
    trust_dscp.apps = {{.selector = IEEE_8021QAZ_APP_SEL_DSCP, .protocol = 26, .priority = 3}};
    EXPECT_EQ(roce_priority(trust_dscp, 106).priority, 3);  // ToS 106 = DSCP 26, ECN 2
    const auto miss = roce_priority(trust_dscp, 0);
    EXPECT_EQ(miss.priority, 0);
    EXPECT_NE(miss.how.find("not DSCP 0"), std::string::npos);
    DcbIeee by_port;
    by_port.apps = {{.selector = IEEE_8021QAZ_APP_SEL_DGRAM, .protocol = 4791, .priority = 5}};
    EXPECT_EQ(roce_priority(by_port, 0).priority, 5);
    EXPECT_EQ(roce_priority(DcbIeee{}, 0).priority, 0);
}

}  // namespace
