// ethtool netlink: requests, reply parsers and the three queries of query_phy.
#include "daemon/netlink/ethtool_nl.hpp"

#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <net/if.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "daemon/netlink/nl_request.hpp"

namespace rocewatch {

namespace {

// The attributes of a generic netlink message of `family` with command `cmd`, or false.
template <class Fn>
bool for_each_genl_attr(const nlmsghdr* nlh, uint16_t family, uint8_t cmd, Fn&& fn) {
    if (nlh->nlmsg_type != family || nlh->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN)) return false;
    genlmsghdr g;
    std::memcpy(&g, NLMSG_DATA(nlh), sizeof g);
    if (g.cmd != cmd) return false;
    const auto* attrs = static_cast<const uint8_t*>(NLMSG_DATA(nlh)) + GENL_HDRLEN;
    nl::for_each_attr(attrs, nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), fn);
    return true;
}

// What the kernel keeps in a statistic the driver does not count (ETHTOOL_STAT_NOT_SET, not
// in the uapi headers).
constexpr uint64_t kStatNotSet = ~uint64_t{0};

std::optional<uint64_t> stat_u64(const uint8_t* data, size_t len) {
    if (len < sizeof(uint64_t)) return std::nullopt;
    const auto v = nl::attr_uint<uint64_t>(data, len);
    return v == kStatNotSet ? std::nullopt : std::optional<uint64_t>(v);
}

// A FEC statistic: an array of u64, the total first, then one per lane where the driver
// counts lanes; empty where it does not count it at all.
void fec_stat(const uint8_t* data, size_t len, std::optional<uint64_t>& total, std::vector<uint64_t>* lanes) {
    const size_t n = len / sizeof(uint64_t);
    if (n == 0) return;
    total = stat_u64(data, len);
    if (!lanes) return;
    lanes->clear();
    for (size_t i = 1; i < n; ++i)
        if (auto v = stat_u64(data + i * sizeof(uint64_t), sizeof(uint64_t))) lanes->push_back(*v);
}

const char* fec_mode_name(uint32_t bit) {
    switch (bit) {
        case ETHTOOL_LINK_MODE_FEC_NONE_BIT: return "None";
        case ETHTOOL_LINK_MODE_FEC_RS_BIT: return "RS";
        case ETHTOOL_LINK_MODE_FEC_BASER_BIT: return "BaseR";
        case ETHTOOL_LINK_MODE_FEC_LLRS_BIT: return "LLRS";
        default: return "";
    }
}

}  // namespace

std::vector<uint8_t> genl_family_request(const std::string& name, uint32_t seq) {
    genlmsghdr g{.cmd = CTRL_CMD_GETFAMILY, .version = 1, .reserved = 0};
    nl::Request r(GENL_ID_CTRL, NLM_F_REQUEST, seq, &g, sizeof g);
    r.put_string(CTRL_ATTR_FAMILY_NAME, name);
    return r.finish();
}

std::optional<uint16_t> parse_genl_family_id(const nlmsghdr* nlh) {
    std::optional<uint16_t> id;
    const bool ok = for_each_genl_attr(nlh, GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, [&](int t, const uint8_t* v, size_t n) {
        if (t == CTRL_ATTR_FAMILY_ID && n >= sizeof(uint16_t)) id = nl::attr_uint<uint16_t>(v, n);
    });
    return ok ? id : std::nullopt;
}

std::vector<uint8_t> ethtool_get_request(uint16_t family, uint8_t cmd, const std::string& ifname, uint32_t flags,
                                         uint32_t seq) {
    genlmsghdr g{.cmd = cmd, .version = ETHTOOL_GENL_VERSION, .reserved = 0};
    nl::Request r(family, NLM_F_REQUEST, seq, &g, sizeof g);
    // Every ethtool GET request's header is its attribute 1 (ETHTOOL_A_*_HEADER).
    const size_t header = r.begin_nest(ETHTOOL_A_LINKMODES_HEADER);
    r.put_string(ETHTOOL_A_HEADER_DEV_NAME, ifname.substr(0, IFNAMSIZ - 1));
    r.put_u32(ETHTOOL_A_HEADER_FLAGS, flags | ETHTOOL_FLAG_COMPACT_BITSETS);
    r.end_nest(header);
    return r.finish();
}

