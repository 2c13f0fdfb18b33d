// DCB over rtnetlink (dcbnl): the IEEE 802.1Qaz PFC, ETS and APP tables a RoCE netdev's driver
// reports, parsed from the kernel's reply bytes; which priority RoCE v2 traffic gets from them.
#pragma once

#include <linux/netlink.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/dcb.hpp"

namespace rocewatch {

// Pure. Parses one RTM_GETDCB message answering DCB_CMD_IEEE_GET: nullopt when it is not
// one (type, family, command, or too short); attributes too short for their struct are
// skipped, the rest kept. Precondition: nlh->nlmsg_len bytes are readable at nlh.
[[nodiscard]] std::optional<DcbIeee> parse_dcb_ieee(const nlmsghdr* nlh);

// The request for `ifname`'s IEEE DCB tables, ready to send on a NETLINK_ROUTE socket.
[[nodiscard]] std::vector<uint8_t> dcb_ieee_request(const std::string& ifname, uint32_t seq);

// Asks the kernel (a NETLINK_ROUTE socket of its own, in this network namespace) for
// `ifname`'s IEEE DCB tables, waiting at most `timeout`. Never throws: a driver without DCB
// answers EOPNOTSUPP, a missing netdev ENODEV, no answer in time ETIMEDOUT, in `error`.
[[nodiscard]] DcbState query_dcb(const std::string& ifname, int timeout_ms = 200);

}  // namespace rocewatch
