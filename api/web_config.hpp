// The web config file: TLS and basic auth for the whole HTTP port, in the format of the
// Prometheus exporter toolkit's --web.config.file, so Prometheus' tls_config/basic_auth work.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rocewatch::api {

// Go's tls.ClientAuthType, by the names the exporter toolkit accepts.
enum class ClientAuth {
    none,                // NoClientCert (the default)
    request,             // RequestClientCert: asked for, not required, not verified
    require_any,         // RequireAnyClientCert: required, not verified
    verify_if_given,     // VerifyClientCertIfGiven: verified against client_ca_file when sent
    require_and_verify,  // RequireAndVerifyClientCert: required and verified
};

enum class TlsVersion { tls10, tls11, tls12, tls13 };

struct TlsServerConfig {
    std::string cert_file;  // absolute: relative paths resolve against the web config's directory
    std::string key_file;
    std::string client_ca_file;
    ClientAuth client_auth = ClientAuth::none;
    TlsVersion min_version = TlsVersion::tls12;
    TlsVersion max_version = TlsVersion::tls13;
    std::vector<std::string> cipher_suites;  // OpenSSL names of Go's TLS 1.2 suites; empty = OpenSSL's defaults
    std::vector<std::string> curves;         // OpenSSL group names; empty = OpenSSL's defaults
    bool prefer_server_cipher_suites = true;
};

struct WebConfig {
    std::optional<TlsServerConfig> tls;                        // unset: plain HTTP
    std::map<std::string, std::string> users;                  // basic_auth_users: name -> bcrypt hash; empty: no auth
    std::vector<std::pair<std::string, std::string>> headers;  // http_server_config.headers, on every answer
};

// Thrown with "<path>:<line>: <key>: <what is wrong>".
class WebConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Pure: parses `text`, the content of the file at `path` (named in errors; its directory
// anchors relative file names). Unknown keys are errors, as in the exporter toolkit.
WebConfig parse_web_config(const std::string& text, const std::string& path);

// Reads and parses the file; WebConfigError also when it cannot be read.
WebConfig load_web_config(const std::string& path);

// The files a config names (cert, key, client CA), for change detection.
std::vector<std::string> referenced_files(const WebConfig& c);

}  // namespace rocewatch::api
