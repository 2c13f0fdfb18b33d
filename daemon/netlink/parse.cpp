// Pure rtnetlink message parsing and link-view assembly (see parse.hpp for the contract).
#include "daemon/netlink/parse.hpp"
#include "util/hex.hpp"

#include <arpa/inet.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_bonding.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace rocewatch {
namespace {

// Kernel hardware addresses never exceed MAX_ADDR_LEN (32); anything longer is corrupt.
constexpr int kMaxHwAddrLen = 32;

// libnl's parse functions take non-const pointers although they only read: the casts
// below are the price of keeping our API const-correct.
nlattr* mut(const nlattr* a) { return const_cast<nlattr*>(a); }

// Fixed-size integer attributes are read only when the payload is long enough, so a
// truncated attribute is skipped instead of read past its end.
template <typename T>
std::optional<T> get_uint(const nlattr* a) {
    if (a == nullptr || nla_len(a) < static_cast<int>(sizeof(T))) return std::nullopt;
    T v{};
    std::memcpy(&v, nla_data(a), sizeof v);
    return v;
}

// The kernel NUL-terminates strings, but a corrupt one must not make us read past the
// attribute: bound by the payload length.
std::string get_string(const nlattr* a) {
    if (a == nullptr) return {};
    const auto* p = static_cast<const char*>(nla_data(a));
    return std::string(p, strnlen(p, static_cast<size_t>(nla_len(a))));
}

std::string format_hwaddr(const nlattr* a) {
    if (a == nullptr) return {};
    const int len = nla_len(a);
    if (len <= 0 || len > kMaxHwAddrLen) return {};
    const auto* b = static_cast<const unsigned char*>(nla_data(a));
    std::string out;
    out.reserve(static_cast<size_t>(len) * 3);
    for (int i = 0; i < len; ++i) {
        if (i) out += ':';
        out += kHexDigits[b[i] >> 4];
        out += kHexDigits[b[i] & 0xf];
    }
    return out;
}

// A value the kernel may add later stays visible rather than being folded into a
// known name.
std::string name_or_unknown(std::span<const char* const> names, unsigned v) {
    if (v < names.size()) return names[v];
    return "unknown(" + std::to_string(v) + ")";
}

std::string operstate_name(uint8_t v) {
    // Index = IF_OPER_* (linux/if.h), spelled as iproute2 prints them, lower case.
    static constexpr std::array<const char*, 7> kNames = {"unknown", "notpresent", "down", "lowerlayerdown",
                                                          "testing", "dormant",    "up"};
    static_assert(IF_OPER_UP == 6 && IF_OPER_UNKNOWN == 0);
    return name_or_unknown(kNames, v);
}

std::string bond_mode_name(uint8_t v) {
    // Index = BOND_MODE_*; names as the bonding driver's sysfs `mode` file spells them.
    static constexpr std::array<const char*, 7> kNames = {"balance-rr", "active-backup", "balance-xor", "broadcast",
                                                          "802.3ad",    "balance-tlb",   "balance-alb"};
    static_assert(BOND_MODE_ROUNDROBIN == 0 && BOND_MODE_ALB == 6);
    return name_or_unknown(kNames, v);
}

std::string xmit_hash_policy_name(uint8_t v) {
    // Index = BOND_XMIT_POLICY_*.
    static constexpr std::array<const char*, 6> kNames = {"layer2",   "layer3+4", "layer2+3",
                                                          "encap2+3", "encap3+4", "vlan+srcmac"};
    static_assert(BOND_XMIT_POLICY_LAYER2 == 0 && BOND_XMIT_POLICY_VLAN_SRCMAC == 5);
    return name_or_unknown(kNames, v);
}

std::string slave_state_name(uint8_t v) {
    static constexpr std::array<const char*, 2> kNames = {"active", "backup"};
    static_assert(BOND_STATE_ACTIVE == 0 && BOND_STATE_BACKUP == 1);
    return name_or_unknown(kNames, v);
}

std::string mii_status_name(uint8_t v) {
    // Index = BOND_LINK_* (uapi if_bonding.h), as /proc/net/bonding words them. FAIL (1) is
    // "down, waiting out downdelay"; with downdelay 0 the kernel moves on to DOWN (2) in
    // the same miimon tick, so a dead slave normally reads "down".
    static constexpr std::array<const char*, 4> kNames = {"up", "going down", "down", "going back"};
    static_assert(BOND_LINK_UP == 0 && BOND_LINK_FAIL == 1 && BOND_LINK_DOWN == 2 && BOND_LINK_BACK == 3);
    return name_or_unknown(kNames, v);
}

std::string scope_name(uint8_t v) {
    switch (v) {
        case RT_SCOPE_UNIVERSE: return "global";
        case RT_SCOPE_SITE: return "site";
        case RT_SCOPE_LINK: return "link";
        case RT_SCOPE_HOST: return "host";
        case RT_SCOPE_NOWHERE: return "nowhere";
        default: return std::to_string(v);  // iproute2 prints unnamed scopes as numbers
    }
}

// libnl 3.7 has no getters for bond IFLA_INFO_DATA, so the attributes are read raw.
BondInfo parse_bond(const nlattr* data) {
    BondInfo b;
    if (data == nullptr) return b;
    nlattr* tb[IFLA_BOND_MAX + 1] = {};
    if (nla_parse_nested(tb, IFLA_BOND_MAX, mut(data), nullptr) < 0) return b;
    if (auto v = get_uint<uint8_t>(tb[IFLA_BOND_MODE])) b.mode = bond_mode_name(*v);
    b.miimon = get_uint<uint32_t>(tb[IFLA_BOND_MIIMON]);
    if (auto v = get_uint<uint8_t>(tb[IFLA_BOND_XMIT_HASH_POLICY])) b.xmit_hash_policy = xmit_hash_policy_name(*v);
    if (auto v = get_uint<uint32_t>(tb[IFLA_BOND_ACTIVE_SLAVE]); v && *v != 0)
        b.active_slave = std::to_string(*v);  // resolved to a name by assemble_links()
    return b;
}

BondSlaveInfo parse_bond_slave(const nlattr* data) {
    BondSlaveInfo s;
    if (data == nullptr) return s;
    nlattr* tb[IFLA_BOND_SLAVE_MAX + 1] = {};
    if (nla_parse_nested(tb, IFLA_BOND_SLAVE_MAX, mut(data), nullptr) < 0) return s;
    if (auto v = get_uint<uint8_t>(tb[IFLA_BOND_SLAVE_STATE])) s.state = slave_state_name(*v);
    if (auto v = get_uint<uint8_t>(tb[IFLA_BOND_SLAVE_MII_STATUS])) s.mii_status = mii_status_name(*v);
    s.link_failure_count = get_uint<uint32_t>(tb[IFLA_BOND_SLAVE_LINK_FAILURE_COUNT]);
    s.perm_hwaddr = format_hwaddr(tb[IFLA_BOND_SLAVE_PERM_HWADDR]);
    return s;
}

void parse_linkinfo(const nlattr* linkinfo, Link& l) {
    if (linkinfo == nullptr) return;
    nlattr* li[IFLA_INFO_MAX + 1] = {};
    if (nla_parse_nested(li, IFLA_INFO_MAX, mut(linkinfo), nullptr) < 0) return;
    l.kind = get_string(li[IFLA_INFO_KIND]);
    if (l.kind == "bond") l.bond = parse_bond(li[IFLA_INFO_DATA]);
    // A bridge or team port carries its own slave kind; only bond ports fill `slave`.
    if (get_string(li[IFLA_INFO_SLAVE_KIND]) == "bond") l.slave = parse_bond_slave(li[IFLA_INFO_SLAVE_DATA]);
}

}  // namespace

