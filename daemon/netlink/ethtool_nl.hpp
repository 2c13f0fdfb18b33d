// The kernel's ethtool netlink interface (generic netlink family "ethtool", kernel 5.6+;
// statistics 5.13+): link modes, FEC and pause of a netdev. Pure parsers of the replies and
// builders of the requests (tested on bytes), and the queries.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/phy.hpp"
#include "daemon/model/transceiver.hpp"

namespace rocewatch::nl {
class Socket;
}

namespace rocewatch {

// ---------------------------------------------------------------- pure

// CTRL_CMD_GETFAMILY for `name` on GENL_ID_CTRL, and the family id in its answer.
[[nodiscard]] std::vector<uint8_t> genl_family_request(const std::string& name, uint32_t seq);
[[nodiscard]] std::optional<uint16_t> parse_genl_family_id(const nlmsghdr* nlh);

// An ethtool GET request (ETHTOOL_MSG_LINKMODES_GET, _FEC_GET, _PAUSE_GET...) for `ifname`,
// with ETHTOOL_FLAG_* `flags` in its header (compact bitsets are always asked for).
[[nodiscard]] std::vector<uint8_t> ethtool_get_request(uint16_t family, uint8_t cmd, const std::string& ifname,
                                                       uint32_t flags, uint32_t seq);

// The replies, into `out`: false when the message is not that reply of `family`. A value the
// kernel did not send stays unset; statistics the driver does not count (ETHTOOL_STAT_NOT_SET)
// too. Precondition: nlh->nlmsg_len bytes are readable at nlh.
bool parse_ethtool_linkmodes(const nlmsghdr* nlh, uint16_t family, PhyLink& out);
bool parse_ethtool_fec(const nlmsghdr* nlh, uint16_t family, PhyLink& out);
bool parse_ethtool_pause(const nlmsghdr* nlh, uint16_t family, PhyLink& out);
// ETHTOOL_MSG_STATS_GET for the groups eth-phy, eth-mac, eth-ctrl and rmon, and its reply.
[[nodiscard]] std::vector<uint8_t> ethtool_stats_request(uint16_t family, const std::string& ifname, uint32_t seq);
bool parse_ethtool_stats(const nlmsghdr* nlh, uint16_t family, PhyLink& out);

// ETHTOOL_MSG_MODULE_EEPROM_GET for one half page of the module's memory map (kernel 5.13+),
// and the bytes of its reply (false when the message is not that reply).
[[nodiscard]] std::vector<uint8_t> ethtool_module_eeprom_request(uint16_t family, const std::string& ifname,
                                                                 const EepromPage& at, uint32_t seq);
bool parse_ethtool_module_eeprom(const nlmsghdr* nlh, uint16_t family, std::vector<uint8_t>& data);

// ---------------------------------------------------------------- queries

// Link modes, FEC (with statistics), pause (with statistics) and the standard statistics
// groups of `ifname` in this network namespace: four requests, each waiting at most `timeout_ms`. Never throws: each
// part's errno is in its *_error (ENOENT for all where the kernel has no ethtool family).
[[nodiscard]] PhyLink query_phy(const std::string& ifname, int timeout_ms = 200);

// query_phy for the netdevs of every collection cycle, on one generic netlink socket kept from
// call to call (not one made and closed for each netdev of each read), and asking only what can have moved since
// `known`, this netdev's last answer (null: ask everything, as after a link event or for a new netdev):
// - the link modes (speed, lanes, duplex, autoneg) change only with the link, which sends a
//   netlink event: taken from `known` where it holds an answer (a timeout is asked again);
// - a part its driver answered EOPNOTSUPP (veth has neither FEC nor pause) is not asked again
//   until the next link event: what a driver supports changes with the driver (which
//   recreates the netdev) or, for some (mlx5's FEC while the link is down), with the link.
// The FEC, pause and standard counters are asked each time. Thread-safe; never throws. A
// socket that timed out or failed to open is replaced at the next call.
class PhyReader {
public:
    explicit PhyReader(int timeout_ms = 200);
    ~PhyReader();
    PhyReader(const PhyReader&) = delete;
    PhyReader& operator=(const PhyReader&) = delete;
    [[nodiscard]] PhyLink read(const std::string& ifname, const PhyLink* known = nullptr);

private:
    int timeout_ms_;
    std::mutex mu_;
    std::unique_ptr<nl::Socket> sock_;
};

// The transceiver module of `ifname`: the lower page, then the pages it calls for (1 to 5
// requests of 128 bytes), decoded. Never throws: error holds the lower page's errno (a
// netdev without a module or a driver that cannot read one); a later page that fails leaves
// its fields unset.
[[nodiscard]] Transceiver query_module(const std::string& ifname, int timeout_ms = 500);

}  // namespace rocewatch
