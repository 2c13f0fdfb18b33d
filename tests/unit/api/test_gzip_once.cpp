// gzip_with_tail and accepts_gzip: one valid gzip member from a once-deflated prefix and a fresh tail.
#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "api/gzip_once.hpp"
#include "api/metrics_cache.hpp"

using namespace rocewatch::api;

namespace {

// zlib's own gzip reader (windowBits 16+15), which checks the CRC and length trailer.
std::string gunzip(const std::string& z) {
    z_stream s{};
    if (inflateInit2(&s, 16 + 15) != Z_OK) throw std::runtime_error("inflateInit2");
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data()));
    s.avail_in = static_cast<uInt>(z.size());
    std::string out;
    char buf[16384];
    int rc = Z_OK;
    while (rc == Z_OK) {
        s.next_out = reinterpret_cast<Bytef*>(buf);
        s.avail_out = sizeof buf;
        rc = inflate(&s, Z_NO_FLUSH);
        out.append(buf, sizeof buf - s.avail_out);
    }
    const bool whole = rc == Z_STREAM_END && s.avail_in == 0;
    inflateEnd(&s);
    if (!whole) throw std::runtime_error("not one complete gzip member: rc " + std::to_string(rc));
    return out;
}

std::string metrics_like(size_t lines, unsigned seed) {
    std::mt19937 rng(seed);
    std::string s;
    for (size_t i = 0; i < lines; ++i)
        s += "rocewatch_rdma_port_rcv_bytes_total{device=\"mlx5_" + std::to_string(i % 7) + "\",port=\"1\"} " +
             std::to_string(rng()) + "\n";
    return s;
}

}  // namespace

TEST(GzipOnce, PrefixAndTailMakeOneMember) {
    const std::string snap = metrics_like(2000, 1);
    const auto prefix = deflate_prefix(snap);
    for (const std::string& tail : {std::string(), std::string("x"), metrics_like(30, 2), metrics_like(3000, 3)}) {
        const std::string z = gzip_with_tail(prefix, tail);
        EXPECT_EQ(gunzip(z), snap + tail) << "tail of " << tail.size() << " bytes";
    }
    EXPECT_LT(prefix.deflated.size(), snap.size() / 2) << "the prefix is really compressed";
}

// The prefix is cached from one snapshot to the next: it holds its own bytes, not the room
// deflate's worst case needs (about the input's size: 776 KB at 128 NICs for a 43 KB prefix).
TEST(GzipOnce, PrefixHoldsAboutItsOwnBytes) {
    std::string snap;
    while (snap.size() < 800'000) snap += metrics_like(7, 4);  // repeats: deflates to little
    const auto prefix = deflate_prefix(snap);
    EXPECT_LT(prefix.deflated.size(), snap.size() / 20);
    EXPECT_LE(prefix.deflated.capacity(), 2 * prefix.deflated.size() + 16384) << "input " << snap.size();
    EXPECT_EQ(gunzip(gzip_with_tail(prefix, "")), snap);
}

// A body deflated from its pieces, never joined: the same member as from the joined text,
// empty pieces and pieces of a byte included.
TEST(GzipOnce, PrefixFromPiecesIsThePrefixOfTheirText) {
    const std::vector<std::string> pieces = {metrics_like(500, 5), "", "#", metrics_like(1, 6), metrics_like(3000, 7)};
    std::string joined;
    for (const auto& p : pieces) joined += p;
    const std::vector<std::string_view> views(pieces.begin(), pieces.end());
    const auto prefix = deflate_prefix(views);
    EXPECT_EQ(prefix.length, joined.size());
    EXPECT_EQ(prefix.crc, deflate_prefix(joined).crc);
    EXPECT_EQ(gunzip(gzip_with_tail(prefix, "tail\n")), joined + "tail\n");
    EXPECT_EQ(gunzip(gzip_with_tail(deflate_prefix(std::vector<std::string_view>{}), "")), "");
}

TEST(GzipOnce, EmptyPrefix) {
    const auto prefix = deflate_prefix("");
    EXPECT_EQ(gunzip(gzip_with_tail(prefix, "tail\n")), "tail\n");
    EXPECT_EQ(gunzip(gzip_with_tail(prefix, "")), "");
}

TEST(GzipOnce, AcceptEncoding) {
    EXPECT_TRUE(accepts_gzip("gzip"));
    EXPECT_TRUE(accepts_gzip("GZIP"));
    EXPECT_TRUE(accepts_gzip("deflate, gzip;q=0.5"));
    EXPECT_TRUE(accepts_gzip("*"));
    EXPECT_TRUE(accepts_gzip("br , gzip , deflate"));
    EXPECT_FALSE(accepts_gzip(""));
    EXPECT_FALSE(accepts_gzip("identity"));
    EXPECT_FALSE(accepts_gzip("gzip;q=0"));
    EXPECT_FALSE(accepts_gzip("gzip; q=0.000"));
    EXPECT_FALSE(accepts_gzip("x-gzip2"));
    EXPECT_TRUE(accepts_gzip("x-gzip"));
    // A coding named outright wins over "*", in either order.
    EXPECT_FALSE(accepts_gzip("gzip;q=0, *"));
    EXPECT_FALSE(accepts_gzip("*, gzip;q=0"));
    EXPECT_TRUE(accepts_gzip("*;q=0, gzip"));
    EXPECT_FALSE(accepts_gzip("*;q=0"));
}
