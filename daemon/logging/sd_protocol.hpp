// The two systemd protocols the daemon speaks, written to their documentation rather than
// through libsystemd: sd_notify(3) (readiness, reloads, the watchdog) and journald's native
// protocol (systemd.io/JOURNAL_NATIVE_PROTOCOL). Both are datagrams on a Unix socket, which
// systemd documents as stable interfaces for exactly this; libsystemd would bring libgcrypt,
// libgpg-error, liblz4 and libzstd into the process, 0.9 MiB of its PSS, for three calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocewatch::logging {

// Sends `state` ("READY=1", "WATCHDOG=1", ...) to the socket $NOTIFY_SOCKET names (a path,
// or "@name" for the abstract namespace). False when the variable is unset (not run by
// systemd, or not Type=notify) or the datagram was not sent; like sd_notify, nothing else.
bool notify(std::string_view state);

// $WATCHDOG_USEC when systemd expects keep-alives from this process ($WATCHDOG_PID unset or
// ours), else 0.
[[nodiscard]] uint64_t watchdog_usec();

using JournalField = std::pair<std::string_view, std::string_view>;  // name ("MESSAGE"), value

// One journal entry as the native protocol frames it: "NAME=value\n" for a value without a
// newline, else "NAME\n", the value's length as 64-bit little endian, the value and "\n".
[[nodiscard]] std::string journal_datagram(const std::vector<JournalField>& fields);

// Sends one entry to journald's socket at `socket_path` (/run/systemd/journal/socket). False,
// with errno set, when it was not taken (no journald, or an entry over the socket's datagram
// size): the caller writes the line elsewhere.
bool journal_send(const std::string& socket_path, const std::vector<JournalField>& fields);

}  // namespace rocewatch::logging
