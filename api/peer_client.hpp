// The control side of probing: asks a peer daemon for its hello over its HTTP port.
#pragma once

#include <chrono>
#include <string>

#include "model/config.hpp"
#include "model/probe.hpp"

namespace rocewatch::api {

// GET http://<peer.address>/api/v1/peer/hello with "Authorization: Bearer <token>", within
// the deadline. Never throws: a failure is a PeerState with hello_ok false and hello_error
// one of the probe reasons (peer_unreachable, timeout, auth_refused, protocol_error,
// version_mismatch).
PeerState fetch_hello(const PeerConfig& peer, const std::string& token, std::chrono::steady_clock::time_point deadline);

}  // namespace rocewatch::api
