// The neighbours lldpd hears on each link, asked over lldpd's control socket with liblldpctl
// (lldpd's own client library, the one lldpcli uses): on a rail, the switch and its port.
//
// liblldpctl rather than `lldpcli -f json`: Debian installs lldpcli setuid _lldpd and
// executable by group adm only, which a sandboxed service (NoNewPrivileges, a dynamic user)
// cannot run; the socket needs only membership of group _lldpd. Every read and write on the
// socket is bounded by a deadline: a stopped lldpd costs one timeout, never a hung cycle.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// Whether this build has liblldpctl (its headers; the library is loaded when lldpd first answers,
// daemon/lldp/lldpctl_loader.hpp); without it read_lldp answers an error saying so.
[[nodiscard]] bool lldp_supported();

[[nodiscard]] LldpAnswer read_lldp(const std::string& socket_path, std::chrono::milliseconds timeout);

}  // namespace rocewatch
