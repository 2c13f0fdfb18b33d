// Raw deflate with zlib, joined into one gzip member per response.
#include "api/gzip_once.hpp"

#include <zlib.h>

#include <array>
#include <span>
#include <stdexcept>

namespace rocewatch::api {

namespace {

// Deflates `pieces`, one after the other as one input, as raw deflate (no zlib/gzip
// wrapper) and appends it to `out`, ending with `flush` (Z_SYNC_FLUSH for a prefix, Z_FINISH
// for the last part).
void raw_deflate(std::span<const std::string_view> pieces, int flush, std::string& out) {
    z_stream z{};
    // Level 1 (zlib's fastest): on the 128-NIC /metrics (776 KB) it deflates in a third of
    // level 6's time (the default, and node_exporter's) to an 11% larger body, 43 KB
    // against 39 KB; a scrape's bytes are not what a node runs short of. Negative windowBits
    // is raw deflate. The state is 2^(windowBits+2) + 2^(memLevel+9) bytes: zlib's defaults
    // (15, 8) take 256 KB, allocated and written for every snapshot, and the peak of the
    // daemon's heap at a DGX Spark (heaptrack). An 8 KiB window and memLevel 6 take 64 KB and
    // give the same body: 4973 bytes against 4971 at the Spark, 41.1 KB against 43.0 at 128
    // NICs, in 0.14 against 0.15 ms and 1.8 against 1.7 ms (Python's zlib, the same library).
    // The per-request tail is a few KB: a 4 KiB window and a small hash table (about 24 KB)
    // compress it as well.
    constexpr int kLevel = 1;
    const bool tail = flush == Z_FINISH;
    if (deflateInit2(&z, kLevel, Z_DEFLATED, tail ? -12 : -13, tail ? 4 : 6, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("gzip: deflateInit2 failed");
    // Through a small buffer, appended as it fills: sizing `out` to deflateBound (the input's
    // size and more) zero-filled 776 KB at 128 NICs for a 43 KB result, and the cached prefix
    // kept that capacity, resident, from one snapshot to the next (issue 14, heaptrack).
    std::array<Bytef, 16384> buf;
    int rc = Z_OK;
    const auto run = [&](int how) {
        do {
            z.next_out = buf.data();
            z.avail_out = static_cast<uInt>(buf.size());
            rc = deflate(&z, how);
            if (rc == Z_STREAM_ERROR) return;
            out.append(reinterpret_cast<const char*>(buf.data()), buf.size() - z.avail_out);
        } while (z.avail_out == 0);
    };
    for (const auto piece : pieces) {  // each used up while the buffer has room left
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(piece.data()));
        z.avail_in = static_cast<uInt>(piece.size());
        run(Z_NO_FLUSH);
        if (rc == Z_STREAM_ERROR) break;
    }
    if (rc != Z_STREAM_ERROR) run(flush);
    // With the input used up and room to spare, a sync flush has written all; Z_BUF_ERROR is
    // a call after an exactly full buffer that had nothing left to write.
    const bool ok = flush == Z_FINISH ? rc == Z_STREAM_END : (rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_in == 0;
    deflateEnd(&z);
    if (!ok) throw std::runtime_error("gzip: deflate failed");
}

void raw_deflate(std::string_view in, int flush, std::string& out) { raw_deflate(std::span(&in, 1), flush, out); }

void put_le32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// CRC-32 of what came before (start) followed by s.
uint32_t crc_of(std::string_view s, uint32_t start = 0) {
    return static_cast<uint32_t>(crc32(start, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

}  // namespace

DeflatedPrefix deflate_prefix(std::span<const std::string_view> pieces) {
    DeflatedPrefix p;
    raw_deflate(pieces, Z_SYNC_FLUSH, p.deflated);
    for (const auto piece : pieces) {
        p.crc = crc_of(piece, p.crc);
        p.length += piece.size();
    }
    return p;
}

DeflatedPrefix deflate_prefix(std::string_view text) { return deflate_prefix(std::span(&text, 1)); }

std::string gzip_with_tail(const DeflatedPrefix& prefix, std::string_view tail) {
    // RFC 1952 header: magic, CM=deflate, no flags, no mtime, XFL 0, OS 3 (Unix).
    static constexpr char kHeader[10] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};
    std::string out;
    out.reserve(sizeof kHeader + prefix.deflated.size() + tail.size() / 2 + 64);
    out.append(kHeader, sizeof kHeader);
    out += prefix.deflated;
    raw_deflate(tail, Z_FINISH, out);
    const auto crc = crc32_combine(prefix.crc, crc_of(tail), static_cast<z_off_t>(tail.size()));
    put_le32(out, static_cast<uint32_t>(crc));
    put_le32(out, static_cast<uint32_t>((prefix.length + tail.size()) & 0xffffffffu));
    return out;
}

}  // namespace rocewatch::api
