// dlopen of liblldpctl.so.4 and dlsym of every function the LLDP client calls.
#include "daemon/lldp/lldpctl_loader.hpp"

#include <dlfcn.h>

#include <mutex>

namespace rocewatch::lldp {

std::optional<std::string> load_lldpctl() {
    static std::once_flag once;
    static std::optional<std::string> error;
    std::call_once(once, [] {
        // RTLD_NODELETE: the pointers stay good for the life of the process. liblldpctl
        // brings libbsd with it.
        void* h = ::dlopen("liblldpctl.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!h) {
            const char* why = ::dlerror();
            error = std::string("liblldpctl.so.4 not found (install liblldpctl4): ") +
                    (why ? why : "cannot load liblldpctl.so.4");
            return;
        }
#define RW_LLDPCTL_LOOKUP(name)                                                                                        \
    if (!error) {                                                                                                      \
        if (void* sym = ::dlsym(h, #name))                                                                             \
            fn::name = reinterpret_cast<decltype(&::name)>(sym);                                                       \
        else                                                                                                           \
            error = std::string("liblldpctl.so.4 has no ") + #name + ": not the liblldpctl this daemon was built for"; \
    }
        RW_LLDPCTL_FUNCTIONS(RW_LLDPCTL_LOOKUP)
#undef RW_LLDPCTL_LOOKUP
    });
    return error;
}

}  // namespace rocewatch::lldp
