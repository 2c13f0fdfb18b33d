// Fuzzes the TOML config loader and the value spellings it parses (durations, latencies, listen).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/config/config_loader.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto r = rocewatch::parse_config(text, "fuzz.toml");
    // The loader's contract: a config or errors, never both, never neither.
    FUZZ_CHECK(r.config.has_value() != !r.errors.empty());
    for (const auto& e : r.errors) (void)e.to_string();
    if (r.config) (void)rocewatch::config_to_json(*r.config).dump();

    // The single-value spellings are read from the first line only: short inputs explore them.
    const auto line = text.substr(0, text.find('\n'));
    if (auto d = rocewatch::parse_duration(line))
        FUZZ_CHECK(rocewatch::parse_duration(rocewatch::format_duration(*d)) == d);
    if (auto l = rocewatch::parse_latency(line))
        FUZZ_CHECK(rocewatch::parse_latency(rocewatch::format_latency(*l)) == l);
    (void)rocewatch::parse_listen_address(line);
    return 0;
}
