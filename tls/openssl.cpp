// dlopen of libssl.so.3 and dlsym of every function the daemon calls.
#include "tls/openssl.hpp"

#include "util/shared_library.hpp"

namespace rocewatch::tls {

std::optional<std::string> load_openssl() {
    // Once, on any thread. libssl brings libcrypto with it, and its handle finds libcrypto's
    // functions too.
    static const std::optional<std::string> error = [] {
        SharedLibrary lib("libssl.so.3", "TLS needs OpenSSL 3 (Debian's libssl3)", "the OpenSSL 3");
#define RW_OPENSSL_LOOKUP(name) lib.find(fn::name, #name);
        RW_OPENSSL_FUNCTIONS(RW_OPENSSL_LOOKUP)
#undef RW_OPENSSL_LOOKUP
        return lib.error();
    }();
    return error;
}

std::string openssl_errors(std::string_view fallback) {
    std::string out;
    while (const unsigned long e = fn::ERR_get_error()) {
        char buf[256];
        fn::ERR_error_string_n(e, buf, sizeof buf);
        out += (out.empty() ? "" : "; ") + std::string(buf);
    }
    return out.empty() ? std::string(fallback) : out;
}

}  // namespace rocewatch::tls
