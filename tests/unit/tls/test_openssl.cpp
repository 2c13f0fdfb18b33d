// OpenSSL loaded on first use: every function the daemon calls is found in libssl.so.3 and
// works through its pointer.
#include <gtest/gtest.h>

#include <string>

#include "tls/openssl.hpp"

namespace rocewatch {
namespace {

RW_USING_OPENSSL

TEST(OpenSsl, LoadsOnceAndFindsEveryFunction) {
    EXPECT_EQ(tls::load_openssl(), std::nullopt);
    EXPECT_EQ(tls::load_openssl(), std::nullopt) << "a second call is the first's answer";
#define RW_EXPECT_FOUND(name) EXPECT_NE(tls::fn::name, nullptr) << #name;
    RW_OPENSSL_FUNCTIONS(RW_EXPECT_FOUND)
#undef RW_EXPECT_FOUND
}

TEST(OpenSsl, CallsGoThroughThePointers) {
    ASSERT_EQ(tls::load_openssl(), std::nullopt);
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>("abc"), 3, md);  // tls::fn::SHA256, by RW_USING_OPENSSL
    std::string hex;
    for (unsigned char b : md) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
    EXPECT_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2's example
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION), 1) << "a macro, through SSL_CTX_ctrl's pointer";
    SSL_CTX_free(ctx);
}

}  // namespace
}  // namespace rocewatch
