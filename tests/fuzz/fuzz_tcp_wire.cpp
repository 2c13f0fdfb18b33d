// Fuzzes the TCP probe data port's headers (challenge, request, reply, report) and the token's
// hex form.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fuzz_check.hpp"
#include "probes/tcp_wire.hpp"

namespace w = rocewatch::tcpwire;

// Decoding what encode() made gives the same fields back: nothing is lost or misplaced.
template <class Msg, class Decode>
static void round_trip(const Msg& m, Decode decode) {
    const auto bytes = w::encode(m);
    const auto again = decode(bytes.data(), bytes.size());
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(std::memcmp(w::encode(*again).data(), bytes.data(), bytes.size()) == 0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (auto c = w::decode_challenge(data, size)) round_trip(*c, w::decode_challenge);
    if (auto r = w::decode_request(data, size)) {
        (void)w::to_string(r->mode);
        round_trip(*r, w::decode_request);
    }
    if (auto r = w::decode_reply(data, size)) {
        (void)w::to_string(r->code);
        round_trip(*r, w::decode_reply);
    }
    if (auto r = w::decode_report(data, size)) round_trip(*r, w::decode_report);
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto t = rocewatch::token_from_hex(text))
        FUZZ_CHECK(rocewatch::token_from_hex(rocewatch::token_to_hex(*t)) == t);
    return 0;
}
