// Pure functions turning rtnetlink link/address messages into model Links: no sockets, no state.
#pragma once

#include <linux/netlink.h>

#include <optional>
#include <utility>
#include <vector>

#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// Parses one RTM_NEWLINK message. Returns nullopt for any other message type, a message
// too short for its ifinfomsg, or one without ifindex or IFLA_IFNAME. An attribute that is
// too short for its type is skipped; the rest of the message is still used.
//
// The kernel reports the bond's active slave as an ifindex, and one message cannot name
// another link, so `bond->active_slave` holds that ifindex in decimal ("4") until
// assemble_links() replaces it with the slave's name; "" means no active slave.
//
// Precondition: nlh->nlmsg_len bytes are readable at nlh (true for anything libnl or the
// kernel hands out; callers with raw bytes must check it first).
[[nodiscard]] std::optional<Link> parse_link_message(const nlmsghdr* nlh);

// Parses one RTM_NEWADDR message into (ifindex, address). IFA_LOCAL wins over IFA_ADDRESS
// because on point-to-point links IFA_ADDRESS is the peer (same rule as iproute2). Returns
// nullopt for other message types, families other than AF_INET/AF_INET6, or when no
// address attribute of the family's length is present.
[[nodiscard]] std::optional<std::pair<int, Address>> parse_addr_message(const nlmsghdr* nlh);

// Joins the per-message results into the published view: master names, each bond's sorted
// `slaves` and `active_slave` name, and the addresses of each link (in the order given).
// Output is sorted by ifindex; on a duplicate ifindex the later link wins. Addresses whose
// ifindex matches no link are dropped.
[[nodiscard]] std::vector<Link> assemble_links(std::vector<Link> links,
                                               const std::vector<std::pair<int, Address>>& addrs);

}  // namespace rocewatch
