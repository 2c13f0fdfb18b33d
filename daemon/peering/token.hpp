// Where the peer-probing token comes from: the configured token file, else the systemd
// credential the shipped unit loads (LoadCredential=rocewatch-peer-token, from
// /etc/credstore/). The unit runs under DynamicUser, so a root-only token file elsewhere is
// unreadable to it, and a world-readable one is a secret any local user could use: the
// credential is how a token reaches the daemon and nobody else.
#pragma once

#include <optional>
#include <string>

#include "probes/tcp_wire.hpp"

namespace rocewatch {

inline constexpr const char* kTokenCredential = "rocewatch-peer-token";

struct TokenLookup {
    std::optional<ProbeToken> token;
    std::string source;  // the file it was read from
    std::string why;     // when there is no token: why, in words an operator can act on
};

// token_file: [probes] token_file ("" when not set). credentials_dir: $CREDENTIALS_DIRECTORY
// ("" when not under systemd or without credentials). The file holds 64 hex digits;
// surrounding whitespace is ignored.
TokenLookup find_probe_token(const std::string& token_file, const std::string& credentials_dir);

}  // namespace rocewatch
