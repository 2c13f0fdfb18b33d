// gzip for /metrics, with the snapshot's part deflated once and only the small per-request tail per scrape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rocewatch::api {

// The deflated start of a gzip member: raw deflate ending in a sync flush (byte-aligned,
// not final), so more deflate blocks can follow it and the whole stays one valid member.
struct DeflatedPrefix {
    std::string deflated;
    uint32_t crc = 0;   // CRC-32 of the uncompressed prefix
    size_t length = 0;  // uncompressed bytes
};

// Throws std::runtime_error if zlib fails (out of memory).
[[nodiscard]] DeflatedPrefix deflate_prefix(std::string_view text);
// The same for the text the pieces make one after the other, without joining them.
[[nodiscard]] DeflatedPrefix deflate_prefix(std::span<const std::string_view> pieces);

// One complete gzip member of prefix + `tail`: the gzip header, the prefix's blocks, the
// tail deflated on its own (its back-references cannot reach into the prefix, which is
// allowed), and the trailer with the two CRCs combined. Costs a deflate of `tail` only.
[[nodiscard]] std::string gzip_with_tail(const DeflatedPrefix& prefix, std::string_view tail);

}  // namespace rocewatch::api
