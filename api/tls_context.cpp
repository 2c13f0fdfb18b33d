// SSL_CTX from tls_server_config: what Go's crypto/tls does for the exporter toolkit, in OpenSSL.
#include "api/tls_context.hpp"
#include "tls/openssl.hpp"

namespace rocewatch::api {

RW_USING_OPENSSL

namespace {

int openssl_version(TlsVersion v) {
    switch (v) {
        case TlsVersion::tls10: return TLS1_VERSION;
        case TlsVersion::tls11: return TLS1_1_VERSION;
        case TlsVersion::tls12: return TLS1_2_VERSION;
        case TlsVersion::tls13: return TLS1_3_VERSION;
    }
    return TLS1_2_VERSION;
}

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ":") + s;
    return out;
}

// "Any certificate": RequestClientCert and RequireAnyClientCert take what is sent unverified.
int accept_any(int, X509_STORE_CTX*) { return 1; }

}  // namespace

SslCtxPtr make_server_tls_context(const TlsServerConfig& t, const std::string& path) {
    if (auto why = tls::load_openssl()) throw WebConfigError(path + ": tls_server_config: " + *why);
    ERR_clear_error();
    SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
    // Every file and list that does not load is named, not only the first: one --check-config
    // run shows an operator all that is wrong.
    std::string errors;
    auto fail = [&](const std::string& key, const std::string& what) {
        errors += (errors.empty() ? "" : "\n") + path + ": tls_server_config." + key + ": " + what + ": " +
                  tls::openssl_errors();
    };
    if (!ctx) throw WebConfigError(path + ": tls_server_config: cannot make a TLS context: " + tls::openssl_errors());
    SSL_CTX_set_min_proto_version(ctx.get(), openssl_version(t.min_version));
    SSL_CTX_set_max_proto_version(ctx.get(), openssl_version(t.max_version));
    long opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION;
    if (t.prefer_server_cipher_suites) opts |= SSL_OP_CIPHER_SERVER_PREFERENCE;
    SSL_CTX_set_options(ctx.get(), opts);
    // Partial writes and a moving buffer: the front end writes non-blocking from a string
    // that it may grow between retries.
    SSL_CTX_set_mode(ctx.get(),
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    const bool cert = SSL_CTX_use_certificate_chain_file(ctx.get(), t.cert_file.c_str()) == 1;
    if (!cert) fail("cert_file", "cannot load \"" + t.cert_file + "\"");
    // Checked against the certificate only where that loaded: a key is not "not its key"
    // when there is no certificate to hold it to.
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), t.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
            fail("key_file", "\"" + t.key_file + "\" is not the key of \"" + t.cert_file + "\"");
        else
            fail("key_file", "cannot load \"" + t.key_file + "\"");
    } else if (cert && SSL_CTX_check_private_key(ctx.get()) != 1) {
        fail("key_file", "\"" + t.key_file + "\" is not the key of \"" + t.cert_file + "\"");
    }
    if (!t.cipher_suites.empty() && SSL_CTX_set_cipher_list(ctx.get(), joined(t.cipher_suites).c_str()) != 1)
        fail("cipher_suites", "OpenSSL takes none of them");
    if (!t.curves.empty() && SSL_CTX_set1_groups_list(ctx.get(), joined(t.curves).c_str()) != 1)
        fail("curve_preferences", "OpenSSL takes none of them");
    if (!t.client_ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx.get(), t.client_ca_file.c_str(), nullptr) != 1)
            fail("client_ca_file", "cannot load \"" + t.client_ca_file + "\"");
        // The CA names sent in the certificate request, so clients pick the right certificate.
        if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(t.client_ca_file.c_str()))
            SSL_CTX_set_client_CA_list(ctx.get(), names);
    }
    switch (t.client_auth) {
        case ClientAuth::none: SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr); break;
        case ClientAuth::request: SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, accept_any); break;
        case ClientAuth::require_any:
            SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
            break;
        case ClientAuth::verify_if_given: SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr); break;
        case ClientAuth::require_and_verify:
            SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
            break;
    }
    // One context serves every connection; session tickets let a scraper resume cheaply.
    static const unsigned char kSidCtx[] = "rocewatchd";
    SSL_CTX_set_session_id_context(ctx.get(), kSidCtx, sizeof kSidCtx - 1);
    ERR_clear_error();
    if (!errors.empty()) throw WebConfigError(errors);
    return ctx;
}

}  // namespace rocewatch::api
