// An OpenSSL server context built from the web config's tls_server_config.
#pragma once

#include <memory>
#include <string>

#include "api/web_config.hpp"

typedef struct ssl_ctx_st SSL_CTX;

namespace rocewatch::api {

using SslCtxPtr = std::shared_ptr<SSL_CTX>;

// Loads the certificate chain, the key (checked against the certificate), the client CA
// and the version, suite and curve choices. Throws WebConfigError naming the file and
// OpenSSL's reason when any of it fails.
SslCtxPtr make_server_tls_context(const TlsServerConfig& t, const std::string& web_config_path);

}  // namespace rocewatch::api
