// Parses dcbnl's IEEE replies (PFC, ETS, APP table, DCBX mode) and builds the request for them.
#include "daemon/netlink/dcb.hpp"

#include <linux/dcbnl.h>
#include <net/if.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "daemon/netlink/nl_request.hpp"

namespace rocewatch {

std::optional<DcbIeee> parse_dcb_ieee(const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_GETDCB || nlh->nlmsg_len < NLMSG_LENGTH(sizeof(dcbmsg))) return std::nullopt;
    dcbmsg dm;
    std::memcpy(&dm, NLMSG_DATA(nlh), sizeof dm);
    if (dm.dcb_family != AF_UNSPEC || dm.cmd != DCB_CMD_IEEE_GET) return std::nullopt;
    const auto* attrs = static_cast<const uint8_t*>(NLMSG_DATA(nlh)) + NLMSG_ALIGN(sizeof(dcbmsg));
    const size_t len = nlh->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(dcbmsg)));
    DcbIeee d;
    nl::for_each_attr(attrs, len, [&](int type, const uint8_t* data, size_t n) {
        if (type == DCB_ATTR_DCBX && n >= 1) d.dcbx = data[0];
        if (type != DCB_ATTR_IEEE) return;
        nl::for_each_attr(data, n, [&](int t, const uint8_t* v, size_t vn) {
            if (t == DCB_ATTR_IEEE_PFC && vn >= offsetof(ieee_pfc, pfc_en) + 1) {
                ieee_pfc p;
                std::memset(&p, 0, sizeof p);
                std::memcpy(&p, v, std::min(vn, sizeof p));
                d.pfc_enabled = p.pfc_en;
                d.pfc_cap = p.pfc_cap;
            } else if (t == DCB_ATTR_IEEE_ETS && vn >= offsetof(ieee_ets, tc_reco_bw)) {
                ieee_ets e;
                std::memset(&e, 0, sizeof e);
                std::memcpy(&e, v, std::min(vn, sizeof e));
                std::array<uint8_t, 8> prio_tc{}, tsa{}, bw{};
                std::memcpy(prio_tc.data(), e.prio_tc, 8);
                std::memcpy(tsa.data(), e.tc_tsa, 8);
                std::memcpy(bw.data(), e.tc_tx_bw, 8);
                d.prio_tc = prio_tc;
                d.tc_tsa = tsa;
                d.tc_tx_bw = bw;
            } else if (t == DCB_ATTR_IEEE_APP_TABLE) {
                nl::for_each_attr(v, vn, [&](int at, const uint8_t* av, size_t an) {
                    if (at != DCB_ATTR_IEEE_APP || an < sizeof(dcb_app)) return;
                    dcb_app app;
                    std::memcpy(&app, av, sizeof app);
                    d.apps.push_back({.selector = app.selector, .protocol = app.protocol, .priority = app.priority});
                });
            }
        });
    });
    return d;
}

std::vector<uint8_t> dcb_ieee_request(const std::string& ifname, uint32_t seq) {
    dcbmsg dm{};
    dm.dcb_family = AF_UNSPEC;
    dm.cmd = DCB_CMD_IEEE_GET;
    nl::Request r(RTM_GETDCB, NLM_F_REQUEST, seq, &dm, sizeof dm);
    r.put_string(DCB_ATTR_IFNAME, ifname.substr(0, IFNAMSIZ - 1));
    return r.finish();
}

DcbState query_dcb(const std::string& ifname, int timeout_ms) {
    DcbState st;
    st.error = nl::transact(NETLINK_ROUTE, dcb_ieee_request(ifname, nl::next_seq()), timeout_ms,
                            [&](const nlmsghdr* h) {
                                auto d = parse_dcb_ieee(h);
                                if (d) st.ieee = std::move(*d);
                                return d.has_value();
                            });
    return st;
}

}  // namespace rocewatch
