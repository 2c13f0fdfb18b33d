// IPv4 prefix arithmetic for the subnet rules: parse dotted quads, compare networks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocewatch::ipv4 {

// "192.168.100.15" -> host-order 0xC0A8640F; nullopt for anything that is not exactly
// four decimal octets 0..255.
std::optional<uint32_t> parse(std::string_view dotted);

std::string format(uint32_t address);

// Netmask for a prefix length, clamped to 0..32 (0 -> 0.0.0.0, 32 -> 255.255.255.255).
uint32_t mask(int prefixlen);

// The network an address/prefix belongs to: 192.168.100.15/24 -> 192.168.100.0.
uint32_t network(uint32_t address, int prefixlen);

// Whether the two networks share any address: compared under the shorter prefix, so a
// /32 inside a /24 counts, as does a /16 holding a /24.
bool overlap(uint32_t a, int prefix_a, uint32_t b, int prefix_b);

// 169.254.0.0/16: zeroconf puts one on any interface, and every interface shares it.
bool is_link_local(uint32_t address);

}  // namespace rocewatch::ipv4
