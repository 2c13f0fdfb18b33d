// OpenSSL, loaded the first time something asks for it, not at start. A daemon without TLS
// (no tls_server_config, peers over plain HTTP) and without basic auth never maps libssl or
// libcrypto: linked, the two cost 1.7 MiB of every daemon's PSS, most of it the relocations
// and symbol lookups of a library it never calls (issue 14's memory goal).
//
// Each function the daemon calls is a pointer in tls::fn, of the function's own type, filled
// from libssl.so.3 (OpenSSL 3's ABI, which libssl3 keeps) by load_openssl(). A file that
// calls OpenSSL says RW_USING_OPENSSL inside its namespace: the calls, and the OpenSSL macros
// that expand to calls (SSL_CTX_set_mode is SSL_CTX_ctrl), then find these pointers before
// the library's own declarations. The daemon does not link libssl, so a function missing
// from the list below fails the link instead of loading the library at start.
#pragma once

#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <optional>
#include <string>
#include <string_view>

#define RW_OPENSSL_FUNCTIONS(X)           \
    X(BIO_ctrl)                           \
    X(BIO_ctrl_pending)                   \
    X(BIO_free)                           \
    X(BIO_new)                            \
    X(BIO_read)                           \
    X(BIO_s_mem)                          \
    X(BIO_write)                          \
    X(ERR_clear_error)                    \
    X(ERR_error_string_n)                 \
    X(ERR_get_error)                      \
    X(ERR_peek_error)                     \
    X(ERR_peek_last_error)                \
    X(SHA256)                             \
    X(SSL_CTX_check_private_key)          \
    X(SSL_CTX_ctrl)                       \
    X(SSL_CTX_free)                       \
    X(SSL_CTX_load_verify_locations)      \
    X(SSL_CTX_new)                        \
    X(SSL_CTX_set_cipher_list)            \
    X(SSL_CTX_set_client_CA_list)         \
    X(SSL_CTX_set_default_verify_paths)   \
    X(SSL_CTX_set_options)                \
    X(SSL_CTX_set_session_id_context)     \
    X(SSL_CTX_set_verify)                 \
    X(SSL_CTX_use_PrivateKey_file)        \
    X(SSL_CTX_use_certificate_chain_file) \
    X(SSL_ctrl)                           \
    X(SSL_do_handshake)                   \
    X(SSL_free)                           \
    X(SSL_get0_param)                     \
    X(SSL_get_error)                      \
    X(SSL_get_verify_result)              \
    X(SSL_is_init_finished)               \
    X(SSL_load_client_CA_file)            \
    X(SSL_new)                            \
    X(SSL_pending)                        \
    X(SSL_read)                           \
    X(SSL_set1_host)                      \
    X(SSL_set_accept_state)               \
    X(SSL_set_bio)                        \
    X(SSL_set_connect_state)              \
    X(SSL_set_fd)                         \
    X(SSL_set_options)                    \
    X(SSL_shutdown)                       \
    X(SSL_write)                          \
    X(TLS_client_method)                  \
    X(TLS_server_method)                  \
    X(X509_VERIFY_PARAM_set1_ip_asc)      \
    X(X509_verify_cert_error_string)

namespace rocewatch::tls {

// Loads libssl.so.3 (and with it libcrypto.so.3) and fills tls::fn, once; any thread, any
// number of times. nullopt when OpenSSL is there, else why not (the dynamic loader's words).
// Call it before any of the functions, where TLS or a digest is first asked for.
[[nodiscard]] std::optional<std::string> load_openssl();

// OpenSSL's error queue as one line, emptied: each error in OpenSSL's own words
// ("error:0A000086:SSL routines::certificate verify failed"), joined by "; "; `fallback` when
// the queue holds nothing. Only once load_openssl() has succeeded.
[[nodiscard]] std::string openssl_errors(std::string_view fallback = "unknown OpenSSL error");

namespace fn {
#define RW_OPENSSL_POINTER(name) inline decltype(&::name) name = nullptr;
RW_OPENSSL_FUNCTIONS(RW_OPENSSL_POINTER)
#undef RW_OPENSSL_POINTER
}  // namespace fn

}  // namespace rocewatch::tls

#define RW_OPENSSL_USING_ONE(name) using ::rocewatch::tls::fn::name;
#define RW_USING_OPENSSL RW_OPENSSL_FUNCTIONS(RW_OPENSSL_USING_ONE)
