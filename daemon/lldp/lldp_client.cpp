#include "daemon/lldp/lldp_client.hpp"

#include <cerrno>
#include <cstring>

#ifdef ROCEWATCH_HAVE_LLDPCTL
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/lldp/lldpctl_loader.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#endif

namespace rocewatch {

#ifndef ROCEWATCH_HAVE_LLDPCTL

bool lldp_supported() { return false; }

LldpAnswer read_lldp(const std::string&, std::chrono::milliseconds) {
    return LldpAnswer{.error = "rocewatchd was built without liblldpctl (liblldpctl-dev)"};
}

#else

// liblldpctl through the pointers lldp::load_lldpctl() fills (daemon/lldp/lldpctl_loader.hpp).
RW_USING_LLDPCTL

namespace {

// The socket and the time left, for liblldpctl's send and receive callbacks.
struct Io {
    int fd = -1;
    SteadyClock::time_point deadline;
    std::string why;  // set by a callback that gave up
};

bool wait_for(Io& io, short events) {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(io.deadline - SteadyClock::now()).count();
        if (left <= 0) {
            io.why = "lldpd did not answer in time";
            return false;
        }
        pollfd p{io.fd, events, 0};
        const int rc = ::poll(&p, 1, static_cast<int>(left));
        if (rc > 0) return true;
        if (rc < 0 && errno != EINTR) {
            io.why = std::string("poll: ") + std::strerror(errno);
            return false;
        }
    }
}

ssize_t io_send(lldpctl_conn_t*, const uint8_t* data, size_t length, void* user) {
    auto& io = *static_cast<Io*>(user);
    size_t off = 0;
    while (off < length) {
        if (!wait_for(io, POLLOUT)) return LLDPCTL_ERR_CALLBACK_FAILURE;
        const ssize_t n = ::send(io.fd, data + off, length - off, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n < 0) {
            io.why = std::string("send: ") + std::strerror(errno);
            return LLDPCTL_ERR_CALLBACK_FAILURE;
        }
        off += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(length);
}

// Whatever has arrived, up to `length`: liblldpctl asks again until a message is whole.
ssize_t io_recv(lldpctl_conn_t*, const uint8_t* data, size_t length, void* user) {
    auto& io = *static_cast<Io*>(user);
    for (;;) {
        if (!wait_for(io, POLLIN)) return LLDPCTL_ERR_CALLBACK_FAILURE;
        const ssize_t n = ::recv(io.fd, const_cast<uint8_t*>(data), length, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n < 0) {
            io.why = std::string("recv: ") + std::strerror(errno);
            return LLDPCTL_ERR_CALLBACK_FAILURE;
        }
        return n == 0 ? static_cast<ssize_t>(LLDPCTL_ERR_EOF) : n;
    }
}

std::string str(lldpctl_atom_t* a, lldpctl_key_t key) {
    const char* s = a ? lldpctl_atom_get_str(a, key) : nullptr;
    return s ? s : "";
}

// An integer key lldpd only has where the device sent its TLV: absent when 0 or an error.
std::optional<uint32_t> positive(lldpctl_atom_t* a, lldpctl_key_t key) {
    const long v = lldpctl_atom_get_int(a, key);
    if (v <= 0 || v > 0xffffffffL) return std::nullopt;
    return static_cast<uint32_t>(v);
}

// Each value of a list atom, in order; `fn` returns false to stop. References are released.
template <class Fn>
void for_each_in(lldpctl_atom_t* list, Fn&& fn) {
    if (!list) return;
    for (lldpctl_atom_iter_t* it = lldpctl_atom_iter(list); it; it = lldpctl_atom_iter_next(list, it)) {
        lldpctl_atom_t* v = lldpctl_atom_iter_value(list, it);
        if (!v) break;
        const bool more = fn(v);
        lldpctl_atom_dec_ref(v);
        if (!more) break;
    }
}

LldpNeighbor decode(lldpctl_atom_t* port) {
    LldpNeighbor n;
    n.protocol = str(port, lldpctl_k_port_protocol);
    n.port_id = str(port, lldpctl_k_port_id);
    n.port_id_subtype = str(port, lldpctl_k_port_id_subtype);
    n.port_description = str(port, lldpctl_k_port_descr);
    n.max_frame_size = positive(port, lldpctl_k_port_dot3_mfs);
    n.vlan_id = positive(port, lldpctl_k_port_vlan_pvid);
    if (lldpctl_atom_t* chassis = lldpctl_atom_get(port, lldpctl_k_port_chassis)) {
        n.system_name = str(chassis, lldpctl_k_chassis_name);
        n.chassis_id = str(chassis, lldpctl_k_chassis_id);
        n.chassis_id_subtype = str(chassis, lldpctl_k_chassis_id_subtype);
        lldpctl_atom_t* mgmt = lldpctl_atom_get(chassis, lldpctl_k_chassis_mgmt);
        for_each_in(mgmt, [&](lldpctl_atom_t* m) {
            n.management_address = str(m, lldpctl_k_mgmt_ip);
            return n.management_address.empty();
        });
        if (mgmt) lldpctl_atom_dec_ref(mgmt);
        lldpctl_atom_dec_ref(chassis);
    }
    return n;
}

}  // namespace

bool lldp_supported() { return true; }

LldpAnswer read_lldp(const std::string& socket_path, std::chrono::milliseconds timeout) {
    LldpAnswer out;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path) {
        out.error = "lldpd socket path \"" + socket_path + "\" is empty or too long";
        return out;
    }
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    Io io{.deadline = SteadyClock::now() + timeout};
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) {
        out.error = std::string("socket: ") + std::strerror(errno);
        return out;
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        if (e == ENOENT) {
            out.absent = true;
        } else if (e == EACCES || e == EPERM) {
            out.error = "cannot connect to lldpd at " + socket_path +
                        ": permission denied (rocewatchd needs group _lldpd: SupplementaryGroups=_lldpd)";
        } else if (e == ECONNREFUSED) {
            out.error = "nothing listens on " + socket_path + " (lldpd stopped?)";
        } else {
            out.error = "cannot connect to lldpd at " + socket_path + ": " + std::strerror(e);
        }
        return out;
    }
    // lldpd is there: only now is liblldpctl loaded (once; a node without lldpd never maps it).
    if (auto why = lldp::load_lldpctl()) {
        out.error = std::move(*why);
        return out;
    }
    io.fd = fd.get();
    lldpctl_conn_t* conn = lldpctl_new_name(socket_path.c_str(), io_send, io_recv, &io);
    if (!conn) {
        out.error = "liblldpctl: out of memory";
        return out;
    }
    lldpctl_atom_t* ifaces = lldpctl_get_interfaces(conn);
    if (!ifaces) {
        out.error = io.why.empty() ? "lldpd: " + std::string(lldpctl_last_strerror(conn)) : io.why;
        lldpctl_release(conn);
        return out;
    }
    for_each_in(ifaces, [&](lldpctl_atom_t* iface) {
        const std::string name = str(iface, lldpctl_k_interface_name);
        lldpctl_atom_t* port = lldpctl_get_port(iface);  // one round trip per interface
        if (!port) {
            out.error = io.why.empty() ? "lldpd: " + name + ": " + lldpctl_last_strerror(conn) : io.why;
            return io.why.empty();  // a timeout ends the walk; one bad interface does not
        }
        lldpctl_atom_t* neighbours = lldpctl_atom_get(port, lldpctl_k_port_neighbors);
        uint32_t count = 0;
        for_each_in(neighbours, [&](lldpctl_atom_t* nb) {
            if (count++ == 0) out.by_netdev[name] = decode(nb);
            return true;
        });
        if (count > 0) out.by_netdev[name].neighbours = count;
        if (neighbours) lldpctl_atom_dec_ref(neighbours);
        lldpctl_atom_dec_ref(port);
        return true;
    });
    lldpctl_atom_dec_ref(ifaces);
    lldpctl_release(conn);
    return out;
}

#endif

}  // namespace rocewatch
