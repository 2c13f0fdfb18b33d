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

std::string errno_detail(const std::string& what, int err) {
    std::string s = what + ": " + std::strerror(err);
    if (const char* name = strerrorname_np(err)) s += std::string(" (") + name + ")";
    return s;
}

}  // namespace rocewatch
