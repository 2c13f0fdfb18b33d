// Helpers shared by the config module's two translation units; not part of its API.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "daemon/config/config_loader.hpp"

namespace rocewatch::config_detail {

// parse_listen_address with a lowest acceptable port, saying why it refused, for the config
// error message.
std::optional<ListenAddress> parse_listen_address(std::string_view s, int min_port, std::string& why);

}  // namespace rocewatch::config_detail
