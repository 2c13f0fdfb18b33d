// Encoding and decoding of the TCP probe headers (see tcp_wire.hpp for the layouts).
#include "probes/tcp_wire.hpp"

#include <algorithm>
#include <limits>
#include <string_view>

#include "probes/hmac.hpp"
#include "util/ct_compare.hpp"
#include "util/hex.hpp"

namespace rocewatch {

namespace {

void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void put64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t get32(const uint8_t* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
    return v;
}
uint64_t get64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

std::optional<ProbeToken> token_from_hex(std::string_view hex) {
    // Tolerate the trailing newline a token file usually has.
    while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r' || hex.back() == ' ')) hex.remove_suffix(1);
    ProbeToken t{};
    if (!from_hex(hex, t)) return std::nullopt;
    return t;
}

std::string token_to_hex(const ProbeToken& t) { return to_hex(t); }

bool token_equal(const ProbeToken& a, const ProbeToken& b) { return constant_time_equal(a, b); }

namespace tcpwire {

const char* to_string(Mode m) {
    switch (m) {
        case Mode::sink: return "sink";
        case Mode::echo: return "echo";
    }
    return "unknown";
}

const char* to_string(Code c) {
    switch (c) {
        case Code::ok: return "ok";
        case Code::auth_refused: return "auth_refused";
        case Code::busy: return "busy";
        case Code::bad_request: return "bad_request";
        case Code::unsupported_version: return "unsupported_version";
        case Code::limit_reached: return "limit_reached";
    }
    return "unknown";
}

std::array<uint8_t, kChallengeSize> encode(const Challenge& c) {
    std::array<uint8_t, kChallengeSize> b{};
    put32(&b[0], kChallengeMagic);
    put16(&b[4], c.version);
    std::copy(c.nonce.begin(), c.nonce.end(), b.begin() + 8);
    return b;
}

std::optional<ProbeToken> request_mac(const ProbeToken& token, const Challenge& c, const Request& r) {
    static constexpr std::string_view kLabel = "rocewatch data port request";
    Request unsigned_request = r;
    unsigned_request.mac = {};
    const auto body = encode(unsigned_request);
    const auto* label = reinterpret_cast<const uint8_t*>(kLabel.data());
    return hmac_sha256(token, {{label, kLabel.size()}, c.nonce, body});
}

std::array<uint8_t, kRequestSize> encode(const Request& r) {
    std::array<uint8_t, kRequestSize> b{};
    put32(&b[0], kRequestMagic);
    put16(&b[4], r.version);
    b[6] = static_cast<uint8_t>(r.mode);
    b[7] = 0;
    put32(&b[8], r.message_size);
    put32(&b[12], r.duration_ms);
    put64(&b[16], r.max_bytes);
    std::copy(r.mac.begin(), r.mac.end(), b.begin() + 24);
    return b;
}

std::array<uint8_t, kReplySize> encode(const Reply& r) {
    std::array<uint8_t, kReplySize> b{};
    put32(&b[0], kReplyMagic);
    put16(&b[4], r.version);
    b[6] = static_cast<uint8_t>(r.code);
    put32(&b[8], r.duration_ms);
    put32(&b[12], r.message_size);
    put64(&b[16], r.max_bytes);
    return b;
}

std::array<uint8_t, kReportSize> encode(const Report& r) {
    std::array<uint8_t, kReportSize> b{};
    put32(&b[0], kReportMagic);
    b[4] = static_cast<uint8_t>(r.code);
    const uint32_t fr = std::min(r.first_read, kMaxFirstRead);
    b[5] = static_cast<uint8_t>(fr >> 16);
    b[6] = static_cast<uint8_t>(fr >> 8);
    b[7] = static_cast<uint8_t>(fr);
    put64(&b[8], r.bytes);
    put64(&b[16], static_cast<uint64_t>(r.first_ns));
    put64(&b[24], static_cast<uint64_t>(r.last_ns));
    return b;
}

std::optional<Challenge> decode_challenge(const uint8_t* p, size_t n) {
    if (p == nullptr || n < kChallengeSize || get32(p) != kChallengeMagic) return std::nullopt;
    Challenge c;
    c.version = get16(p + 4);
    std::copy(p + 8, p + 8 + c.nonce.size(), c.nonce.begin());
    return c;
}

std::optional<Request> decode_request(const uint8_t* p, size_t n) {
    if (p == nullptr || n < kRequestSize || get32(p) != kRequestMagic) return std::nullopt;
    Request r;
    r.version = get16(p + 4);
    r.mode = static_cast<Mode>(p[6]);
    r.message_size = get32(p + 8);
    r.duration_ms = get32(p + 12);
    r.max_bytes = get64(p + 16);
    std::copy(p + 24, p + 24 + r.mac.size(), r.mac.begin());
    return r;
}

std::optional<Reply> decode_reply(const uint8_t* p, size_t n) {
    if (p == nullptr || n < kReplySize || get32(p) != kReplyMagic) return std::nullopt;
    Reply r;
    r.version = get16(p + 4);
    r.code = static_cast<Code>(p[6]);
    r.duration_ms = get32(p + 8);
    r.message_size = get32(p + 12);
    r.max_bytes = get64(p + 16);
    return r;
}

ReceiverSpan receiver_span(const std::vector<Report>& reports) {
    const Report* earliest = nullptr;
    int64_t last = std::numeric_limits<int64_t>::min();
    uint64_t total = 0;
    for (const auto& r : reports) {
        if (r.bytes == 0) continue;
        total += r.bytes;
        if (earliest == nullptr || r.first_ns < earliest->first_ns) earliest = &r;
        last = std::max(last, r.last_ns);
    }
    if (earliest == nullptr || last <= earliest->first_ns) return {total, 0};
    return {total - std::min<uint64_t>(earliest->first_read, earliest->bytes),
            static_cast<double>(last - earliest->first_ns) / 1e9};
}

std::optional<Report> decode_report(const uint8_t* p, size_t n) {
    if (p == nullptr || n < kReportSize || get32(p) != kReportMagic) return std::nullopt;
    Report r;
    r.code = static_cast<Code>(p[4]);
    r.first_read = static_cast<uint32_t>(p[5]) << 16 | static_cast<uint32_t>(p[6]) << 8 | p[7];
    r.bytes = get64(p + 8);
    r.first_ns = static_cast<int64_t>(get64(p + 16));
    r.last_ns = static_cast<int64_t>(get64(p + 24));
    return r;
}

}  // namespace tcpwire
}  // namespace rocewatch
