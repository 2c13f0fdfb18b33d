// RDMA endpoint exchange data: JSON in and out with validation, and the MTU/GID agreement.
#include "probes/rdma_info.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "probes/errors.hpp"
#include "probes/json_fields.hpp"
#include "util/hex.hpp"

namespace rocewatch {

std::string gid_to_string(const std::array<uint8_t, 16>& gid) {
    std::string s;
    s.reserve(39);
    for (size_t i = 0; i < 16; i += 2) {
        if (i) s += ':';
        s += to_hex(std::span(gid).subspan(i, 2));
    }
    return s;
}

std::optional<std::array<uint8_t, 16>> gid_from_string(std::string_view s) {
    // Only the full sysfs form: 8 groups of exactly 4 hex digits.
    if (s.size() != 39) return std::nullopt;
    std::array<uint8_t, 16> gid{};
    for (size_t g = 0; g < 8; ++g) {
        const size_t at = g * 5;
        if (g < 7 && s[at + 4] != ':') return std::nullopt;
        if (!from_hex(s.substr(at, 4), std::span(gid).subspan(g * 2, 2))) return std::nullopt;
    }
    return gid;
}

bool gid_is_zero(const std::array<uint8_t, 16>& gid) {
    for (uint8_t b : gid)
        if (b) return false;
    return true;
}

bool valid_rdma_mtu(int bytes) {
    return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 || bytes == 4096;
}

void to_json(nlohmann::json& j, const RdmaEndpointInfo& info) {
    j = nlohmann::json{{"device", info.device},
                       {"port", info.port},
                       {"gid_index", info.gid_index},
                       {"gid", gid_to_string(info.gid)},
                       {"gid_type", info.gid_type},
                       {"qpn", info.qpn},
                       {"psn", info.psn},
                       {"rkey", info.rkey},
                       {"addr", info.addr},
                       {"size", info.size},
                       {"active_mtu", info.active_mtu}};
}

void from_json(const nlohmann::json& j, RdmaEndpointInfo& info) {
    if (!j.is_object()) throw std::invalid_argument("endpoint info: not a JSON object");
    RdmaEndpointInfo r;
    r.device = string_field(j, "device", 64);
    if (r.device.empty()) throw std::invalid_argument("device: empty");
    r.port = int_field<uint8_t>(j, "port", 1, 255);
    r.gid_index = int_field<int>(j, "gid_index", -1, 65535);
    const auto gid = gid_from_string(string_field(j, "gid", 64));
    if (!gid) throw std::invalid_argument("gid: not a GID (8 groups of 4 hex digits)");
    r.gid = *gid;
    r.gid_type = string_field(j, "gid_type", 32);
    r.qpn = int_field<uint32_t>(j, "qpn", 0, 0xffffff);
    r.psn = int_field<uint32_t>(j, "psn", 0, 0xffffff);
    r.rkey = int_field<uint32_t>(j, "rkey");
    r.addr = int_field<uint64_t>(j, "addr");
    r.size = int_field<uint32_t>(j, "size");
    r.active_mtu = int_field<int>(j, "active_mtu", 0, 4096);
    if (r.active_mtu != 0 && !valid_rdma_mtu(r.active_mtu))
        throw std::invalid_argument("active_mtu: not 256, 512, 1024, 2048 or 4096");
    info = std::move(r);
}

EndpointInfoParse parse_endpoint_info(const nlohmann::json& j) {
    EndpointInfoParse out;
    try {
        RdmaEndpointInfo info;
        from_json(j, info);
        out.info = std::move(info);
    } catch (const std::exception& e) {
        out.error = e.what();
    }
    return out;
}

EndpointInfoParse parse_endpoint_info_text(std::string_view text) {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return EndpointInfoParse{std::nullopt, "endpoint info: not JSON"};
    return parse_endpoint_info(j);
}

MtuAgreement agree(const RdmaEndpointInfo& local, const RdmaEndpointInfo& remote) {
    MtuAgreement a;
    const auto unusable = [](const RdmaEndpointInfo& e) -> std::string {
        if (e.gid_index < 0) return "no GID index";
        if (gid_is_zero(e.gid)) return "GID index " + std::to_string(e.gid_index) + " is empty";
        if (e.gid_type.empty()) return "GID index " + std::to_string(e.gid_index) + " has no type";
        return "";
    };
    if (auto why = unusable(local); !why.empty()) {
        a.reason = reason::gid_mismatch;
        a.detail = "local " + local.device + ": " + why;
        return a;
    }
    if (auto why = unusable(remote); !why.empty()) {
        a.reason = reason::gid_mismatch;
        a.detail = "remote " + remote.device + ": " + why;
        return a;
    }
    if (local.gid_type != remote.gid_type) {
        a.reason = reason::gid_mismatch;
        a.detail = "GID types differ: local " + local.device + " index " + std::to_string(local.gid_index) + " is " +
                   local.gid_type + ", remote " + remote.device + " index " + std::to_string(remote.gid_index) +
                   " is " + remote.gid_type;
        return a;
    }
    for (const auto* e : {&local, &remote}) {
        if (!valid_rdma_mtu(e->active_mtu)) {
            a.reason = reason::bad_target;
            a.detail = (e == &local ? "local " : "remote ") + e->device + ": active MTU " +
                       std::to_string(e->active_mtu) + " is not an RDMA MTU";
            return a;
        }
    }
    a.mtu = std::min(local.active_mtu, remote.active_mtu);
    return a;
}

}  // namespace rocewatch
