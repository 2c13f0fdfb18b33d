// basic_auth_users of the web config: bcrypt hashes checked with libcrypt, good answers cached.
#pragma once

#include <map>
#include <mutex>
#include <optional>
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
    // by its SHA-256, as the exporter toolkit does, so a scraper pays it once.
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

// libcrypt's verdict on `password` against a bcrypt `hash` (pure; slow by design).
bool bcrypt_matches(const std::string& password, const std::string& hash);

}  // namespace rocewatch::api
