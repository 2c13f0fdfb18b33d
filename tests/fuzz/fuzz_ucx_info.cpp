// Fuzzes the UCX endpoint info a peer sends (worker address and rkey in hex, buffer bounds).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "probes/ucx_info.hpp"
#include "util/hex.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto p = rocewatch::parse_ucx_endpoint_info_text(text);
    FUZZ_CHECK(p.info.has_value() == p.error.empty());
    if (p.info) {
        FUZZ_CHECK(p.info->worker_address.size() <= rocewatch::kUcxMaxWorkerAddress);
        FUZZ_CHECK(p.info->rkey.size() <= rocewatch::kUcxMaxRkey);
        nlohmann::json back = *p.info;
        FUZZ_CHECK(rocewatch::parse_ucx_endpoint_info(back).info == p.info);
    }
    if (auto bytes = rocewatch::bytes_from_hex(text)) {
        FUZZ_CHECK(bytes->size() * 2 == text.size());
        FUZZ_CHECK(rocewatch::bytes_from_hex(rocewatch::to_hex(*bytes)) == bytes);
    }
    return 0;
}