std::optional<Link> parse_link_message(const nlmsghdr* nlh) {
    if (nlh == nullptr || nlh->nlmsg_type != RTM_NEWLINK) return std::nullopt;
    nlattr* tb[IFLA_MAX + 1] = {};
    // No policy: libnl would reject the whole message for one short attribute, and we
    // would rather skip just that attribute (get_uint checks lengths).
    if (nlmsg_parse(const_cast<nlmsghdr*>(nlh), sizeof(ifinfomsg), tb, IFLA_MAX, nullptr) < 0) return std::nullopt;
    ifinfomsg ifi{};
    std::memcpy(&ifi, nlmsg_data(nlh), sizeof ifi);

    Link l;
    l.ifindex = ifi.ifi_index;
    l.name = get_string(tb[IFLA_IFNAME]);
    if (l.ifindex <= 0 || l.name.empty()) return std::nullopt;
    l.admin_up = (ifi.ifi_flags & IFF_UP) != 0;
    if (auto v = get_uint<uint8_t>(tb[IFLA_OPERSTATE])) l.operstate = operstate_name(*v);
    if (auto v = get_uint<uint8_t>(tb[IFLA_CARRIER])) l.carrier = *v != 0;
    l.carrier_changes = get_uint<uint32_t>(tb[IFLA_CARRIER_CHANGES]);
    l.mtu = get_uint<uint32_t>(tb[IFLA_MTU]).value_or(0);
    // An ifindex above INT_MAX cannot be real; treat it as "no master".
    if (auto v = get_uint<uint32_t>(tb[IFLA_MASTER]); v && *v <= static_cast<uint32_t>(INT32_MAX))
        l.master_ifindex = static_cast<int>(*v);
    l.mac = format_hwaddr(tb[IFLA_ADDRESS]);
    parse_linkinfo(tb[IFLA_LINKINFO], l);
    return l;
}

