// Parses the exporter toolkit's web config format with yaml-cpp; every error names file, line and key.
#include "api/web_config.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "util/read_file.hpp"

namespace rocewatch::api {

namespace {

// A name the file uses and the value it stands for.
template <class V>
struct NamedValue {
    std::string_view name;
    V value;
};
using OpenSslName = NamedValue<std::string_view>;  // Go's name -> OpenSSL's

// Go's names of the TLS 1.2 suites crypto/tls implements, and OpenSSL's for them (TLS 1.3
// suites are not configurable, in Go as here).
constexpr std::array kCipherSuites = {
    OpenSslName{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    OpenSslName{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    OpenSslName{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    OpenSslName{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    OpenSslName{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    OpenSslName{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    OpenSslName{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
    OpenSslName{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    OpenSslName{"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    OpenSslName{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    OpenSslName{"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    OpenSslName{"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    OpenSslName{"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    OpenSslName{"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    OpenSslName{"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    OpenSslName{"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
};

constexpr std::array kCurves = {
    OpenSslName{"CurveP256", "P-256"},
    OpenSslName{"CurveP384", "P-384"},
    OpenSslName{"CurveP521", "P-521"},
    OpenSslName{"X25519", "X25519"},
};

constexpr std::array kClientAuth = {
    NamedValue<ClientAuth>{"NoClientCert", ClientAuth::none},
    NamedValue<ClientAuth>{"RequestClientCert", ClientAuth::request},
    NamedValue<ClientAuth>{"RequireAnyClientCert", ClientAuth::require_any},
    NamedValue<ClientAuth>{"VerifyClientCertIfGiven", ClientAuth::verify_if_given},
    NamedValue<ClientAuth>{"RequireAndVerifyClientCert", ClientAuth::require_and_verify},
};
constexpr std::array kVersions = {
    NamedValue<TlsVersion>{"TLS10", TlsVersion::tls10},
    NamedValue<TlsVersion>{"TLS11", TlsVersion::tls11},
    NamedValue<TlsVersion>{"TLS12", TlsVersion::tls12},
    NamedValue<TlsVersion>{"TLS13", TlsVersion::tls13},
};

// The headers the exporter toolkit lets an operator set; others would fight the daemon's own.
constexpr std::array<std::string_view, 5> kHeaders = {"Content-Security-Policy", "X-Frame-Options",
                                                      "X-Content-Type-Options", "X-XSS-Protection",
                                                      "Strict-Transport-Security"};

template <class Table>
std::string names_of(const Table& t) {
    std::string out;
    for (const auto& e : t) out += (out.empty() ? "" : ", ") + std::string(e.name);
    return out;
}

class Parser {
public:
    explicit Parser(std::string path) : path_(std::move(path)) {}

    [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what) const {
        const auto m = at.Mark();
        throw WebConfigError(path_ + ":" + (m.is_null() ? std::string("1") : std::to_string(m.line + 1)) + ": " + key +
                             ": " + what);
    }

    // Runs one key's check; its error is kept and the next key is checked, so that a file with
    // several mistakes is told all of them at once, as the TOML config is.
    template <class F>
    void each(F&& check) const {
        try {
            check();
        } catch (const WebConfigError& e) {
            errors_.emplace_back(e.what());
        }
    }

    // A mapping's key, which must be a plain string (a list or a mapping as a key made yaml-cpp
    // throw its own "bad conversion", without file or key).
    std::string key_of(const YAML::Node& k, const std::string& where) const {
        if (!k.IsScalar()) fail(k, where, "a key must be a plain string");
        return k.as<std::string>();
    }

    std::string scalar(const YAML::Node& n, const std::string& key) const {
        if (!n.IsScalar()) fail(n, key, "must be a string");
        return n.as<std::string>();
    }

    bool boolean(const YAML::Node& n, const std::string& key) const {
        bool v = false;
        if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) fail(n, key, "must be true or false");
        return v;
    }

    std::string file(const YAML::Node& n, const std::string& key) const {
        std::string v = scalar(n, key);
        if (v.empty()) return v;
        std::filesystem::path p(v);
        if (p.is_relative()) p = std::filesystem::path(path_).parent_path() / p;
        return p.lexically_normal().string();
    }

    template <class Table>
    auto pick(const YAML::Node& n, const std::string& key, const Table& t) const {
        const std::string v = scalar(n, key);
        for (const auto& e : t)
            if (e.name == v) return e;
        fail(n, key, "\"" + v + "\" is not one of " + names_of(t));
    }

    std::vector<std::string> list(const YAML::Node& n, const std::string& key, const auto& table) const {
        if (!n.IsSequence()) fail(n, key, "must be a list");
        std::vector<std::string> out;
        for (const auto& item : n) out.emplace_back(pick(item, key, table).value);
        return out;
    }

    TlsServerConfig tls(const YAML::Node& n) const {
        TlsServerConfig t;
        if (n.IsNull()) return t;
        if (!n.IsMap()) fail(n, "tls_server_config", "must be a mapping");
        bool auth_set = false;
        const size_t errors_before = errors_.size();
        for (const auto& kv : n)
            each([&] {
                const std::string k = key_of(kv.first, "tls_server_config");
                const std::string key = "tls_server_config." + k;
                const auto& v = kv.second;
                if (k == "cert_file")
                    t.cert_file = file(v, key);
                else if (k == "key_file")
                    t.key_file = file(v, key);
                else if (k == "client_ca_file")
                    t.client_ca_file = file(v, key);
                else if (k == "client_auth_type") {
                    const std::string s = scalar(v, key);
                    if (!s.empty()) {
                        t.client_auth = pick(v, key, kClientAuth).value;
                        auth_set = true;
                    }
                } else if (k == "min_version")
                    t.min_version = pick(v, key, kVersions).value;
                else if (k == "max_version")
                    t.max_version = pick(v, key, kVersions).value;
                else if (k == "cipher_suites")
                    t.cipher_suites = list(v, key, kCipherSuites);
                else if (k == "curve_preferences")
                    t.curves = list(v, key, kCurves);
                else if (k == "prefer_server_cipher_suites")
                    t.prefer_server_cipher_suites = boolean(v, key);
                else
                    fail(kv.first, key,
                         "unknown key (known: cert_file, key_file, client_ca_file, client_auth_type, min_version, "
                         "max_version, cipher_suites, curve_preferences, prefer_server_cipher_suites)");
            });
        // The checks across keys judge only keys that were read.
        if (errors_.size() != errors_before) return t;
        if (t.cert_file.empty() != t.key_file.empty())
            fail(n, "tls_server_config",
                 t.cert_file.empty() ? "key_file is set but cert_file is not" : "cert_file is set but key_file is not");
        const bool verifies = t.client_auth == ClientAuth::verify_if_given ||
                              t.client_auth == ClientAuth::require_and_verify;
        if (verifies && t.client_ca_file.empty())
            fail(n, "tls_server_config.client_ca_file", "client_auth_type verifies client certificates: name the CA");
        if (!t.client_ca_file.empty() && !auth_set)
            fail(n, "tls_server_config.client_auth_type",
                 "client_ca_file is set: say how clients are checked (e.g. RequireAndVerifyClientCert)");
        if (t.min_version > t.max_version) fail(n, "tls_server_config.min_version", "is above max_version");
        return t;
    }

    void http_server(const YAML::Node& n, WebConfig& c) const {
        if (n.IsNull()) return;
        if (!n.IsMap()) fail(n, "http_server_config", "must be a mapping");
        for (const auto& kv : n)
            each([&] {
                const std::string k = key_of(kv.first, "http_server_config");
                const std::string key = "http_server_config." + k;
                if (k == "http2") {
                    (void)boolean(kv.second, key);  // rocewatch serves HTTP/1.1 only; clients fall back to it
                } else if (k == "headers") {
                    if (kv.second.IsNull()) return;
                    if (!kv.second.IsMap()) fail(kv.second, key, "must be a mapping of header to value");
                    for (const auto& h : kv.second) {
                        const std::string name = key_of(h.first, key);
                        const auto known = std::find_if(kHeaders.begin(), kHeaders.end(), [&](std::string_view x) {
                            return x.size() == name.size() &&
                                   std::equal(x.begin(), x.end(), name.begin(), [](char a, char b) {
                                       return std::tolower(static_cast<unsigned char>(a)) ==
                                              std::tolower(static_cast<unsigned char>(b));
                                   });
                        });
                        if (known == kHeaders.end())
                            fail(
                                h.first, key + "." + name,
                                "not a header that may be set here (allowed: Content-Security-Policy, X-Frame-Options, "
                                "X-Content-Type-Options, X-XSS-Protection, Strict-Transport-Security)");
                        const std::string value = scalar(h.second, key + "." + name);
                        if (value.find_first_of("\r\n") != std::string::npos)
                            fail(h.second, key + "." + name, "a header value is one line");
                        c.headers.emplace_back(std::string(*known), value);
                    }
                } else {
                    fail(kv.first, key, "unknown key (known: http2, headers)");
                }
            });
    }

    void users(const YAML::Node& n, WebConfig& c) const {
        if (n.IsNull()) return;
        if (!n.IsMap()) fail(n, "basic_auth_users", "must be a mapping of user name to bcrypt hash");
        for (const auto& kv : n)
            each([&] {
                const std::string name = key_of(kv.first, "basic_auth_users");
                const std::string key = "basic_auth_users." + name;
                if (name.empty() || name.find(':') != std::string::npos)
                    fail(kv.first, key, "a user name is not empty and has no ':'");
                const std::string hash = scalar(kv.second, key);
                // bcrypt: $2a$, $2b$ or $2y$, a two-digit cost, then 53 characters of salt and hash.
                const bool bcrypt = hash.size() == 60 &&
                                    (hash.starts_with("$2a$") || hash.starts_with("$2b$") ||
                                     hash.starts_with("$2y$")) &&
                                    hash[6] == '$';
                if (!bcrypt)
                    fail(kv.second, key,
                         "is not a bcrypt hash (\"$2y$10$...\", 60 characters; make one with `htpasswd -nBC 10 \"\" | "
                         "tr -d ':\\n'`)");
                c.users.emplace(name, hash);
            });
    }

    WebConfig parse(const std::string& text) const {
        YAML::Node root;
        try {
            root = YAML::Load(text);
        } catch (const YAML::Exception& e) {
            throw WebConfigError(path_ + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
        }
        WebConfig c;
        if (root.IsNull()) return c;  // an empty file: plain HTTP, no auth
        if (!root.IsMap()) fail(root, "(top level)", "must be a mapping");
        for (const auto& kv : root)
            each([&] {
                const std::string k = key_of(kv.first, "(top level)");
                if (k == "tls_server_config") {
                    auto t = tls(kv.second);
                    if (!t.cert_file.empty()) c.tls = std::move(t);
                } else if (k == "http_server_config") {
                    http_server(kv.second, c);
                } else if (k == "basic_auth_users") {
                    users(kv.second, c);
                } else {
                    fail(kv.first, k, "unknown key (known: tls_server_config, http_server_config, basic_auth_users)");
                }
            });
        if (!errors_.empty()) {
            std::string all;
            for (const auto& e : errors_) all += (all.empty() ? "" : "\n") + e;
            throw WebConfigError(all);
        }
        return c;
    }

private:
    std::string path_;
    mutable std::vector<std::string> errors_;  // one a key, in file order
};

}  // namespace

WebConfig parse_web_config(const std::string& text, const std::string& path) { return Parser(path).parse(text); }

WebConfig load_web_config(const std::string& path) {
    // A web config is a few lines; 1 MiB bounds a mistaken path.
    const auto file = read_small_file(path, 1 << 20);
    if (!file.ok) throw WebConfigError(path + ": the web config file: " + file.error);
    return parse_web_config(file.text, path);
}

std::vector<std::string> referenced_files(const WebConfig& c) {
    std::vector<std::string> out;
    if (!c.tls) return out;
    out.push_back(c.tls->cert_file);
    out.push_back(c.tls->key_file);
    if (!c.tls->client_ca_file.empty()) out.push_back(c.tls->client_ca_file);
    return out;
}

}  // namespace rocewatch::api
