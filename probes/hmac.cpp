// nettle's HMAC-SHA256 through dlopen: three functions, found by their exported names (nettle's
// header renames hmac_sha256_* to nettle_hmac_sha256_* with macros).
#include "probes/hmac.hpp"

#include <nettle/hmac.h>

#include "util/shared_library.hpp"

namespace rocewatch {

namespace {

struct Nettle {
    decltype(&::nettle_hmac_sha256_set_key) set_key = nullptr;
    decltype(&::nettle_hmac_sha256_update) update = nullptr;
    decltype(&::nettle_hmac_sha256_digest) digest = nullptr;
    std::optional<std::string> error;
};

const Nettle& nettle() {
    static const Nettle n = [] {
        Nettle out;
        SharedLibrary lib("libnettle.so.8", "the TCP probes' handshake needs nettle (Debian's libnettle8)",
                          "the nettle 3");
        lib.find(out.set_key, "nettle_hmac_sha256_set_key");
        lib.find(out.update, "nettle_hmac_sha256_update");
        lib.find(out.digest, "nettle_hmac_sha256_digest");
        out.error = lib.error();
        return out;
    }();
    return n;
}

}  // namespace

std::optional<std::string> load_hmac() { return nettle().error; }

std::optional<Sha256Digest> hmac_sha256(std::span<const uint8_t> key,
                                        std::initializer_list<std::span<const uint8_t>> parts) {
    const Nettle& n = nettle();
    if (n.error) return std::nullopt;
    hmac_sha256_ctx ctx{};
    n.set_key(&ctx, key.size(), key.data());
    for (const auto& p : parts) n.update(&ctx, p.size(), p.data());
    Sha256Digest out{};
    n.digest(&ctx, out.size(), out.data());
    return out;
}

}  // namespace rocewatch