bool parse_ethtool_linkmodes(const nlmsghdr* nlh, uint16_t family, PhyLink& out) {
    return for_each_genl_attr(nlh, family, ETHTOOL_MSG_LINKMODES_GET_REPLY, [&](int t, const uint8_t* v, size_t n) {
        if (n == 0) return;
        if (t == ETHTOOL_A_LINKMODES_AUTONEG) out.autoneg = v[0] == AUTONEG_ENABLE;
        if (t == ETHTOOL_A_LINKMODES_SPEED && n >= 4) {
            const auto s = nl::attr_uint<uint32_t>(v, n);
            if (s != static_cast<uint32_t>(SPEED_UNKNOWN) && s != 0) out.speed_mbps = s;
        }
        if (t == ETHTOOL_A_LINKMODES_DUPLEX)
            out.duplex = v[0] == DUPLEX_FULL ? "full" : v[0] == DUPLEX_HALF ? "half" : "";
        if (t == ETHTOOL_A_LINKMODES_LANES && n >= 4) {
            if (const auto l = nl::attr_uint<uint32_t>(v, n); l > 0) out.lanes = l;
        }
    });
}

bool parse_ethtool_fec(const nlmsghdr* nlh, uint16_t family, PhyLink& out) {
    return for_each_genl_attr(nlh, family, ETHTOOL_MSG_FEC_GET_REPLY, [&](int t, const uint8_t* v, size_t n) {
        if (t == ETHTOOL_A_FEC_AUTO && n >= 1) out.fec_auto = v[0] != 0;
        if (t == ETHTOOL_A_FEC_ACTIVE && n >= 4) out.fec_active = fec_mode_name(nl::attr_uint<uint32_t>(v, n));
        if (t != ETHTOOL_A_FEC_STATS) return;
        nl::for_each_attr(v, n, [&](int st, const uint8_t* sv, size_t sn) {
            if (st == ETHTOOL_A_FEC_STAT_CORRECTED)
                fec_stat(sv, sn, out.fec_corrected_blocks, &out.fec_corrected_blocks_lanes);
            if (st == ETHTOOL_A_FEC_STAT_UNCORR)
                fec_stat(sv, sn, out.fec_uncorrectable_blocks, &out.fec_uncorrectable_blocks_lanes);
            if (st == ETHTOOL_A_FEC_STAT_CORR_BITS) fec_stat(sv, sn, out.fec_corrected_bits, nullptr);
        });
    });
}

bool parse_ethtool_pause(const nlmsghdr* nlh, uint16_t family, PhyLink& out) {
    return for_each_genl_attr(nlh, family, ETHTOOL_MSG_PAUSE_GET_REPLY, [&](int t, const uint8_t* v, size_t n) {
        if (n == 0) return;
        if (t == ETHTOOL_A_PAUSE_AUTONEG) out.pause_autoneg = v[0] != 0;
        if (t == ETHTOOL_A_PAUSE_RX) out.pause_rx = v[0] != 0;
        if (t == ETHTOOL_A_PAUSE_TX) out.pause_tx = v[0] != 0;
        if (t != ETHTOOL_A_PAUSE_STATS) return;
        nl::for_each_attr(v, n, [&](int st, const uint8_t* sv, size_t sn) {
            if (st == ETHTOOL_A_PAUSE_STAT_TX_FRAMES) out.pause_tx_frames = stat_u64(sv, sn);
            if (st == ETHTOOL_A_PAUSE_STAT_RX_FRAMES) out.pause_rx_frames = stat_u64(sv, sn);
        });
    });
}

namespace {

// The ethtool family's id, or a negative errno. Generic netlink family ids are the kernel's,
// the same in every namespace: resolved once.
int ethtool_family(int timeout_ms) {
    static std::atomic<int> family{0};
    if (family.load() != 0) return family.load();
    std::optional<uint16_t> id;
    const int err = nl::transact(NETLINK_GENERIC, genl_family_request(ETHTOOL_GENL_NAME, nl::next_seq()), timeout_ms,
                                 [&](const nlmsghdr* h) {
                                     id = parse_genl_family_id(h);
                                     return id.has_value();
                                 });
    if (err != 0 || !id) return -(err != 0 ? err : EPROTO);
    family = *id;
    return *id;
}

}  // namespace

