// A self-signed certificate for tests that serve or check TLS on loopback.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace rocewatch {

// A self-signed P-256 certificate for 127.0.0.1 (its own CA), written as PEM into `dir`:
// node.crt and node.key.
inline void make_certificate(const std::filesystem::path& dir) {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
    std::unique_ptr<X509, decltype(&X509_free)> crt(X509_new(), X509_free);
    if (!key || !crt) throw std::runtime_error("openssl");
    X509_set_version(crt.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(crt.get()), 1);
    X509_gmtime_adj(X509_getm_notBefore(crt.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(crt.get()), 3600);
    X509_set_pubkey(crt.get(), key.get());
    X509_NAME* name = X509_get_subject_name(crt.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1,
                               0);
    X509_set_issuer_name(crt.get(), name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, crt.get(), crt.get(), nullptr, nullptr, 0);
    X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
    X509_add_ext(crt.get(), san, -1);
    X509_EXTENSION_free(san);
    X509_sign(crt.get(), key.get(), EVP_sha256());
    FILE* f = std::fopen((dir / "node.key").c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + (dir / "node.key").string());
    PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    f = std::fopen((dir / "node.crt").c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + (dir / "node.crt").string());
    PEM_write_X509(f, crt.get());
    std::fclose(f);
}

}  // namespace rocewatch
