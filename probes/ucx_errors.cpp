// UCX statuses in the probes' words, mapped in one place.
#include "probes/ucx_errors.hpp"

#include "probes/errors.hpp"

namespace rocewatch {

const char* reason_from_ucs_status(ucs_status_t status) {
    switch (status) {
        case UCS_OK:
        case UCS_INPROGRESS: return "";
        // The transport could not reach the peer, or gave up on it (keepalive).
        case UCS_ERR_UNREACHABLE:
        case UCS_ERR_SOME_CONNECTS_FAILED:
        case UCS_ERR_ENDPOINT_TIMEOUT: return reason::peer_unreachable;
        case UCS_ERR_REJECTED: return reason::connection_refused;
        // The peer went away mid-probe: its sockets reset, our requests were flushed.
        case UCS_ERR_CONNECTION_RESET:
        case UCS_ERR_NOT_CONNECTED:
        case UCS_ERR_CANCELED: return reason::peer_closed;
        case UCS_ERR_TIMED_OUT: return reason::timeout;
        case UCS_ERR_BUSY: return reason::peer_busy;
        case UCS_ERR_NO_DEVICE:
        case UCS_ERR_NO_ELEM: return reason::device_not_found;
        case UCS_ERR_NO_MEMORY:
        case UCS_ERR_NO_RESOURCE:
        case UCS_ERR_EXCEEDS_LIMIT:
        case UCS_ERR_OUT_OF_RANGE: return reason::local_resources;
        case UCS_ERR_INVALID_PARAM:
        case UCS_ERR_INVALID_ADDR:
        case UCS_ERR_UNSUPPORTED:
        case UCS_ERR_NOT_IMPLEMENTED: return reason::bad_target;
        case UCS_ERR_MESSAGE_TRUNCATED: return reason::protocol_error;
        case UCS_ERR_IO_ERROR: return reason::socket_error;
        default:
            // Link and endpoint failure ranges: the path to the peer broke.
            if (UCS_IS_LINK_ERROR(status) || UCS_IS_ENDPOINT_ERROR(status)) return reason::peer_unreachable;
            return reason::internal_error;
    }
}

UcxStatus ucx_failure(const std::string& what, ucs_status_t st) {
    if (st == UCS_OK || st == UCS_INPROGRESS) st = UCS_ERR_IO_ERROR;
    return UcxStatus{reason_from_ucs_status(st), what + ": " + ucs_status_string(st)};
}

}  // namespace rocewatch
