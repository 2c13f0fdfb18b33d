// Parses the exporter toolkit's web config format with libyaml's event parser into a small tree
// of its own; every error names file, line and key.
#include "api/web_config.hpp"

#include <yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <string_view>

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

// A boolean's spellings, yaml-cpp's and also Go's yaml.v2's (the exporter toolkit's) for YAML 1.1:
// y, yes, true, on, n, no, false, off, each in lower case, Capitalized or UPPER case.
constexpr std::array kBools = {
    NamedValue<bool>{"y", true},      NamedValue<bool>{"yes", true},  NamedValue<bool>{"true", true},
    NamedValue<bool>{"on", true},     NamedValue<bool>{"n", false},   NamedValue<bool>{"no", false},
    NamedValue<bool>{"false", false}, NamedValue<bool>{"off", false},
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

// The YAML of a web config as the Parser below reads it: a node is null, a scalar, a sequence or
// a mapping, with the 0-based line it starts on. Built from libyaml's events rather than with its
// document loader, which has no bound on nesting (each level costs heap in the loader).
struct YamlNode {
    enum class Kind : std::uint8_t { null, scalar, sequence, mapping };
    Kind kind = Kind::null;
    std::size_t line = 0;
    std::string text;                    // a scalar's value
    std::vector<const YamlNode*> items;  // a sequence's items; a mapping's keys and values, alternating
};

// A valid web config nests 4 deep (the top mapping, tls_server_config, cipher_suites, a suite);
// deeper is refused before it costs anything (yaml-cpp stopped at 2000 levels).
constexpr std::size_t kMaxDepth = 32;

// libyaml's C objects, freed on every path.
class YamlParser {
public:
    YamlParser() : ok_(yaml_parser_initialize(&p_) != 0) {}
    ~YamlParser() {
        if (ok_) yaml_parser_delete(&p_);
    }
    YamlParser(const YamlParser&) = delete;
    YamlParser& operator=(const YamlParser&) = delete;
    bool ok() const { return ok_; }
    yaml_parser_t* get() { return &p_; }

private:
    yaml_parser_t p_{};
    bool ok_;
};

class YamlEvent {
public:
    YamlEvent() = default;
    ~YamlEvent() { yaml_event_delete(&e_); }
    YamlEvent(const YamlEvent&) = delete;
    YamlEvent& operator=(const YamlEvent&) = delete;
    yaml_event_t* get() { return &e_; }
    const yaml_event_t* operator->() const { return &e_; }

private:
    yaml_event_t e_{};
};

// The first document of a YAML text as YamlNodes (a second one is ignored, as yaml-cpp's Load
// and Go's yaml.Unmarshal ignore it). An alias is the node its anchor names, shared, not copied:
// an alias bomb costs one pointer an alias. An anchor is usable once its node is complete, so an
// alias never points into the node that contains it, and the tree has no cycles.
class YamlTree {
public:
    YamlTree(const std::string& text, const std::string& path) : path_(path) {
        YamlParser parser;
        if (!parser.ok()) throw WebConfigError(path_ + ": out of memory reading the YAML");
        yaml_parser_set_input_string(parser.get(), reinterpret_cast<const unsigned char*>(text.data()), text.size());
        struct Open {
            YamlNode* node;
            std::string anchor;
        };
        std::vector<Open> open;
        std::map<std::string, const YamlNode*, std::less<>> anchors;
        const auto place = [&](const YamlNode* n) {
            if (open.empty())
                root_ = n;
            else
                open.back().node->items.push_back(n);
        };
        for (bool done = false; !done;) {
            YamlEvent e;
            if (!yaml_parser_parse(parser.get(), e.get())) syntax_error(*parser.get(), text);
            switch (e->type) {
                case YAML_SCALAR_EVENT: {
                    const auto& s = e->data.scalar;
                    YamlNode& n = nodes_.emplace_back();
                    n.line = e->start_mark.line;
                    n.text.assign(reinterpret_cast<const char*>(s.value), s.length);
                    // yaml-cpp's and Go's nulls: a plain scalar without a tag that is empty, ~ or null.
                    const bool null = s.style == YAML_PLAIN_SCALAR_STYLE && s.tag == nullptr &&
                                      (n.text.empty() || n.text == "~" || n.text == "null" || n.text == "Null" ||
                                       n.text == "NULL");
                    n.kind = null ? YamlNode::Kind::null : YamlNode::Kind::scalar;
                    if (s.anchor) anchors[reinterpret_cast<const char*>(s.anchor)] = &n;
                    place(&n);
                    break;
                }
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT: {
                    if (open.size() == kMaxDepth)
                        throw WebConfigError(path_ + ":" + std::to_string(e->start_mark.line + 1) +
                                             ": nested deeper than " + std::to_string(kMaxDepth) +
                                             " levels (a web config needs 4)");
                    const bool seq = e->type == YAML_SEQUENCE_START_EVENT;
                    YamlNode& n = nodes_.emplace_back();
                    n.kind = seq ? YamlNode::Kind::sequence : YamlNode::Kind::mapping;
                    n.line = e->start_mark.line;
                    const yaml_char_t* anchor = seq ? e->data.sequence_start.anchor : e->data.mapping_start.anchor;
                    place(&n);
                    open.push_back({&n, anchor ? reinterpret_cast<const char*>(anchor) : ""});
                    break;
                }
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                    if (!open.back().anchor.empty()) anchors[open.back().anchor] = open.back().node;
                    open.pop_back();
                    break;
                case YAML_ALIAS_EVENT: {
                    const std::string_view name(reinterpret_cast<const char*>(e->data.alias.anchor));
                    const auto it = anchors.find(name);
                    if (it == anchors.end())
                        throw WebConfigError(path_ + ":" + std::to_string(e->start_mark.line + 1) + ": the alias *" +
                                             std::string(name) + " names no anchor complete before it");
                    place(it->second);
                    break;
                }
                case YAML_DOCUMENT_END_EVENT:
                case YAML_STREAM_END_EVENT: done = true; break;
                default: break;  // the stream's and the document's start
            }
        }
    }

    // Null for an empty text (or only comments).
    const YamlNode* root() const { return root_; }

private:
    // libyaml's problem at its line, and what it was reading when the context says.
    [[noreturn]] void syntax_error(const yaml_parser_t& p, const std::string& text) const {
        if (p.error == YAML_MEMORY_ERROR) throw WebConfigError(path_ + ": out of memory reading the YAML");
        std::string what = p.problem ? p.problem : "not YAML";
        std::size_t line = p.problem_mark.line;
        if (p.error == YAML_READER_ERROR) {
            // A byte that is not UTF-8 or a control character: libyaml gives its offset, not its line.
            const std::size_t at = std::min(p.problem_offset, text.size());
            line = static_cast<std::size_t>(
                std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
            if (p.problem_value != -1) {
                std::array<char, 16> hex{};
                std::snprintf(hex.data(), hex.size(), "0x%02X", static_cast<unsigned>(p.problem_value));
                what += std::string(" (") + hex.data() + ")";
            }
        }
        if (p.context)
            what += std::string(" (") + p.context + " on line " + std::to_string(p.context_mark.line + 1) + ")";
        throw WebConfigError(path_ + ":" + std::to_string(line + 1) + ": " + what);
    }

    std::string path_;
    std::deque<YamlNode> nodes_;  // a deque: the nodes' addresses stay put as it grows
    const YamlNode* root_ = nullptr;
};

class Parser {
public:
    explicit Parser(std::string path) : path_(std::move(path)) {}

    // Keys and values are the file's text: a line break or control character in one (a quoted
    // "a\nb", a plain scalar over two lines) is written escaped, so an error stays one line.
    [[noreturn]] void fail(const YamlNode& at, const std::string& key, const std::string& what) const {
        throw WebConfigError(path_ + ":" + std::to_string(at.line + 1) + ": " + one_line(key) + ": " + one_line(what));
    }

    static std::string one_line(const std::string& s) {
        std::string out;
        for (const char ch : s) {
            const auto b = static_cast<unsigned char>(ch);
            if (ch == '\n') {
                out += "\\n";
            } else if (ch == '\r') {
                out += "\\r";
            } else if ((b < 0x20 && ch != '\t') || b == 0x7f) {
                std::array<char, 8> hex{};
                std::snprintf(hex.data(), hex.size(), "\\x%02x", b);
                out += hex.data();
            } else {
                out += ch;
            }
        }
        return out;
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

    // A mapping's key, which must be a string: not a list, a mapping or null.
    std::string key_of(const YamlNode& k, const std::string& where) const {
        if (k.kind != YamlNode::Kind::scalar) fail(k, where, "a key must be a plain string");
        return k.text;
    }

    // Each key and value of mapping `n` (named `where` in errors), each through each(): f(name,
    // key node, value). A key given twice is refused, as the exporter toolkit's strict Go YAML
    // refuses it (yaml-cpp handed both over: the last won, in basic_auth_users the first).
    template <class F>
    void entries(const YamlNode& n, const std::string& where, F&& f) const {
        std::map<std::string, std::size_t, std::less<>> seen;  // key -> its line
        for (std::size_t i = 0; i + 1 < n.items.size(); i += 2)
            each([&] {
                const YamlNode& k = *n.items[i];
                const std::string name = key_of(k, where);
                const auto [first, fresh] = seen.emplace(name, k.line);
                if (!fresh)
                    fail(k, where == kTop ? name : where + "." + name,
                         "given twice (first on line " + std::to_string(first->second + 1) + ")");
                f(name, k, *n.items[i + 1]);
            });
    }

    std::string scalar(const YamlNode& n, const std::string& key) const {
        if (n.kind != YamlNode::Kind::scalar) fail(n, key, "must be a string");
        return n.text;
    }

    // One of kBools in lower case, Capitalized or UPPER case ("yes", "Yes", "YES"; quoted too).
    bool boolean(const YamlNode& n, const std::string& key) const {
        if (n.kind == YamlNode::Kind::scalar && !n.text.empty()) {
            std::string lower = n.text;
            for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            std::string capitalized = lower;
            capitalized[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(capitalized[0])));
            std::string upper = lower;
            for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
            if (n.text == lower || n.text == capitalized || n.text == upper)
                for (const auto& b : kBools)
                    if (b.name == lower) return b.value;
        }
        fail(n, key, "must be true or false");
    }

    std::string file(const YamlNode& n, const std::string& key) const {
        std::string v = scalar(n, key);
        if (v.empty()) return v;
        std::filesystem::path p(v);
        if (p.is_relative()) p = std::filesystem::path(path_).parent_path() / p;
        return p.lexically_normal().string();
    }

    template <class Table>
    auto pick(const YamlNode& n, const std::string& key, const Table& t) const {
        const std::string v = scalar(n, key);
        for (const auto& e : t)
            if (e.name == v) return e;
        fail(n, key, "\"" + v + "\" is not one of " + names_of(t));
    }

    std::vector<std::string> list(const YamlNode& n, const std::string& key, const auto& table) const {
        if (n.kind != YamlNode::Kind::sequence) fail(n, key, "must be a list");
        std::vector<std::string> out;
        for (const YamlNode* item : n.items) out.emplace_back(pick(*item, key, table).value);
        return out;
    }

    TlsServerConfig tls(const YamlNode& n) const {
        TlsServerConfig t;
        if (n.kind == YamlNode::Kind::null) return t;
        if (n.kind != YamlNode::Kind::mapping) fail(n, "tls_server_config", "must be a mapping");
        bool auth_set = false;
        const size_t errors_before = errors_.size();
        entries(n, "tls_server_config", [&](const std::string& k, const YamlNode& kn, const YamlNode& v) {
            const std::string key = "tls_server_config." + k;
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
                fail(kn, key,
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

    void http_server(const YamlNode& n, WebConfig& c) const {
        if (n.kind == YamlNode::Kind::null) return;
        if (n.kind != YamlNode::Kind::mapping) fail(n, "http_server_config", "must be a mapping");
        entries(n, "http_server_config", [&](const std::string& k, const YamlNode& kn, const YamlNode& v) {
            const std::string key = "http_server_config." + k;
            if (k == "http2") {
                (void)boolean(v, key);  // rocewatch serves HTTP/1.1 only; clients fall back to it
            } else if (k == "headers") {
                if (v.kind == YamlNode::Kind::null) return;
                if (v.kind != YamlNode::Kind::mapping) fail(v, key, "must be a mapping of header to value");
                std::map<std::string, std::size_t, std::less<>> seen;
                for (std::size_t i = 0; i + 1 < v.items.size(); i += 2) {
                    const YamlNode& hk = *v.items[i];
                    const YamlNode& hv = *v.items[i + 1];
                    const std::string name = key_of(hk, key);
                    const auto known = std::find_if(kHeaders.begin(), kHeaders.end(), [&](std::string_view x) {
                        return x.size() == name.size() &&
                               std::equal(x.begin(), x.end(), name.begin(), [](char a, char b) {
                                   return std::tolower(static_cast<unsigned char>(a)) ==
                                          std::tolower(static_cast<unsigned char>(b));
                               });
                    });
                    if (known == kHeaders.end())
                        fail(hk, key + "." + name,
                             "not a header that may be set here (allowed: Content-Security-Policy, X-Frame-Options, "
                             "X-Content-Type-Options, X-XSS-Protection, Strict-Transport-Security)");
                    // Two spellings of one header are one header given twice.
                    const auto [first, fresh] = seen.emplace(*known, hk.line);
                    if (!fresh)
                        fail(hk, key + "." + name,
                             "given twice (first on line " + std::to_string(first->second + 1) + ")");
                    const std::string value = scalar(hv, key + "." + name);
                    if (value.find_first_of("\r\n") != std::string::npos)
                        fail(hv, key + "." + name, "a header value is one line");
                    c.headers.emplace_back(std::string(*known), value);
                }
            } else {
                fail(kn, key, "unknown key (known: http2, headers)");
            }
        });
    }

    void users(const YamlNode& n, WebConfig& c) const {
        if (n.kind == YamlNode::Kind::null) return;
        if (n.kind != YamlNode::Kind::mapping)
            fail(n, "basic_auth_users", "must be a mapping of user name to bcrypt hash");
        entries(n, "basic_auth_users", [&](const std::string& name, const YamlNode& kn, const YamlNode& v) {
            const std::string key = "basic_auth_users." + name;
            if (name.empty() || name.find(':') != std::string::npos)
                fail(kn, key, "a user name is not empty and has no ':'");
            const std::string hash = scalar(v, key);
            // bcrypt: $2a$, $2b$ or $2y$, a two-digit cost, then 53 characters of salt and hash.
            const bool bcrypt = hash.size() == 60 &&
                                (hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$")) &&
                                hash[6] == '$';
            if (!bcrypt)
                fail(v, key,
                     "is not a bcrypt hash (\"$2y$10$...\", 60 characters; make one with `htpasswd -nBC 10 \"\" | "
                     "tr -d ':\\n'`)");
            c.users.emplace(name, hash);
        });
    }

    WebConfig parse(const std::string& text) const {
        const YamlTree tree(text, path_);
        WebConfig c;
        const YamlNode* root = tree.root();
        if (root == nullptr || root->kind == YamlNode::Kind::null) return c;  // an empty file: plain HTTP, no auth
        if (root->kind != YamlNode::Kind::mapping) fail(*root, kTop, "must be a mapping");
        entries(*root, kTop, [&](const std::string& k, const YamlNode& kn, const YamlNode& v) {
            if (k == "tls_server_config") {
                auto t = tls(v);
                if (!t.cert_file.empty()) c.tls = std::move(t);
            } else if (k == "http_server_config") {
                http_server(v, c);
            } else if (k == "basic_auth_users") {
                users(v, c);
            } else {
                fail(kn, k, "unknown key (known: tls_server_config, http_server_config, basic_auth_users)");
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
    static constexpr const char* kTop = "(top level)";
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
