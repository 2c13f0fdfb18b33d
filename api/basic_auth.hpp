// basic_auth_users of the web config: bcrypt hashes checked with libcrypt, good answers cached.
//
// libxcrypt is loaded the first time a password is checked, not at start, as OpenSSL is
// (tls/openssl.hpp): linked, libcrypt.so.1 cost every daemon ~80 KiB of PSS, basic auth or
// not. The one function called, crypt_rn, is a pointer of its own type filled by dlsym; the
// daemon does not link libcrypt, so a direct call fails the link.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>

namespace rocewatch::api {

class BasicAuth {
public:
    // `users`: name -> bcrypt hash, as parse_web_config checked them.
    explicit BasicAuth(std::map<std::string, std::string> users);

    bool enabled() const { return !users_.empty(); }

    // The user an `Authorization: Basic ...` header proves, or nullopt. An unknown user
    // costs a bcrypt check too, so timing does not tell which names exist. A bcrypt check
    // costs tens of milliseconds by design; a verified (user, password, hash) is remembered
    // by its SHA-256, as the exporter toolkit does, so a scraper pays it once. Throws
    // LibcryptMissing when there are credentials to check and libcrypt cannot be loaded.
    std::optional<std::string> check(std::string_view authorization_header) const;

    // Whether the header's credentials were verified already (no bcrypt: a SHA-256 and a
    // lookup). The front end gives the lane reserved for scrapes only to these, so a flood of
    // wrong passwords, each a bcrypt check on a worker, cannot take it from a scraper.
    bool known(std::string_view authorization_header) const;

private:
    std::map<std::string, std::string> users_;
    mutable std::mutex mu_;
    mutable std::unordered_set<std::string> verified_;  // SHA-256 of user, password, hash
};

// Loads libcrypt.so.1 (libxcrypt's ABI, Debian's libcrypt1) and finds crypt_rn, once; any
// thread, any number of times. nullopt when it is there, else why not.
[[nodiscard]] std::optional<std::string> load_libcrypt();

// No verdict on a password: libcrypt cannot be loaded (load_libcrypt's words). A server fault
// (500), not a wrong password: a 401 would send the client to fix credentials that may be right.
struct LibcryptMissing : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// libcrypt's verdict on `password` against a bcrypt `hash` (pure; slow by design). Loads
// libcrypt on first use; throws LibcryptMissing when it cannot.
bool bcrypt_matches(const std::string& password, const std::string& hash);

}  // namespace rocewatch::api
