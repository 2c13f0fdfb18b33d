// Failure reasons of probes, and the one place third-party error codes become reasons.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "daemon/model/probe.hpp"  // kReasonPeerBusy: the verdicts' own word for it
#include "probes/tcp_wire.hpp"

namespace rocewatch::reason {

// The words a failed ProbeResult carries in `reason`: metric label values and alert
// inputs, so short, stable, snake_case. RDMA and UCX probes add theirs here too.
inline constexpr const char* peer_unreachable = "peer_unreachable";      // no route / host down
inline constexpr const char* connection_refused = "connection_refused";  // nothing listens there
inline constexpr const char* timeout = "timeout";                        // deadline passed
inline constexpr const char* auth_refused = "auth_refused";              // peer rejected our token
inline constexpr const char* peer_closed = "peer_closed";                // EOF or reset mid-probe
inline constexpr const char* peer_busy = kReasonPeerBusy;                // peer at its session limit
inline constexpr const char* peer_probing_off = kReasonPeerProbingOff;   // peer has no token
inline constexpr const char* protocol_error = "protocol_error";          // bad magic, short reply
inline constexpr const char* version_mismatch = "version_mismatch";      // peer speaks another version
inline constexpr const char* tls_error = "tls_error";            // TLS to the peer's port failed (scheme, certificate)
inline constexpr const char* bad_target = "bad_target";          // unusable address/settings
inline constexpr const char* unknown_target = "unknown_target";  // GET /probe: no such configured peer/rail
inline constexpr const char* local_bind_failed = "local_bind_failed";  // source address/interface
inline constexpr const char* permission_denied = "permission_denied";
inline constexpr const char* local_resources = "local_resources";  // fds, memory, buffers
inline constexpr const char* no_data = "no_data";                  // nothing reached the peer
inline constexpr const char* socket_error = "socket_error";        // any other errno
inline constexpr const char* internal_error = "internal_error";    // exception caught
// For the RDMA and UCX probes.
inline constexpr const char* gid_mismatch = "gid_mismatch";
inline constexpr const char* qp_transition_failed = "qp_transition_failed";
inline constexpr const char* device_not_found = "device_not_found";
inline constexpr const char* ucx_version_mismatch = "ucx_version_mismatch";
// RDMA work completions, named after what was observed on the wire, not a guess at its cause:
// "transport retry counter exceeded" means no ACK came back from the peer's RDMA port within
// timeout x retry_cnt (the IP path may well work: a missing GID, a crossed rail, a dead port).
inline constexpr const char* rdma_no_ack = "rdma_no_ack";
// RNR retries exhausted: the peer's RDMA port answered, but kept saying "receiver not ready".
inline constexpr const char* rdma_receiver_not_ready = "rdma_receiver_not_ready";
// The QP went to the error state and flushed our work requests (a failure before it, or the
// QP was torn down under them).
inline constexpr const char* rdma_flushed = "rdma_flushed";
// The peer's RDMA port answered and refused the request (rkey, address, size, operation).
inline constexpr const char* rdma_remote_refused = "rdma_remote_refused";
// Our own RDMA port is not ACTIVE: the probe never left this node.
inline constexpr const char* local_port_down = "local_port_down";

}  // namespace rocewatch::reason

namespace rocewatch {

// errno -> reason; the only errno mapping in the probes. 0 maps to "" (no failure).
const char* reason_from_errno(int err);

// A refusal code from the peer's TCP probe data port -> reason ("" for ok).
const char* reason_from_reply_code(tcpwire::Code code);

// The reason word of a peer's refusal of a session (its JSON's "reason") -> ours: one of the
// words above, which the peer's daemon speaks too, or protocol_error for any other. A peer's
// text never becomes a metric label value, nor a word the scheduler acts on ("stopped" drops
// a result, "skipped_budget" keeps the last one).
const char* reason_from_peer(std::string_view word);

// A peer's detail text as a failed result keeps it: at most this many bytes.
inline constexpr size_t kMaxPeerDetail = 512;

// "connect to 10.0.0.2:5201: Connection refused (ECONNREFUSED)": human detail text.
std::string errno_detail(const std::string& what, int err);

}  // namespace rocewatch