std::vector<uint8_t> ethtool_module_eeprom_request(uint16_t family, const std::string& ifname, const EepromPage& at,
                                                   uint32_t seq) {
    genlmsghdr g{.cmd = ETHTOOL_MSG_MODULE_EEPROM_GET, .version = ETHTOOL_GENL_VERSION, .reserved = 0};
    nl::Request r(family, NLM_F_REQUEST, seq, &g, sizeof g);
    const size_t header = r.begin_nest(ETHTOOL_A_MODULE_EEPROM_HEADER);
    r.put_string(ETHTOOL_A_HEADER_DEV_NAME, ifname.substr(0, IFNAMSIZ - 1));
    r.end_nest(header);
    r.put_u32(ETHTOOL_A_MODULE_EEPROM_OFFSET, at.offset);
    r.put_u32(ETHTOOL_A_MODULE_EEPROM_LENGTH, 128);
    r.put_u8(ETHTOOL_A_MODULE_EEPROM_PAGE, at.page);
    r.put_u8(ETHTOOL_A_MODULE_EEPROM_BANK, at.bank);
    r.put_u8(ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS, at.i2c_address);
    return r.finish();
}

bool parse_ethtool_module_eeprom(const nlmsghdr* nlh, uint16_t family, std::vector<uint8_t>& data) {
    return for_each_genl_attr(nlh, family, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, [&](int t, const uint8_t* v, size_t n) {
        if (t == ETHTOOL_A_MODULE_EEPROM_DATA) data.assign(v, v + n);
    });
}

Transceiver query_module(const std::string& ifname, int timeout_ms) {
    const int fam = ethtool_family(timeout_ms);
    if (fam < 0) return Transceiver{.error = -fam};
    const auto read = [&](const EepromPage& at, std::vector<uint8_t>& data) {
        return nl::transact(NETLINK_GENERIC,
                            ethtool_module_eeprom_request(static_cast<uint16_t>(fam), ifname, at, nl::next_seq()),
                            timeout_ms, [&](const nlmsghdr* h) {
                                return parse_ethtool_module_eeprom(h, static_cast<uint16_t>(fam), data);
                            });
    };
    EepromPages pages;
    std::vector<uint8_t> lower;
    if (const int err = read({}, lower); err != 0) return Transceiver{.error = err};
    for (const auto& at : module_pages_to_read(lower)) {
        std::vector<uint8_t> data;
        if (read(at, data) == 0) pages.emplace(at, std::move(data));
    }
    pages.emplace(EepromPage{}, std::move(lower));
    return decode_module(pages);
}

PhyLink query_phy(const std::string& ifname, int timeout_ms) {
    PhyLink out;
    const int family = ethtool_family(timeout_ms);
    if (family < 0) {
        out.linkmodes_error = out.fec_error = out.pause_error = -family;
        return out;
    }
    const auto fam = static_cast<uint16_t>(family);
    using Parser = bool (*)(const nlmsghdr*, uint16_t, PhyLink&);
    const auto ask = [&](uint8_t cmd, uint32_t flags, Parser parse) {
        return nl::transact(NETLINK_GENERIC, ethtool_get_request(fam, cmd, ifname, flags, nl::next_seq()), timeout_ms,
                            [&](const nlmsghdr* h) { return parse(h, fam, out); });
    };
    out.linkmodes_error = ask(ETHTOOL_MSG_LINKMODES_GET, 0, parse_ethtool_linkmodes);
    out.fec_error = ask(ETHTOOL_MSG_FEC_GET, ETHTOOL_FLAG_STATS, parse_ethtool_fec);
    out.pause_error = ask(ETHTOOL_MSG_PAUSE_GET, ETHTOOL_FLAG_STATS, parse_ethtool_pause);
    return out;
}

}  // namespace rocewatch
