// The single place where errno values and peer refusal codes become probe failure reasons.
#include "probes/errors.hpp"

#include <cerrno>
#include <cstring>

namespace rocewatch {

const char* reason_from_errno(int err) {
    switch (err) {
        case 0: return "";
        case ECONNREFUSED: return reason::connection_refused;
        case EHOSTUNREACH:
        case ENETUNREACH:
        case EHOSTDOWN:
        case ENETDOWN:
        case ENONET: return reason::peer_unreachable;
        case ETIMEDOUT:
        case EAGAIN:  // == EWOULDBLOCK: SO_RCVTIMEO/SO_SNDTIMEO ran out
        case EINPROGRESS: return reason::timeout;
        case ECONNRESET:
        case ECONNABORTED:
        case EPIPE:
        case ESHUTDOWN: return reason::peer_closed;
        case EADDRNOTAVAIL:
        case EADDRINUSE:
        case ENODEV:  // SO_BINDTODEVICE to an interface that does not exist
            return reason::local_bind_failed;
        case EPERM:
        case EACCES: return reason::permission_denied;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM: return reason::local_resources;
        case EAFNOSUPPORT:
        case EPROTONOSUPPORT:
        case EDESTADDRREQ: return reason::bad_target;
        default: return reason::socket_error;
    }
}

const char* reason_from_reply_code(tcpwire::Code code) {
    switch (code) {
        case tcpwire::Code::ok: return "";
        case tcpwire::Code::auth_refused: return reason::auth_refused;
        case tcpwire::Code::busy: return reason::peer_busy;
        case tcpwire::Code::bad_request: return reason::bad_target;
        case tcpwire::Code::unsupported_version: return reason::version_mismatch;
        case tcpwire::Code::limit_reached: return reason::peer_closed;
    }
    return reason::protocol_error;
}

const char* reason_from_peer(std::string_view word) {
    // Every word of rocewatch::reason (errors.hpp); a new one is added here too.
    static constexpr const char* kKnown[] = {
        reason::peer_unreachable,  reason::connection_refused,
        reason::timeout,           reason::auth_refused,
        reason::peer_closed,       reason::peer_busy,
        reason::peer_probing_off,  reason::protocol_error,
        reason::version_mismatch,  reason::tls_error,
        reason::bad_target,        reason::unknown_target,
        reason::local_bind_failed, reason::permission_denied,
        reason::local_resources,   reason::no_data,
        reason::socket_error,      reason::internal_error,
        reason::gid_mismatch,      reason::qp_transition_failed,
        reason::device_not_found,  reason::ucx_version_mismatch,
        reason::rdma_no_ack,       reason::rdma_receiver_not_ready,
        reason::rdma_flushed,      reason::rdma_remote_refused,
        reason::local_port_down,
    };
    for (const char* r : kKnown)
        if (word == r) return r;
    return reason::protocol_error;
}

std::string errno_detail(const std::string& what, int err) {
    std::string s = what + ": " + std::strerror(err);
    if (const char* name = strerrorname_np(err)) s += std::string(" (") + name + ")";
    return s;
}

}  // namespace rocewatch
