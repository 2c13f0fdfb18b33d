// Fuzzes the sysfs value parsers: enum lines, link rates, counters and GID table entries.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "probes/rdma_info.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)rocewatch::parse_enum_line(text);
    (void)rocewatch::parse_rate_gbps(text);
    (void)rocewatch::parse_u64_counter(text);
    (void)rocewatch::is_lag_device_name(text);
    const bool valid = rocewatch::is_valid_gid(text);
    const auto ipv4 = rocewatch::ipv4_from_gid(text);
    // Only a GID can be IPv4-mapped, and the zero GID is not.
    FUZZ_CHECK(ipv4.empty() || valid);
    FUZZ_CHECK(ipv4.empty() || !rocewatch::is_zero_gid(text));
    // The probes' own GID reader (the same sysfs spelling) must give back what it read.
    if (auto gid = rocewatch::gid_from_string(text)) {
        FUZZ_CHECK(rocewatch::gid_from_string(rocewatch::gid_to_string(*gid)) == gid);
        FUZZ_CHECK(rocewatch::is_zero_gid(rocewatch::gid_to_string(*gid)) == rocewatch::gid_is_zero(*gid));
    }
    return 0;
}
