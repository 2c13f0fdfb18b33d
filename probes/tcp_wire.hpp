// The TCP probe data port's wire format: fixed-size big-endian headers, pure encode/decode.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocewatch {

// Shared secret both daemons hold (32 raw bytes; the token file holds 64 hex digits). It never
// crosses the data port: a request carries its HMAC over the server's challenge (request_mac).
using ProbeToken = std::array<uint8_t, 32>;

std::optional<ProbeToken> token_from_hex(std::string_view hex);  // 64 hex digits, else nullopt
std::string token_to_hex(const ProbeToken& t);
// Constant time in the token length: no early exit on the first differing byte.
bool token_equal(const ProbeToken& a, const ProbeToken& b);

namespace tcpwire {

inline constexpr uint32_t kRequestMagic = 0x52575051;    // "RWPQ"
inline constexpr uint32_t kReplyMagic = 0x52575041;      // "RWPA"
inline constexpr uint32_t kReportMagic = 0x52575052;     // "RWPR"
inline constexpr uint32_t kChallengeMagic = 0x52575043;  // "RWPC"
// 2: the server's challenge first, the token proved by an HMAC (1 sent the token itself).
inline constexpr uint16_t kVersion = 2;

inline constexpr size_t kChallengeSize = 24;
inline constexpr size_t kRequestSize = 64;
inline constexpr size_t kReplySize = 24;
inline constexpr size_t kReportSize = 32;

enum class Mode : uint8_t {
    sink = 1,  // client streams bytes; after its FIN the server reports what it received
    echo = 2,  // ping-pong of fixed-size messages
};

enum class Code : uint8_t {
    ok = 0,
    auth_refused = 1,
    busy = 2,         // server at its session limit
    bad_request = 3,  // unknown mode, zero/oversized message size
    unsupported_version = 4,
    limit_reached = 5,  // report: the session hit the server's byte or time budget
};

const char* to_string(Mode m);
const char* to_string(Code c);

// Server -> client, first bytes on every connection, sent on accept: a nonce the client's
// request must prove the token over, so that a request seen on the wire opens nothing later.
//   0 magic u32 | 4 version u16 | 6 reserved u16 (0) | 8 nonce [16]
struct Challenge {
    uint16_t version = kVersion;
    std::array<uint8_t, 16> nonce{};
};

// Client -> server, the answer to the challenge.
//   0 magic u32 | 4 version u16 | 6 mode u8 | 7 flags u8 (0) | 8 message_size u32 |
//   12 duration_ms u32 | 16 max_bytes u64 | 24 mac [32] | 56 reserved [8] (zero)
struct Request {
    uint16_t version = kVersion;
    Mode mode = Mode::sink;
    uint32_t message_size = 0;  // echo: bytes per message; sink: ignored (0)
    uint32_t duration_ms = 0;   // how long the client means to run
    uint64_t max_bytes = 0;     // most payload bytes the client means to send
    ProbeToken mac{};           // request_mac(): the token proved, not sent
};

// HMAC-SHA256 keyed with the token over a label, the challenge's nonce and the request as
// encoded with its mac zeroed: the token proved for this connection and these fields only.
// nullopt when nettle cannot be loaded (load_hmac() says why).
std::optional<ProbeToken> request_mac(const ProbeToken& token, const Challenge& c, const Request& r);

// Server -> client, the answer to a request. The grants are the request clamped to the
// server's budget; a well-behaved client stays within them, a peer that does not is cut.
//   0 magic u32 | 4 version u16 | 6 code u8 | 7 reserved u8 | 8 duration_ms u32 |
//   12 message_size u32 | 16 max_bytes u64
struct Reply {
    uint16_t version = kVersion;
    Code code = Code::ok;
    uint32_t duration_ms = 0;
    uint32_t message_size = 0;
    uint64_t max_bytes = 0;
};

// Server -> client at the end of a sink session (after the client's FIN, or when the
// budget ran out): what arrived, and when on the server's monotonic clock. Times of
// sessions of one server share a clock, so a client can take the span over its streams.
//   0 magic u32 | 4 code u8 | 5 first_read u24 | 8 bytes u64 | 16 first_ns i64 | 24 last_ns i64
// first_read was reserved (zero) before: a server that sends 0 there is read as before.
struct Report {
    Code code = Code::ok;
    uint64_t bytes = 0;       // payload bytes received (header excluded)
    int64_t first_ns = 0;     // when the first payload byte was read
    int64_t last_ns = 0;      // when the last one was read
    uint32_t first_read = 0;  // bytes of the read at first_ns (they arrived before it), at most 2^24-1
};
inline constexpr uint32_t kMaxFirstRead = (1u << 24) - 1;

std::array<uint8_t, kChallengeSize> encode(const Challenge& c);
std::array<uint8_t, kRequestSize> encode(const Request& r);
std::array<uint8_t, kReplySize> encode(const Reply& r);
std::array<uint8_t, kReportSize> encode(const Report& r);

// nullopt when the buffer is shorter than the header or the magic is wrong. Field values
// (version, mode, code) are returned as sent: the caller judges them.
std::optional<Challenge> decode_challenge(const uint8_t* p, size_t n);
std::optional<Request> decode_request(const uint8_t* p, size_t n);
std::optional<Reply> decode_reply(const uint8_t* p, size_t n);
std::optional<Report> decode_report(const uint8_t* p, size_t n);

// What the streams' reports say arrived over the receiver's span, all streams together: from
// the earliest first read to the latest last one. The bytes of that earliest first read arrived
// before the span began, so they are not counted in it (counting them overstated short or
// shaped runs). seconds is 0 when everything came in one read: no span to divide by.
struct ReceiverSpan {
    uint64_t bytes = 0;  // received within the span
    double seconds = 0;
};
ReceiverSpan receiver_span(const std::vector<Report>& reports);

}  // namespace tcpwire
}  // namespace rocewatch