std::optional<std::pair<int, Address>> parse_addr_message(const nlmsghdr* nlh) {
    if (nlh == nullptr || nlh->nlmsg_type != RTM_NEWADDR) return std::nullopt;
    nlattr* tb[IFA_MAX + 1] = {};
    if (nlmsg_parse(const_cast<nlmsghdr*>(nlh), sizeof(ifaddrmsg), tb, IFA_MAX, nullptr) < 0) return std::nullopt;
    ifaddrmsg ifa{};
    std::memcpy(&ifa, nlmsg_data(nlh), sizeof ifa);

    int addr_len = 0;
    int max_prefix = 0;
    if (ifa.ifa_family == AF_INET) {
        addr_len = 4;
        max_prefix = 32;
    } else if (ifa.ifa_family == AF_INET6) {
        addr_len = 16;
        max_prefix = 128;
    } else {
        return std::nullopt;
    }
    if (ifa.ifa_index == 0 || ifa.ifa_index > static_cast<uint32_t>(INT32_MAX)) return std::nullopt;
    if (ifa.ifa_prefixlen > max_prefix) return std::nullopt;

    // A corrupt IFA_LOCAL falls back to IFA_ADDRESS rather than losing the address.
    const nlattr* chosen = nullptr;
    for (const nlattr* a : {tb[IFA_LOCAL], tb[IFA_ADDRESS]}) {
        if (a != nullptr && nla_len(a) == addr_len) {
            chosen = a;
            break;
        }
    }
    if (chosen == nullptr) return std::nullopt;

    char buf[INET6_ADDRSTRLEN] = {};
    if (inet_ntop(ifa.ifa_family, nla_data(chosen), buf, sizeof buf) == nullptr) return std::nullopt;

    Address a;
    a.family = ifa.ifa_family;
    a.address = buf;
    a.prefixlen = ifa.ifa_prefixlen;
    a.scope = scope_name(ifa.ifa_scope);
    return std::pair<int, Address>{static_cast<int>(ifa.ifa_index), std::move(a)};
}

std::vector<Link> assemble_links(std::vector<Link> links, const std::vector<std::pair<int, Address>>& addrs) {
    // Stable sort keeps dump order among duplicates, so "keep the last" means "newest".
    std::stable_sort(links.begin(), links.end(), [](const Link& a, const Link& b) { return a.ifindex < b.ifindex; });
    auto last_of_each = std::unique(links.rbegin(), links.rend(),
                                    [](const Link& a, const Link& b) { return a.ifindex == b.ifindex; });
    links.erase(links.begin(), last_of_each.base());

    auto find = [&links](int ifindex) -> Link* {
        auto it = std::lower_bound(links.begin(), links.end(), ifindex,
                                   [](const Link& l, int i) { return l.ifindex < i; });
        return (it != links.end() && it->ifindex == ifindex) ? &*it : nullptr;
    };

    // Reset what this function derives, so assembling an already-assembled view is harmless.
    for (Link& l : links) {
        l.addresses.clear();
        l.master.clear();
        if (!l.bond) continue;
        l.bond->slaves.clear();
        const std::string& s = l.bond->active_slave;
        int idx = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), idx);
        if (!s.empty() && ec == std::errc{} && end == s.data() + s.size()) {
            const Link* slave = find(idx);
            l.bond->active_slave = slave ? slave->name : std::string{};
        }
    }

    for (Link& l : links) {
        if (l.master_ifindex == 0 || l.master_ifindex == l.ifindex) continue;
        Link* m = find(l.master_ifindex);
        if (m == nullptr) continue;
        l.master = m->name;
        if (m->bond) m->bond->slaves.push_back(l.name);
    }
    for (Link& l : links)
        if (l.bond) std::sort(l.bond->slaves.begin(), l.bond->slaves.end());

    for (const auto& [ifindex, addr] : addrs)
        if (Link* l = find(ifindex)) l->addresses.push_back(addr);
    return links;
}

}  // namespace rocewatch
