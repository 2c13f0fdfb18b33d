// dlopen of liblldpctl.so.4 and dlsym of every function the LLDP client calls.
#include "daemon/lldp/lldpctl_loader.hpp"

#include "util/shared_library.hpp"

namespace rocewatch::lldp {

std::optional<std::string> load_lldpctl() {
    // Once, on any thread. liblldpctl brings libbsd with it.
    static const std::optional<std::string> error = [] {
        SharedLibrary lib("liblldpctl.so.4", "liblldpctl.so.4 not found (it comes with lldpd)", "the liblldpctl");
#define RW_LLDPCTL_LOOKUP(name) lib.find(fn::name, #name);
        RW_LLDPCTL_FUNCTIONS(RW_LLDPCTL_LOOKUP)
#undef RW_LLDPCTL_LOOKUP
        return lib.error();
    }();
    return error;
}

}  // namespace rocewatch::lldp
