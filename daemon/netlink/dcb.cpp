// Parses dcbnl's IEEE replies (PFC, ETS, APP table, DCBX mode) and builds the request for them.
#include "daemon/netlink/dcb.hpp"

#include <linux/dcbnl.h>
#include <net/if.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

namespace rocewatch {

namespace {

// The attributes nested in `payload` (len bytes), each handed to fn(type, data, len).
template <class Fn>
void for_each_attr(const uint8_t* payload, size_t len, Fn&& fn) {
    size_t off = 0;
    while (off + sizeof(nlattr) <= len) {
        nlattr a;
        std::memcpy(&a, payload + off, sizeof a);
        if (a.nla_len < sizeof(nlattr) || off + a.nla_len > len) return;
        fn(static_cast<int>(a.nla_type & NLA_TYPE_MASK), payload + off + NLA_HDRLEN, a.nla_len - NLA_HDRLEN);
        off += NLA_ALIGN(a.nla_len);
    }
}

}  // namespace

std::optional<DcbIeee> parse_dcb_ieee(const nlmsghdr* nlh) {
    if (nlh->nlmsg_type != RTM_GETDCB || nlh->nlmsg_len < NLMSG_LENGTH(sizeof(dcbmsg))) return std::nullopt;
    dcbmsg dm;
    std::memcpy(&dm, NLMSG_DATA(nlh), sizeof dm);
    if (dm.dcb_family != AF_UNSPEC || dm.cmd != DCB_CMD_IEEE_GET) return std::nullopt;
    const auto* attrs = static_cast<const uint8_t*>(NLMSG_DATA(nlh)) + NLMSG_ALIGN(sizeof(dcbmsg));
    const size_t len = nlh->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(dcbmsg)));
    DcbIeee d;
    for_each_attr(attrs, len, [&](int type, const uint8_t* data, size_t n) {
        if (type == DCB_ATTR_DCBX && n >= 1) d.dcbx = data[0];
        if (type != DCB_ATTR_IEEE) return;
        for_each_attr(data, n, [&](int t, const uint8_t* v, size_t vn) {
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
                for_each_attr(v, vn, [&](int at, const uint8_t* av, size_t an) {
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
    const size_t name_len = std::min<size_t>(ifname.size(), IFNAMSIZ - 1) + 1;
    const size_t attr_len = NLA_HDRLEN + name_len;
    const size_t total = NLMSG_LENGTH(NLMSG_ALIGN(sizeof(dcbmsg))) + NLA_ALIGN(attr_len);
    std::vector<uint8_t> buf(NLMSG_ALIGN(total), 0);
    auto* nlh = reinterpret_cast<nlmsghdr*>(buf.data());
    nlh->nlmsg_len = static_cast<uint32_t>(total);
    nlh->nlmsg_type = RTM_GETDCB;
    nlh->nlmsg_flags = NLM_F_REQUEST;
    nlh->nlmsg_seq = seq;
    dcbmsg dm{};
    dm.dcb_family = AF_UNSPEC;
    dm.cmd = DCB_CMD_IEEE_GET;
    std::memcpy(NLMSG_DATA(nlh), &dm, sizeof dm);
    auto* a = reinterpret_cast<nlattr*>(static_cast<uint8_t*>(NLMSG_DATA(nlh)) + NLMSG_ALIGN(sizeof(dcbmsg)));
    a->nla_len = static_cast<uint16_t>(attr_len);
    a->nla_type = DCB_ATTR_IFNAME;
    std::memcpy(reinterpret_cast<uint8_t*>(a) + NLA_HDRLEN, ifname.data(), name_len - 1);
    return buf;
}

DcbState query_dcb(const std::string& ifname, int timeout_ms) {
    DcbState st;
    const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) {
        st.error = errno;
        return st;
    }
    timeval tv{.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static std::atomic<uint32_t> seq{1};
    const uint32_t my_seq = seq.fetch_add(1);
    const auto req = dcb_ieee_request(ifname, my_seq);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd, req.data(), reinterpret_cast<const nlmsghdr*>(req.data())->nlmsg_len, 0,
                 reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) < 0) {
        st.error = errno;
        ::close(fd);
        return st;
    }
    std::vector<uint8_t> buf(16384);
    st.error = ETIMEDOUT;
    for (int tries = 0; tries < 8; ++tries) {
        ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n < 0) {
            st.error = errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
            break;
        }
        bool done = false;
        int left = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_seq != my_seq) continue;
            done = true;
            if (h->nlmsg_type == NLMSG_ERROR) {
                nlmsgerr e{};
                if (h->nlmsg_len >= NLMSG_LENGTH(sizeof e)) std::memcpy(&e, NLMSG_DATA(h), sizeof e);
                st.error = e.error < 0 ? -e.error : EPROTO;
            } else if (auto d = parse_dcb_ieee(h)) {
                st.error = 0;
                st.ieee = std::move(*d);
            } else {
                st.error = EPROTO;
            }
            break;
        }
        if (done) break;
    }
    ::close(fd);
    return st;
}

}  // namespace rocewatch
