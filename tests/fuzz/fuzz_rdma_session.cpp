// Fuzzes what an RDMA peer sends: endpoint info and session requests (passive side's checks).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "probes/rdma_info.hpp"
#include "probes/rdma_session.hpp"
#include "probes/session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto p = rocewatch::parse_endpoint_info_text(text);
    FUZZ_CHECK(p.info.has_value() == p.error.empty());
    if (p.info) {
        nlohmann::json back = *p.info;
        FUZZ_CHECK(rocewatch::parse_endpoint_info(back).info == p.info);
    }
    const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return 0;
    (void)rocewatch::end_session_request(j);
    (void)rocewatch::granted_session(j);
    // No device anywhere: a request that passes every check is refused at the resolver,
    // so the fuzzer exercises the checks and never opens a verbs device.
    const rocewatch::RdmaDeviceResolver none = [](const std::string&, int, const std::string&,
                                                  std::string& why) -> std::optional<rocewatch::RdmaEndpointOptions> {
        why = "fuzzing";
        return std::nullopt;
    };
    const auto a = rocewatch::rdma_session_accept(j, rocewatch::RdmaServeLimits{}, none);
    FUZZ_CHECK(!a.ok());
    FUZZ_CHECK(a.reply.contains("reason"));
    return 0;
}
