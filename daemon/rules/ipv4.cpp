// IPv4 prefix arithmetic for the subnet rules: parse dotted quads, compare networks.
#include "daemon/rules/ipv4.hpp"

#include <algorithm>

namespace rocewatch::ipv4 {

std::optional<uint32_t> parse(std::string_view dotted) {
    uint32_t out = 0;
    int octets = 0;
    size_t i = 0;
    while (octets < 4) {
        // Up to three digits per octet; leading zeros are tolerated ("010" is 10 here, not
        // octal), since the kernel prints none and a user may type them in config.
        size_t digits = 0;
        uint32_t v = 0;
        while (i < dotted.size() && dotted[i] >= '0' && dotted[i] <= '9' && digits < 3) {
            v = v * 10 + static_cast<uint32_t>(dotted[i] - '0');
            ++i;
            ++digits;
        }
        if (digits == 0 || v > 255) return std::nullopt;
        out = (out << 8) | v;
        ++octets;
        if (octets < 4) {
            if (i >= dotted.size() || dotted[i] != '.') return std::nullopt;
            ++i;
        }
    }
    if (i != dotted.size()) return std::nullopt;
    return out;
}

std::string format(uint32_t address) {
    return std::to_string(address >> 24) + '.' + std::to_string((address >> 16) & 0xff) + '.' +
           std::to_string((address >> 8) & 0xff) + '.' + std::to_string(address & 0xff);
}

uint32_t mask(int prefixlen) {
    prefixlen = std::clamp(prefixlen, 0, 32);
    // Shifting a 32-bit value by 32 is undefined, hence the special case.
    return prefixlen == 0 ? 0u : ~uint32_t{0} << (32 - prefixlen);
}

uint32_t network(uint32_t address, int prefixlen) { return address & mask(prefixlen); }

bool overlap(uint32_t a, int prefix_a, uint32_t b, int prefix_b) {
    const int shorter = std::min(prefix_a, prefix_b);
    return network(a, shorter) == network(b, shorter);
}

bool is_link_local(uint32_t address) { return (address & 0xffff0000u) == 0xa9fe0000u; }

}  // namespace rocewatch::ipv4
