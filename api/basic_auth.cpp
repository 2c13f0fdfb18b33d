// Verifies basic auth against bcrypt hashes (libxcrypt's crypt_rn, loaded on first use),
// remembering the good ones.
#include "api/basic_auth.hpp"

#include <crypt.h>

#include <memory>

#include "util/base64.hpp"
#include "util/ct_compare.hpp"
#include "util/shared_library.hpp"
#include "tls/openssl.hpp"

namespace rocewatch::api {

RW_USING_OPENSSL

namespace {

// Filled by load_libcrypt(); the only way the daemon calls crypt_rn.
decltype(&::crypt_rn) crypt_rn_fn = nullptr;

// Checked against when the user is unknown: same cost, never a match (no password hashes to it
// that anyone knows; and its result is discarded anyway).
constexpr const char* kDummyHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

// Cached entries: enough for every scraper and user; past it the cache starts over.
constexpr size_t kMaxVerified = 1024;

// The cache's key: SHA-256 of user, password and hash, so no password is kept. "" where
// OpenSSL cannot be loaded: then nothing is cached, and every request pays its bcrypt.
std::string digest(std::string_view user, std::string_view password, std::string_view hash) {
    if (tls::load_openssl()) return {};
    std::string in;
    in.reserve(user.size() + password.size() + hash.size() + 2);
    in.append(user).push_back('\0');
    in.append(password).push_back('\0');
    in.append(hash);
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(in.data()), in.size(), md);
    return std::string(reinterpret_cast<const char*>(md), sizeof md);
}

}  // namespace

std::optional<std::string> load_libcrypt() {
    static const std::optional<std::string> error = [] {  // once, on any thread
        SharedLibrary lib("libcrypt.so.1", "libcrypt.so.1 not found (install libcrypt1)", "the libxcrypt");
        lib.find(crypt_rn_fn, "crypt_rn");
        return lib.error();
    }();
    return error;
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
    if (auto why = load_libcrypt()) throw LibcryptMissing(*why);
    // crypt() takes a C string, so "secret\0anything" would check as "secret"; Go's bcrypt,
    // which the exporter toolkit uses, hashes every byte and refuses it. No password holds a NUL.
    if (password.find('\0') != std::string::npos) return false;
    auto data = std::make_unique<crypt_data>();
    const char* out = crypt_rn_fn(password.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
    return out && out[0] != '*' && constant_time_equal(std::string_view(out), std::string_view(hash));
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

std::optional<std::string> BasicAuth::check(std::string_view header) const {
    const auto cred = parse_basic_authorization(header);
    if (!cred) return std::nullopt;
    const auto it = users_.find(cred->user);
    if (it == users_.end()) {
        (void)bcrypt_matches(cred->password, kDummyHash);
        return std::nullopt;
    }
    const std::string key = digest(cred->user, cred->password, it->second);
    {
        std::lock_guard lk(mu_);
        if (verified_.contains(key)) return cred->user;
    }
    if (!bcrypt_matches(cred->password, it->second)) return std::nullopt;
    if (key.empty()) return cred->user;
    std::lock_guard lk(mu_);
    if (verified_.size() >= kMaxVerified) verified_.clear();
    verified_.insert(key);
    return cred->user;
}

bool BasicAuth::known(std::string_view header) const {
    const auto cred = parse_basic_authorization(header);
    if (!cred) return false;
    const auto it = users_.find(cred->user);
    if (it == users_.end()) return false;
    const std::string key = digest(cred->user, cred->password, it->second);
    std::lock_guard lk(mu_);
    return !key.empty() && verified_.contains(key);
}

}  // namespace rocewatch::api
