// The control side of probing: talks to a peer daemon's HTTP port, as the bearer of our token.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/model/config.hpp"
#include "daemon/model/probe.hpp"
#include "probes/session.hpp"

namespace rocewatch::api {

// How peers' daemons are spoken to ([cluster] peer_scheme and the peer_* files).
struct PeerTransport {
    bool https = false;
    std::string ca_file;              // verifies the peer's certificate (name or address as written); "" = system store
    std::string cert_file, key_file;  // our client certificate, where peers require one
};
PeerTransport peer_transport(const ClusterConfig& c);

// GET http://<peer.address>/api/v1/peer/hello with "Authorization: Bearer <token>", within
// the deadline. Never throws: a failure is a PeerState with hello_ok false and hello_error
// one of the probe reasons (peer_unreachable, timeout, auth_refused, protocol_error,
// version_mismatch).
PeerState fetch_hello(const PeerConfig& peer, const std::string& token, std::chrono::steady_clock::time_point deadline,
                      const PeerTransport& transport = {});

// POST the request as JSON to a peer session endpoint (/api/v1/peer/rdma, /api/v1/peer/ucx)
// within the deadline. 200 and 422 (the peer refused: {"reason", "detail"}) come back as
// bodies; 401/403 is auth_refused, 503 peer_busy, anything else a transport reason.
SessionReply post_session(const PeerConfig& peer, const std::string& token, const std::string& path,
                          const nlohmann::json& request, Deadline deadline, const PeerTransport& transport = {});

}  // namespace rocewatch::api
