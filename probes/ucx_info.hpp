// What two UCX probe endpoints tell each other before connecting: the JSON exchange data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rocewatch {

// One side of a UCX put probe: the worker address the peer creates its ucp endpoint to,
// and the registered buffer (address, size, packed rkey) it puts into. Carried as JSON
// over the control path (the daemon's HTTP port; ucx_probe_cli uses a plain TCP socket).
// The buffer is `size` data bytes at `addr`, followed by kUcxControlBytes of control
// words (the bandwidth probe's completion signal), all covered by `rkey`.
struct UcxEndpointInfo {
    std::string ucx_version;              // ucp_get_version_string(): "1.13.1"
    std::vector<uint8_t> worker_address;  // ucp_worker_get_address(), opaque to us
    uint64_t addr = 0;                    // of the data area, in the owner's address space
    uint32_t size = 0;                    // data bytes at addr
    std::vector<uint8_t> rkey;            // ucp_rkey_pack() of the whole registered buffer

    bool operator==(const UcxEndpointInfo&) const = default;
};

inline constexpr uint32_t kUcxControlBytes = 64;
// Bounds on what a peer may send: a worker address with every transport of a multi-rail
// node is a few KiB, a packed rkey a few hundred bytes.
inline constexpr size_t kUcxMaxWorkerAddress = 64 * 1024;
inline constexpr size_t kUcxMaxRkey = 16 * 1024;
inline constexpr size_t kUcxMaxVersion = 64;

// nlohmann ADL hooks: {"ucx_version", "worker_address" (hex), "addr", "size", "rkey" (hex)}.
// from_json throws std::invalid_argument naming the first bad field. Prefer
// parse_ucx_endpoint_info.
void to_json(nlohmann::json& j, const UcxEndpointInfo& info);
void from_json(const nlohmann::json& j, UcxEndpointInfo& info);

// Parses and validates; never throws. On failure `info` is empty and `error` says why.
struct UcxEndpointInfoParse {
    std::optional<UcxEndpointInfo> info;
    std::string error;
};
UcxEndpointInfoParse parse_ucx_endpoint_info(const nlohmann::json& j);
UcxEndpointInfoParse parse_ucx_endpoint_info_text(std::string_view text);

}  // namespace rocewatch
