// Adds what only libibverbs knows (MTU, speed, width per port) to devices read from sysfs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/snapshot.hpp"

namespace rocewatch {

struct VerbsResult {
    bool available = false;  // at least one of the devices was opened through verbs
    uint64_t errors = 0;     // failed opens and port queries
    std::string last_error;  // "" when none
    // Ports whose carried-over state the driver's answer contradicted (see enrich_with_verbs).
    uint64_t port_state_moved = 0;
};

// Queries every port of every device in `devices` that verbs also lists (matched by name)
// and fills active_mtu, max_mtu, active_speed, active_width. Devices verbs does not know are
// left untouched. A host without RDMA devices or verbs providers is normal: available=false,
// errors=0. Never throws.
// port_state_carried: the ports' state and physical state were carried over from an earlier
// read, not read now (SysfsReadOptions::port_state). The driver's answer, which is this
// cycle's, replaces them where it differs (apply_verbs_port_state), counted in
// port_state_moved: a change no netlink event told of is seen on this cycle all the same.
[[nodiscard]] VerbsResult enrich_with_verbs(std::vector<RdmaDevice>& devices, bool port_state_carried = false) noexcept;

// Pure. Sets the port's state and physical state to the driver's (ibv_port_attr's state and
// phys_state, with the names sysfs gives them: "ACTIVE", "LinkUp"), returning whether either
// differed from what the port held.
bool apply_verbs_port_state(RdmaPort& port, int state, int phys_state);

// IBV_MTU_256 (1) .. IBV_MTU_4096 (5) -> 256 .. 4096 bytes; unset for anything else.
[[nodiscard]] std::optional<int> ibv_mtu_to_bytes(int ibv_mtu);

// The one place verbs errno values become text: "<what it means> (<strerror>)".
[[nodiscard]] std::string verbs_error_text(int err);

}  // namespace rocewatch
