// TCP probe header encoding, tokens and the handshake's HMAC, and the errno / refusal-code ->
// reason mapping.
#include <gtest/gtest.h>

#include <cerrno>
#include <span>
#include <string>
#include <string_view>

#include "probes/errors.hpp"
#include "probes/hmac.hpp"
#include "probes/tcp_wire.hpp"
#include "util/hex.hpp"

using namespace rocewatch;

namespace {

ProbeToken sample_token() {
    ProbeToken t{};
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(0xa0 + i);
    return t;
}

}  // namespace

TEST(TcpWire, RequestLayoutIsBigEndianAndFixed) {
    tcpwire::Request r;
    r.mode = tcpwire::Mode::echo;
    r.message_size = 0x01020304;
    r.duration_ms = 1500;
    r.max_bytes = 0x1122334455667788ull;
    r.mac = sample_token();
    const auto b = tcpwire::encode(r);
    ASSERT_EQ(b.size(), 64u);
    EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "RWPQ");
    EXPECT_EQ(b[4], 0x00);
    EXPECT_EQ(b[5], 0x02);  // version 2
    EXPECT_EQ(b[6], 2);     // echo
    EXPECT_EQ(b[7], 0);
    EXPECT_EQ(b[8], 0x01);
    EXPECT_EQ(b[11], 0x04);
    EXPECT_EQ(b[12], 0x00);
    EXPECT_EQ(b[14], 0x05);  // 1500 = 0x05dc
    EXPECT_EQ(b[15], 0xdc);
    EXPECT_EQ(b[16], 0x11);
    EXPECT_EQ(b[23], 0x88);
    EXPECT_EQ(b[24], 0xa0);
    EXPECT_EQ(b[55], 0xa0 + 31);
    for (size_t i = 56; i < 64; ++i) EXPECT_EQ(b[i], 0) << i;

    const auto d = tcpwire::decode_request(b.data(), b.size());
    ASSERT_TRUE(d);
    EXPECT_EQ(d->version, 2);
    EXPECT_EQ(d->mode, tcpwire::Mode::echo);
    EXPECT_EQ(d->message_size, 0x01020304u);
    EXPECT_EQ(d->duration_ms, 1500u);
    EXPECT_EQ(d->max_bytes, 0x1122334455667788ull);
    EXPECT_EQ(d->mac, r.mac);
}

TEST(TcpWire, ChallengeLayoutAndRoundTrip) {
    tcpwire::Challenge c;
    for (size_t i = 0; i < c.nonce.size(); ++i) c.nonce[i] = static_cast<uint8_t>(0x10 + i);
    const auto b = tcpwire::encode(c);
    ASSERT_EQ(b.size(), 24u);
    EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "RWPC");
    EXPECT_EQ(b[5], 0x02);
    EXPECT_EQ(b[6], 0);
    EXPECT_EQ(b[7], 0);
    EXPECT_EQ(b[8], 0x10);
    EXPECT_EQ(b[23], 0x10 + 15);
    const auto d = tcpwire::decode_challenge(b.data(), b.size());
    ASSERT_TRUE(d);
    EXPECT_EQ(d->version, 2);
    EXPECT_EQ(d->nonce, c.nonce);
    EXPECT_FALSE(tcpwire::decode_challenge(b.data(), b.size() - 1));
    const auto req = tcpwire::encode(tcpwire::Request{});
    EXPECT_FALSE(tcpwire::decode_challenge(req.data(), req.size())) << "a request is not a challenge";
}

