// What two RDMA probe endpoints tell each other before connecting, and whether they can.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace rocewatch {

// One side of an RC connection: everything the peer needs to bring its QP to RTR/RTS and
// to RDMA-write into our buffer. Carried as JSON over the control path (the daemon's HTTP
// port; rdma_probe_cli uses a plain TCP socket).
struct RdmaEndpointInfo {
    std::string device;  // "rocep1s0f0", "rxe0"
    uint8_t port = 1;
    int gid_index = -1;
    std::array<uint8_t, 16> gid{};
    std::string gid_type;  // "RoCE v2", "IB/RoCE v1" (sysfs spelling), "IB"
    uint32_t qpn = 0;      // 24 bits
    uint32_t psn = 0;      // 24 bits
    uint32_t rkey = 0;
    uint64_t addr = 0;   // of the registered buffer, in the owner's address space
    uint32_t size = 0;   // bytes of that buffer
    int active_mtu = 0;  // bytes: 256, 512, 1024, 2048 or 4096

    bool operator==(const RdmaEndpointInfo&) const = default;
};

// GIDs in the sysfs spelling: eight groups of four hex digits ("0000:...:ffff:0a0a:0101").
std::string gid_to_string(const std::array<uint8_t, 16>& gid);
std::optional<std::array<uint8_t, 16>> gid_from_string(std::string_view s);
// An all-zero GID is an empty table slot: nothing can be reached through it.
bool gid_is_zero(const std::array<uint8_t, 16>& gid);
bool valid_rdma_mtu(int bytes);

// nlohmann ADL hooks. from_json throws std::invalid_argument (control path) naming the
// first bad field: missing, wrong type or out of range. Prefer parse_endpoint_info.
void to_json(nlohmann::json& j, const RdmaEndpointInfo& info);
void from_json(const nlohmann::json& j, RdmaEndpointInfo& info);

// Parses and validates; never throws. On failure `info` is empty and `error` says why.
struct EndpointInfoParse {
    std::optional<RdmaEndpointInfo> info;
    std::string error;
};
EndpointInfoParse parse_endpoint_info(const nlohmann::json& j);
EndpointInfoParse parse_endpoint_info_text(std::string_view text);

// Whether local and remote can talk, and at which path MTU. On success `mtu` is the
// smaller active MTU and `reason` is empty; otherwise `reason` is a probes/errors.hpp word:
// "gid_mismatch" when the GID types differ (RoCE v2 against v1) or either side has no
// usable GID (no index, an all-zero GID, no type), "bad_target" for an MTU that is not
// an IB MTU. Pure: tests call it directly.
struct MtuAgreement {
    int mtu = 0;
    std::string reason;
    std::string detail;
    [[nodiscard]] bool ok() const { return reason.empty(); }
};
[[nodiscard]] MtuAgreement agree(const RdmaEndpointInfo& local, const RdmaEndpointInfo& remote);

}  // namespace rocewatch
