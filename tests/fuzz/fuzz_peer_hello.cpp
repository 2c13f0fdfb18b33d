// Fuzzes the peer hello (GET /api/v1/peer/hello answer) as this daemon reads a peer's.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "api/probe_view.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return 0;
    try {
        (void)rocewatch::api::hello_from_json(j);
    } catch (const nlohmann::json::exception&) {
        // The documented ways a malformed hello is refused; anything else escapes and crashes.
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
