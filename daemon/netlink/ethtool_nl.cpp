// ethtool netlink: requests, reply parsers and the queries of PhyReader.
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

// The names of each standard group's statistics, by their attribute type in the reply (the
// kernel's string sets ETH_SS_STATS_ETH_PHY/_MAC/_CTRL/_RMON, as `ethtool -S --groups` prints).
struct StatGroup {
    uint32_t id;
    const char* name;
    std::vector<std::pair<int, const char*>> stats;
};

const std::vector<StatGroup>& stat_groups() {
    static const std::vector<StatGroup> groups{
        {ETHTOOL_STATS_ETH_PHY, "eth-phy", {{ETHTOOL_A_STATS_ETH_PHY_5_SYM_ERR, "SymbolErrorDuringCarrier"}}},
        {ETHTOOL_STATS_ETH_MAC,
         "eth-mac",
         {{ETHTOOL_A_STATS_ETH_MAC_2_TX_PKT, "FramesTransmittedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_3_SINGLE_COL, "SingleCollisionFrames"},
          {ETHTOOL_A_STATS_ETH_MAC_4_MULTI_COL, "MultipleCollisionFrames"},
          {ETHTOOL_A_STATS_ETH_MAC_5_RX_PKT, "FramesReceivedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_6_FCS_ERR, "FrameCheckSequenceErrors"},
          {ETHTOOL_A_STATS_ETH_MAC_7_ALIGN_ERR, "AlignmentErrors"},
          {ETHTOOL_A_STATS_ETH_MAC_8_TX_BYTES, "OctetsTransmittedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_9_TX_DEFER, "FramesWithDeferredXmissions"},
          {ETHTOOL_A_STATS_ETH_MAC_10_LATE_COL, "LateCollisions"},
          {ETHTOOL_A_STATS_ETH_MAC_11_XS_COL, "FramesAbortedDueToXSColls"},
          {ETHTOOL_A_STATS_ETH_MAC_12_TX_INT_ERR, "FramesLostDueToIntMACXmitError"},
          {ETHTOOL_A_STATS_ETH_MAC_13_CS_ERR, "CarrierSenseErrors"},
          {ETHTOOL_A_STATS_ETH_MAC_14_RX_BYTES, "OctetsReceivedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_15_RX_INT_ERR, "FramesLostDueToIntMACRcvError"},
          {ETHTOOL_A_STATS_ETH_MAC_18_TX_MCAST, "MulticastFramesXmittedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_19_TX_BCAST, "BroadcastFramesXmittedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_20_XS_DEFER, "FramesWithExcessiveDeferral"},
          {ETHTOOL_A_STATS_ETH_MAC_21_RX_MCAST, "MulticastFramesReceivedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_22_RX_BCAST, "BroadcastFramesReceivedOK"},
          {ETHTOOL_A_STATS_ETH_MAC_23_IR_LEN_ERR, "InRangeLengthErrors"},
          {ETHTOOL_A_STATS_ETH_MAC_24_OOR_LEN, "OutOfRangeLengthField"},
          {ETHTOOL_A_STATS_ETH_MAC_25_TOO_LONG_ERR, "FrameTooLongErrors"}}},
        {ETHTOOL_STATS_ETH_CTRL,
         "eth-ctrl",
         {{ETHTOOL_A_STATS_ETH_CTRL_3_TX, "MACControlFramesTransmitted"},
          {ETHTOOL_A_STATS_ETH_CTRL_4_RX, "MACControlFramesReceived"},
          {ETHTOOL_A_STATS_ETH_CTRL_5_RX_UNSUP, "UnsupportedOpcodesReceived"}}},
        {ETHTOOL_STATS_RMON,
         "rmon",
         {{ETHTOOL_A_STATS_RMON_UNDERSIZE, "etherStatsUndersizePkts"},
          {ETHTOOL_A_STATS_RMON_OVERSIZE, "etherStatsOversizePkts"},
          {ETHTOOL_A_STATS_RMON_FRAG, "etherStatsFragments"},
          {ETHTOOL_A_STATS_RMON_JABBER, "etherStatsJabbers"}}},
    };
    return groups;
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
    nl::Socket sock(NETLINK_GENERIC, timeout_ms);
    const auto read = [&](const EepromPage& at, std::vector<uint8_t>& data) {
        return sock.transact(ethtool_module_eeprom_request(static_cast<uint16_t>(fam), ifname, at, nl::next_seq()),
                             [&](const nlmsghdr* h) {
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

std::vector<uint8_t> ethtool_stats_request(uint16_t family, const std::string& ifname, uint32_t seq) {
    genlmsghdr g{.cmd = ETHTOOL_MSG_STATS_GET, .version = ETHTOOL_GENL_VERSION, .reserved = 0};
    nl::Request r(family, NLM_F_REQUEST, seq, &g, sizeof g);
    const size_t header = r.begin_nest(ETHTOOL_A_STATS_HEADER);
    r.put_string(ETHTOOL_A_HEADER_DEV_NAME, ifname.substr(0, IFNAMSIZ - 1));
    r.put_u32(ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_COMPACT_BITSETS);
    r.end_nest(header);
    // The groups as a compact bitset: every group this build knows of.
    const size_t groups = r.begin_nest(ETHTOOL_A_STATS_GROUPS);
    r.put(ETHTOOL_A_BITSET_NOMASK, nullptr, 0);
    r.put_u32(ETHTOOL_A_BITSET_SIZE, __ETHTOOL_STATS_CNT);
    r.put_u32(ETHTOOL_A_BITSET_VALUE, (1u << __ETHTOOL_STATS_CNT) - 1);
    r.end_nest(groups);
    return r.finish();
}

bool parse_ethtool_stats(const nlmsghdr* nlh, uint16_t family, PhyLink& out) {
    return for_each_genl_attr(nlh, family, ETHTOOL_MSG_STATS_GET_REPLY, [&](int t, const uint8_t* v, size_t n) {
        if (t != ETHTOOL_A_STATS_GRP) return;
        std::optional<uint32_t> id;
        std::vector<std::pair<int, uint64_t>> values;
        nl::for_each_attr(v, n, [&](int gt, const uint8_t* gv, size_t gn) {
            if (gt == ETHTOOL_A_STATS_GRP_ID && gn >= 4) id = nl::attr_uint<uint32_t>(gv, gn);
            if (gt != ETHTOOL_A_STATS_GRP_STAT) return;
            // One statistic per nest: its attribute type is its index in the group.
            nl::for_each_attr(gv, gn, [&](int st, const uint8_t* sv, size_t sn) {
                if (auto x = stat_u64(sv, sn)) values.emplace_back(st, *x);
            });
        });
        if (!id) return;
        for (const auto& g : stat_groups()) {
            if (g.id != *id) continue;
            for (const auto& [index, value] : values)
                for (const auto& [si, name] : g.stats)
                    if (si == index) out.standard_stats[std::string(g.name) + "/" + name] = value;
        }
    });
}

PhyReader::PhyReader(int timeout_ms) : timeout_ms_(timeout_ms) {}
PhyReader::~PhyReader() = default;

PhyLink PhyReader::read(const std::string& ifname, const PhyLink* known) {
    PhyLink out;
    const int family = ethtool_family(timeout_ms_);
    if (family < 0) {
        out.linkmodes_error = out.fec_error = out.pause_error = out.stats_error = -family;
        return out;
    }
    const auto fam = static_cast<uint16_t>(family);
    std::lock_guard lock(mu_);
    if (!sock_ || !sock_->open()) sock_ = std::make_unique<nl::Socket>(NETLINK_GENERIC, timeout_ms_);
    using Parser = bool (*)(const nlmsghdr*, uint16_t, PhyLink&);
    bool timed_out = false;
    const auto ask = [&](const std::vector<uint8_t>& request, Parser parse) {
        const int err = sock_->transact(request, [&](const nlmsghdr* h) { return parse(h, fam, out); });
        timed_out = timed_out || err == ETIMEDOUT;
        return err;
    };
    const auto get = [&](uint8_t cmd, uint32_t flags) {
        return ethtool_get_request(fam, cmd, ifname, flags, nl::next_seq());
    };
    const auto unsupported = [&](int PhyLink::*error) { return known && known->*error == EOPNOTSUPP; };
    // Link modes carried only from an answer (or the driver's EOPNOTSUPP): a timeout or a
    // socket that failed is asked again.
    if (known && (known->linkmodes_error == 0 || known->linkmodes_error == EOPNOTSUPP)) {
        out.linkmodes_error = known->linkmodes_error;
        out.speed_mbps = known->speed_mbps;
        out.lanes = known->lanes;
        out.autoneg = known->autoneg;
        out.duplex = known->duplex;
    } else {
        out.linkmodes_error = ask(get(ETHTOOL_MSG_LINKMODES_GET, 0), parse_ethtool_linkmodes);
    }
    out.fec_error = unsupported(&PhyLink::fec_error)
                        ? EOPNOTSUPP
                        : ask(get(ETHTOOL_MSG_FEC_GET, ETHTOOL_FLAG_STATS), parse_ethtool_fec);
    out.pause_error = unsupported(&PhyLink::pause_error)
                          ? EOPNOTSUPP
                          : ask(get(ETHTOOL_MSG_PAUSE_GET, ETHTOOL_FLAG_STATS), parse_ethtool_pause);
    out.stats_error = unsupported(&PhyLink::stats_error)
                          ? EOPNOTSUPP
                          : ask(ethtool_stats_request(fam, ifname, nl::next_seq()), parse_ethtool_stats);
    // A late answer would wait in the socket for the next call: that one starts on a new socket.
    if (timed_out) sock_.reset();
    return out;
}

PhyLink query_phy(const std::string& ifname, int timeout_ms) { return PhyReader(timeout_ms).read(ifname); }

}  // namespace rocewatch
