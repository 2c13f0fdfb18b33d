// liblldpctl, loaded the first time the daemon talks to lldpd, not at start. A node where
// lldpd does not run (no socket) or a daemon told --lldpd-socket "" never maps liblldpctl or
// the libbsd it brings: linked, the two cost ~0.16 MiB of every daemon's PSS.
//
// As tls/openssl.hpp does for OpenSSL: each function the client calls is a pointer in
// lldp::fn, of the function's own type, filled from liblldpctl.so.4 (lldpd 1.0's ABI; Debian 12
// ships it in the lldpd package itself) by load_lldpctl(). A file that calls liblldpctl says RW_USING_LLDPCTL inside
// its namespace: the calls, and the liblldpctl macros that expand to calls
// (lldpctl_last_strerror is lldpctl_strerror(lldpctl_last_error(c)), lldpctl_atom_foreach
// the iterator functions and lldpctl_atom_dec_ref), then find these pointers before the
// library's own declarations. The daemon does not link liblldpctl, so a function missing from
// the list below fails the link instead of loading the library at start.
#pragma once

#include <lldpctl.h>

#include <optional>
#include <string>

#define RW_LLDPCTL_FUNCTIONS(X) \
    X(lldpctl_atom_dec_ref)     \
    X(lldpctl_atom_get)         \
    X(lldpctl_atom_get_int)     \
    X(lldpctl_atom_get_str)     \
    X(lldpctl_atom_iter)        \
    X(lldpctl_atom_iter_next)   \
    X(lldpctl_atom_iter_value)  \
    X(lldpctl_get_interfaces)   \
    X(lldpctl_get_port)         \
    X(lldpctl_last_error)       \
    X(lldpctl_new_name)         \
    X(lldpctl_release)          \
    X(lldpctl_strerror)

namespace rocewatch::lldp {

// Loads liblldpctl.so.4 and fills lldp::fn, once; any thread, any number of times. nullopt
// when the library is there, else why not ("liblldpctl.so.4 not found (it comes with lldpd):
// " and the dynamic loader's words). Call it before any of the functions, once lldpd is there
// to talk to.
[[nodiscard]] std::optional<std::string> load_lldpctl();

namespace fn {
#define RW_LLDPCTL_POINTER(name) inline decltype(&::name) name = nullptr;
RW_LLDPCTL_FUNCTIONS(RW_LLDPCTL_POINTER)
#undef RW_LLDPCTL_POINTER
}  // namespace fn

}  // namespace rocewatch::lldp

#define RW_LLDPCTL_USING_ONE(name) using ::rocewatch::lldp::fn::name;
#define RW_USING_LLDPCTL RW_LLDPCTL_FUNCTIONS(RW_LLDPCTL_USING_ONE)
