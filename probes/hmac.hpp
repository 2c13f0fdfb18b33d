// HMAC-SHA256 (RFC 2104) from nettle, loaded the first time a data port or a TCP probe needs it:
// how the data port's handshake proves the token without sending it (tcp_wire.hpp). nettle is
// Debian's libnettle8, which apt itself needs, so every node has it. Loaded, it costs a process
// 0.3 MiB resident; linked, it cost as much in every daemon, probing or not (issue 14's memory
// goal); OpenSSL's HMAC, loaded for it, 3.8 MiB (bench/hmac_pss.sh, docs/design.md#dependencies).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

namespace rocewatch {

using Sha256Digest = std::array<uint8_t, 32>;

// Loads libnettle.so.8 once (any thread, any number of times). nullopt when it is there, else
// why not, in the dynamic loader's words.
[[nodiscard]] std::optional<std::string> load_hmac();

// HMAC-SHA256 of the parts, in order, keyed with `key`. nullopt when load_hmac() failed.
std::optional<Sha256Digest> hmac_sha256(std::span<const uint8_t> key,
                                        std::initializer_list<std::span<const uint8_t>> parts);

}  // namespace rocewatch