// nettle's HMAC-SHA256 against RFC 4231's test cases 1 and 2 (a 20-byte key of 0x0b; "Jefe").
TEST(TcpWire, HmacSha256MatchesRfc4231) {
    ASSERT_EQ(load_hmac(), std::nullopt);
    auto bytes = [](std::string_view s) { return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
    const std::string key1(20, '\x0b');
    const auto one = hmac_sha256(bytes(key1), {bytes("Hi "), bytes("There")});
    ASSERT_TRUE(one);
    EXPECT_EQ(to_hex(*one), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    const auto two = hmac_sha256(bytes("Jefe"), {bytes("what do ya want for nothing?")});
    ASSERT_TRUE(two);
    EXPECT_EQ(to_hex(*two), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// The request's mac proves the token for one challenge and one set of fields: another nonce,
// another field or another token each give another mac; the mac field itself is not covered.
TEST(TcpWire, RequestMacBindsTokenNonceAndFields) {
    tcpwire::Challenge c;
    c.nonce.fill(7);
    tcpwire::Request r;
    r.duration_ms = 2000;
    r.max_bytes = 1 << 20;
    const auto mac = tcpwire::request_mac(sample_token(), c, r);
    ASSERT_TRUE(mac);
    EXPECT_NE(*mac, sample_token()) << "the token is never what is sent";
    r.mac = *mac;
    EXPECT_EQ(tcpwire::request_mac(sample_token(), c, r), mac) << "the mac field is zeroed before hashing";
    auto other_nonce = c;
    other_nonce.nonce[15] = 8;
    EXPECT_NE(tcpwire::request_mac(sample_token(), other_nonce, r), mac);
    auto longer = r;
    longer.duration_ms = 2001;
    EXPECT_NE(tcpwire::request_mac(sample_token(), c, longer), mac);
    ProbeToken other{};
    EXPECT_NE(tcpwire::request_mac(other, c, r), mac);
}

TEST(TcpWire, DecodeRejectsShortOrForeignInput) {
    const auto b = tcpwire::encode(tcpwire::Request{});
    EXPECT_FALSE(tcpwire::decode_request(b.data(), b.size() - 1));
    EXPECT_FALSE(tcpwire::decode_request(nullptr, 64));
    auto bad = b;
    bad[0] = 'G';  // "GET / HTTP/1.1" hitting the probe port
    EXPECT_FALSE(tcpwire::decode_request(bad.data(), bad.size()));
    // A reply is not a request, nor a report.
    const auto rep = tcpwire::encode(tcpwire::Reply{});
    EXPECT_FALSE(tcpwire::decode_report(rep.data(), rep.size()));
}

TEST(TcpWire, UnknownValuesAreReturnedForTheCallerToJudge) {
    auto b = tcpwire::encode(tcpwire::Request{});
    b[5] = 9;   // version 9
    b[6] = 77;  // unknown mode
    const auto d = tcpwire::decode_request(b.data(), b.size());
    ASSERT_TRUE(d);
    EXPECT_EQ(d->version, 9);
    EXPECT_EQ(static_cast<int>(d->mode), 77);
}

TEST(TcpWire, ReplyAndReportRoundTrip) {
    tcpwire::Reply r;
    r.code = tcpwire::Code::busy;
    r.duration_ms = 10000;
    r.message_size = 64;
    r.max_bytes = 16ull << 30;
    const auto rb = tcpwire::encode(r);
    ASSERT_EQ(rb.size(), 24u);
    EXPECT_EQ(std::string(rb.begin(), rb.begin() + 4), "RWPA");
    EXPECT_EQ(rb[6], 2);
    const auto rd = tcpwire::decode_reply(rb.data(), rb.size());
    ASSERT_TRUE(rd);
    EXPECT_EQ(rd->code, tcpwire::Code::busy);
    EXPECT_EQ(rd->duration_ms, 10000u);
    EXPECT_EQ(rd->message_size, 64u);
    EXPECT_EQ(rd->max_bytes, 16ull << 30);

    tcpwire::Report p;
    p.code = tcpwire::Code::limit_reached;
    p.bytes = 123456789012ull;
    p.first_ns = 5'000'000'000'123;
    p.last_ns = 5'001'000'000'456;
    const auto pb = tcpwire::encode(p);
    ASSERT_EQ(pb.size(), 32u);
    EXPECT_EQ(std::string(pb.begin(), pb.begin() + 4), "RWPR");
    const auto pd = tcpwire::decode_report(pb.data(), pb.size());
    ASSERT_TRUE(pd);
    EXPECT_EQ(pd->code, tcpwire::Code::limit_reached);
    EXPECT_EQ(pd->bytes, 123456789012ull);
    EXPECT_EQ(pd->first_ns, 5'000'000'000'123);
    EXPECT_EQ(pd->last_ns, 5'001'000'000'456);
    EXPECT_EQ(pd->first_read, 0u);  // what a server from before the field sends
    p.first_read = 262144;
    const auto pf = tcpwire::decode_report(tcpwire::encode(p).data(), 32);
    ASSERT_TRUE(pf);
    EXPECT_EQ(pf->first_read, 262144u);
    EXPECT_EQ(pf->bytes, 123456789012ull);
    p.first_read = 1u << 30;  // clamped to the 24 bits the field has
    EXPECT_EQ(tcpwire::decode_report(tcpwire::encode(p).data(), 32)->first_read, tcpwire::kMaxFirstRead);
}

static tcpwire::Report report(uint64_t bytes, int64_t first_ns, int64_t last_ns, uint32_t first_read) {
    tcpwire::Report r;
    r.bytes = bytes;
    r.first_ns = first_ns;
    r.last_ns = last_ns;
    r.first_read = first_read;
    return r;
}

// Two reads of 1 MB one second apart are 1 MB/s: the first read's bytes arrived before the
// span began (the receiver once divided both by the second between them: 2 MB/s).
TEST(TcpWire, ReceiverSpanLeavesOutTheFirstRead) {
    const auto one = tcpwire::receiver_span({report(2'000'000, 1'000'000'000, 2'000'000'000, 1'000'000)});
    EXPECT_EQ(one.bytes, 1'000'000u);
    EXPECT_DOUBLE_EQ(one.seconds, 1.0);
    // Several streams: only the read that opened the span is outside it; the other streams'
    // first reads arrived inside it. Streams with nothing received do not count.
    const auto four = tcpwire::receiver_span({report(3'000, 500, 4'000, 1'000), report(5'000, 100, 3'000, 700),
                                              report(0, 0, 0, 0), report(2'000, 2'000, 5'000, 2'000)});
    EXPECT_EQ(four.bytes, 10'000u - 700u);
    EXPECT_DOUBLE_EQ(four.seconds, 4'900 / 1e9);
    // A server without the field (first_read 0): bytes over the span, as before.
    EXPECT_EQ(tcpwire::receiver_span({report(2'000, 0, 1'000, 0)}).bytes, 2'000u);
    // One read only: no span.
    const auto single = tcpwire::receiver_span({report(4'096, 7, 7, 4'096)});
    EXPECT_EQ(single.seconds, 0.0);
    EXPECT_EQ(single.bytes, 4'096u);
    EXPECT_EQ(tcpwire::receiver_span({}).seconds, 0.0);
}

TEST(Token, HexParsingAndComparison) {
    const std::string hex = "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf";
    const auto t = token_from_hex(hex);
    ASSERT_TRUE(t);
    EXPECT_EQ(*t, sample_token());
    EXPECT_EQ(token_to_hex(*t), hex);
    EXPECT_TRUE(token_from_hex(hex + "\n"));  // as read from a token file
    EXPECT_TRUE(token_from_hex("A0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBF"));
    EXPECT_FALSE(token_from_hex(hex.substr(2)));
    EXPECT_FALSE(token_from_hex(hex + "00"));
    EXPECT_FALSE(token_from_hex("zz" + hex.substr(2)));
    EXPECT_FALSE(token_from_hex(""));

    EXPECT_TRUE(token_equal(*t, sample_token()));
    auto other = *t;
    other[31] ^= 1;
    EXPECT_FALSE(token_equal(*t, other));
    other = *t;
    other[0] ^= 0x80;
    EXPECT_FALSE(token_equal(*t, other));
}

TEST(Reasons, ErrnoMapping) {
    EXPECT_STREQ(reason_from_errno(0), "");
    EXPECT_STREQ(reason_from_errno(ECONNREFUSED), "connection_refused");
    EXPECT_STREQ(reason_from_errno(EHOSTUNREACH), "peer_unreachable");
    EXPECT_STREQ(reason_from_errno(ENETUNREACH), "peer_unreachable");
    EXPECT_STREQ(reason_from_errno(ENETDOWN), "peer_unreachable");
    EXPECT_STREQ(reason_from_errno(ETIMEDOUT), "timeout");
    EXPECT_STREQ(reason_from_errno(EAGAIN), "timeout");
    EXPECT_STREQ(reason_from_errno(ECONNRESET), "peer_closed");
    EXPECT_STREQ(reason_from_errno(EPIPE), "peer_closed");
    EXPECT_STREQ(reason_from_errno(EADDRNOTAVAIL), "local_bind_failed");
    EXPECT_STREQ(reason_from_errno(ENODEV), "local_bind_failed");
    EXPECT_STREQ(reason_from_errno(EPERM), "permission_denied");
    EXPECT_STREQ(reason_from_errno(EACCES), "permission_denied");
    EXPECT_STREQ(reason_from_errno(EMFILE), "local_resources");
    EXPECT_STREQ(reason_from_errno(ENOBUFS), "local_resources");
    EXPECT_STREQ(reason_from_errno(EAFNOSUPPORT), "bad_target");
    EXPECT_STREQ(reason_from_errno(EIO), "socket_error");
}

// A peer's session refusal names its reason in JSON: one of our words is kept, any other text
// is a protocol error, never a label value or a word the scheduler acts on.
TEST(Reasons, FromAPeersAnswer) {
    EXPECT_STREQ(reason_from_peer("peer_busy"), "peer_busy");
    EXPECT_STREQ(reason_from_peer("device_not_found"), "device_not_found");
    EXPECT_STREQ(reason_from_peer("gid_mismatch"), "gid_mismatch");
    EXPECT_STREQ(reason_from_peer("rdma_no_ack"), "rdma_no_ack");
    for (const char* word : {"stopped", "skipped_budget", "skipped_busy", "", "PEER_BUSY", "peer_busy ",
                             "anything {label=\"x\"}", "a\nnew line"})
        EXPECT_STREQ(reason_from_peer(word), "protocol_error") << word;
    EXPECT_STREQ(reason_from_peer(std::string(1 << 20, 'x')), "protocol_error");
}

TEST(Reasons, RefusalCodes) {
    EXPECT_STREQ(reason_from_reply_code(tcpwire::Code::ok), "");
    EXPECT_STREQ(reason_from_reply_code(tcpwire::Code::auth_refused), "auth_refused");
    EXPECT_STREQ(reason_from_reply_code(tcpwire::Code::busy), "peer_busy");
    EXPECT_STREQ(reason_from_reply_code(tcpwire::Code::unsupported_version), "version_mismatch");
    EXPECT_STREQ(reason_from_reply_code(tcpwire::Code::bad_request), "bad_target");
    EXPECT_STREQ(reason_from_reply_code(static_cast<tcpwire::Code>(200)), "protocol_error");
}

TEST(Reasons, DetailNamesTheErrno) {
    const std::string d = errno_detail("connect to 10.0.0.2:5201", ECONNREFUSED);
    EXPECT_NE(d.find("connect to 10.0.0.2:5201: "), std::string::npos) << d;
    EXPECT_NE(d.find("(ECONNREFUSED)"), std::string::npos) << d;
}
