// dlopen of libssl.so.3 and dlsym of every function the daemon calls.
#include "tls/openssl.hpp"

#include <dlfcn.h>

#include <mutex>

namespace rocewatch::tls {

std::optional<std::string> load_openssl() {
    static std::once_flag once;
    static std::optional<std::string> error;
    std::call_once(once, [] {
        // RTLD_NODELETE: the pointers stay good for the life of the process. libssl brings
        // libcrypto with it, and dlsym on libssl's handle finds libcrypto's functions too.
        void* h = ::dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!h) {
            const char* why = ::dlerror();
            error = std::string("TLS needs OpenSSL 3 (Debian's libssl3): ") + (why ? why : "cannot load libssl.so.3");
            return;
        }
#define RW_OPENSSL_LOOKUP(name)                                                                                   \
    if (!error) {                                                                                                 \
        if (void* sym = ::dlsym(h, #name))                                                                        \
            fn::name = reinterpret_cast<decltype(&::name)>(sym);                                                  \
        else                                                                                                      \
            error = std::string("libssl.so.3 has no ") + #name + ": not the OpenSSL 3 this daemon was built for"; \
    }
        RW_OPENSSL_FUNCTIONS(RW_OPENSSL_LOOKUP)
#undef RW_OPENSSL_LOOKUP
    });
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
