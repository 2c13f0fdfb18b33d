// UCX endpoint exchange data: JSON in and out with validation and size limits.
#include "probes/ucx_info.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "probes/json_fields.hpp"
#include "util/hex.hpp"

namespace rocewatch {

void to_json(nlohmann::json& j, const UcxEndpointInfo& info) {
    j = nlohmann::json{{"ucx_version", info.ucx_version},
                       {"worker_address", to_hex(info.worker_address)},
                       {"addr", info.addr},
                       {"size", info.size},
                       {"rkey", to_hex(info.rkey)}};
}

namespace {

std::vector<uint8_t> hex_field(const nlohmann::json& j, const char* key, size_t max_bytes) {
    auto bytes = bytes_from_hex(string_field(j, key, 2 * max_bytes));
    if (!bytes) throw std::invalid_argument(std::string(key) + ": not hex");
    if (bytes->empty()) throw std::invalid_argument(std::string(key) + ": empty");
    return std::move(*bytes);
}

}  // namespace

void from_json(const nlohmann::json& j, UcxEndpointInfo& info) {
    if (!j.is_object()) throw std::invalid_argument("endpoint info: not a JSON object");
    UcxEndpointInfo r;
    r.ucx_version = string_field(j, "ucx_version", kUcxMaxVersion);
    if (r.ucx_version.empty()) throw std::invalid_argument("ucx_version: empty");
    r.worker_address = hex_field(j, "worker_address", kUcxMaxWorkerAddress);
    r.addr = int_field<uint64_t>(j, "addr");
    if (r.addr == 0) throw std::invalid_argument("addr: null");
    r.size = int_field<uint32_t>(j, "size");
    if (r.size == 0) throw std::invalid_argument("size: zero");
    r.rkey = hex_field(j, "rkey", kUcxMaxRkey);
    info = std::move(r);
}

UcxEndpointInfoParse parse_ucx_endpoint_info(const nlohmann::json& j) {
    UcxEndpointInfoParse out;
    try {
        UcxEndpointInfo info;
        from_json(j, info);
        out.info = std::move(info);
    } catch (const std::exception& e) {
        out.error = e.what();
    }
    return out;
}

UcxEndpointInfoParse parse_ucx_endpoint_info_text(std::string_view text) {
    try {
        auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded()) return UcxEndpointInfoParse{std::nullopt, "endpoint info: not JSON"};
        return parse_ucx_endpoint_info(j);
    } catch (const std::exception& e) {  // bad_alloc on absurd input
        return UcxEndpointInfoParse{std::nullopt, std::string("endpoint info: ") + e.what()};
    }
}

}  // namespace rocewatch
