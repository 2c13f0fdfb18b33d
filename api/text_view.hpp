// The --once report for people at a terminal: this node's verdict, then every alert with
// its action, coloured by severity when asked (a TTY without NO_COLOR).
#pragma once

#include <string>

#include "daemon/model/snapshot.hpp"

namespace rocewatch::api {

[[nodiscard]] std::string once_text(const Snapshot& s, bool color);

// Colour on a terminal only: stdout a TTY, NO_COLOR unset or empty (no-color.org), TERM not "dumb".
[[nodiscard]] bool want_color(int fd);

}  // namespace rocewatch::api
