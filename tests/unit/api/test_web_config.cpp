// The exporter toolkit's web config as rocewatch reads it, and basic auth against bcrypt hashes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/basic_auth.hpp"
#include "api/metrics.hpp"
#include "api/web_config.hpp"
#include "api/web_guard.hpp"
#include "util/base64.hpp"

namespace rocewatch::api {
namespace {

// bcrypt (cost 4, the cheapest) of "s3cret", made with Python's crypt module (libxcrypt).
constexpr const char* kHash = "$2b$04$FvUzh/mHLbJuY4vb58ECGenmgs3xYULnT2exrmUT/BnpmPmXZUxwa";

std::string error_of(const std::string& text) {
    try {
        (void)parse_web_config(text, "/etc/rocewatch/web.yml");
    } catch (const WebConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(WebConfig, EmptyFileIsPlainHttpWithoutAuth) {
    const auto c = parse_web_config("", "/etc/rocewatch/web.yml");
    EXPECT_FALSE(c.tls);
    EXPECT_TRUE(c.users.empty());
}

TEST(WebConfig, ReadsTheToolkitFormatAndAnchorsRelativeFilesAtTheConfig) {
    const auto c = parse_web_config(R"(tls_server_config:
  cert_file: tls/node.crt
  key_file: /secure/node.key
  client_ca_file: ca.crt
  client_auth_type: RequireAndVerifyClientCert
  min_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [X25519, CurveP256]
  prefer_server_cipher_suites: false
http_server_config:
  http2: true
  headers:
    strict-transport-security: max-age=3600
basic_auth_users:
  prometheus: ')" + std::string(kHash) + "'\n",
                                    "/etc/rocewatch/web.yml");
    ASSERT_TRUE(c.tls);
    EXPECT_EQ(c.tls->cert_file, "/etc/rocewatch/tls/node.crt");
    EXPECT_EQ(c.tls->key_file, "/secure/node.key");
    EXPECT_EQ(c.tls->client_ca_file, "/etc/rocewatch/ca.crt");
    EXPECT_EQ(c.tls->client_auth, ClientAuth::require_and_verify);
    EXPECT_EQ(c.tls->min_version, TlsVersion::tls13);
    EXPECT_EQ(c.tls->cipher_suites, std::vector<std::string>{"ECDHE-RSA-AES128-GCM-SHA256"});
    EXPECT_EQ(c.tls->curves, (std::vector<std::string>{"X25519", "P-256"}));
    EXPECT_FALSE(c.tls->prefer_server_cipher_suites);
    ASSERT_EQ(c.headers.size(), 1u);
    EXPECT_EQ(c.headers[0].first, "Strict-Transport-Security");  // the canonical spelling
    EXPECT_EQ(c.users.at("prometheus"), kHash);
    EXPECT_EQ(referenced_files(c).size(), 3u);
}

TEST(WebConfig, TlsWithoutCertificateAndKeyIsPlainHttp) {
    EXPECT_FALSE(parse_web_config("tls_server_config:\n  min_version: TLS12\n", "w.yml").tls);
}

TEST(WebConfig, ErrorsNameFileLineAndKey) {
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: a.crt\n  keyfile: a.key\n"),
              "/etc/rocewatch/web.yml:3: tls_server_config.keyfile: unknown key (known: cert_file, key_file, "
              "client_ca_file, client_auth_type, min_version, max_version, cipher_suites, curve_preferences, "
              "prefer_server_cipher_suites)");
    EXPECT_NE(error_of("tls_server_config:\n  cert_file: a.crt\n").find("cert_file is set but key_file is not"),
              std::string::npos);
    EXPECT_NE(error_of("basic_auth_users:\n  alice: hunter2\n")
                  .find("web.yml:2: basic_auth_users.alice: is not a "
                        "bcrypt hash"),
              std::string::npos);
    EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n")
                  .find(":4: tls_server_config.min_version: \"TLS14\" is not one of TLS10, TLS11, TLS12, TLS13"),
              std::string::npos);
    EXPECT_NE(error_of(
                  "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: VerifyClientCertIfGiven\n")
                  .find("tls_server_config.client_ca_file: client_auth_type verifies"),
              std::string::npos);
    EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: ca\n")
                  .find("tls_server_config.client_auth_type: client_ca_file is set"),
              std::string::npos);
    EXPECT_NE(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [RC4]\n")
                  .find("tls_server_config.cipher_suites: \"RC4\" is not one of"),
              std::string::npos);
    EXPECT_NE(error_of("http_server_config:\n  headers:\n    Server: x\n")
                  .find("http_server_config.headers.Server: not a "
                        "header that may be set here"),
              std::string::npos);
    EXPECT_NE(error_of("basic_auth_users: [alice]\n").find("basic_auth_users: must be a mapping"), std::string::npos);
    EXPECT_NE(error_of("web:\n  x: 1\n").find("web.yml:1: web: unknown key"), std::string::npos);
    EXPECT_NE(error_of("tls_server_config: [unclosed\n").find("/etc/rocewatch/web.yml:"), std::string::npos);
    // A list or a mapping as a key: yaml-cpp's "bad conversion" escaped, without file or key.
    EXPECT_EQ(error_of("? [a, b]\n: 1\n"), "/etc/rocewatch/web.yml:1: (top level): a key must be a plain string");
    EXPECT_EQ(error_of("basic_auth_users:\n  ? {x: 1}\n  : y\n"),
              "/etc/rocewatch/web.yml:2: basic_auth_users: a key must be a plain string");
    EXPECT_EQ(error_of("http_server_config:\n  headers:\n    ? [X-Frame-Options]\n    : DENY\n"),
              "/etc/rocewatch/web.yml:3: http_server_config.headers: a key must be a plain string");
}

// Every mistake at once, in file order, as the TOML config reports them: fixing one to be told
// of the next cost an operator a restart each.
TEST(WebConfig, EveryErrorIsReportedAtOnce) {
    const std::string all = error_of(
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n  cipher_suites: [RC4]\n"
        "basic_auth_users:\n  alice: hunter2\n  bob: x\n"
        "web:\n  x: 1\n");
    std::vector<std::string> lines;
    for (size_t pos = 0; pos <= all.size();) {
        const size_t nl = std::min(all.find('\n', pos), all.size());
        lines.push_back(all.substr(pos, nl - pos));
        pos = nl + 1;
    }
    const std::vector<std::string> starts = {
        "/etc/rocewatch/web.yml:4: tls_server_config.min_version: \"TLS14\" is not one of",
        "/etc/rocewatch/web.yml:5: tls_server_config.cipher_suites: \"RC4\" is not one of",
        "/etc/rocewatch/web.yml:7: basic_auth_users.alice: is not a bcrypt hash",
        "/etc/rocewatch/web.yml:8: basic_auth_users.bob: is not a bcrypt hash",
        "/etc/rocewatch/web.yml:9: web: unknown key",
    };
    ASSERT_EQ(lines.size(), starts.size()) << all;
    for (size_t i = 0; i < starts.size(); ++i) EXPECT_TRUE(lines[i].starts_with(starts[i])) << lines[i];
    // A key that failed is not judged again by the checks across keys (no "cert_file is set but
    // key_file is not" because key_file was a list).
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: a\n  key_file: [b]\n"),
              "/etc/rocewatch/web.yml:3: tls_server_config.key_file: must be a string");
}

// The YAML itself, as libyaml reads it: its syntax errors at its line, with what it was reading.
TEST(WebConfig, SyntaxErrorsNameLibyamlsLineAndProblem) {
    EXPECT_EQ(error_of("tls_server_config: [unclosed\n"),
              "/etc/rocewatch/web.yml:2: did not find expected ',' or ']' (while parsing a flow sequence on line 1)");
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: a\n key_file: b\n"),
              "/etc/rocewatch/web.yml:3: did not find expected key (while parsing a block mapping on line 1)");
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: 'a.crt\n  key_file: b\n"),
              "/etc/rocewatch/web.yml:4: found unexpected end of stream (while scanning a quoted scalar on line 2)");
    EXPECT_EQ(error_of("tls_server_config:\n\tcert_file: a\n"),
              "/etc/rocewatch/web.yml:2: found character that cannot start any token (while scanning for the next "
              "token on line 2)");
    // Bytes that are not UTF-8, or control characters: libyaml gives an offset, turned into a line.
    EXPECT_EQ(error_of("basic_auth_users:\n# caf\xe9 au lait\n"),
              "/etc/rocewatch/web.yml:2: invalid trailing UTF-8 octet (0x20)");
    EXPECT_EQ(error_of(std::string("basic_auth_users:\n\n  alice: a") + '\0' + "b\n"),
              "/etc/rocewatch/web.yml:3: control characters are not allowed (0x00)");
}

// Empty, comments only, an empty document or a null: plain HTTP, no auth.
TEST(WebConfig, NothingInTheFileIsPlainHttp) {
    for (const char* text : {"# nothing yet\n\n# at all\n", "---\n", "---\n...\n", "~\n", "null\n"}) {
        const auto c = parse_web_config(text, "w.yml");
        EXPECT_FALSE(c.tls) << text;
        EXPECT_TRUE(c.users.empty()) << text;
        EXPECT_TRUE(c.headers.empty()) << text;
    }
    EXPECT_EQ(error_of("plain text\n"), "/etc/rocewatch/web.yml:1: (top level): must be a mapping");
    // A key without a value is null: a section may be empty, a file name may not. The line is the
    // key's (yaml-cpp named the line of whatever came next).
    EXPECT_FALSE(parse_web_config("tls_server_config:\nhttp_server_config:\nbasic_auth_users:\n", "w.yml").tls);
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file:\n\n  key_file: b\n"),
              "/etc/rocewatch/web.yml:2: tls_server_config.cert_file: must be a string");
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: ''\n  key_file: b\n"),
              "/etc/rocewatch/web.yml:2: tls_server_config: key_file is set but cert_file is not");
    EXPECT_EQ(error_of("~: x\n"), "/etc/rocewatch/web.yml:1: (top level): a key must be a plain string");
}

// yaml-cpp's spellings of a boolean, which are also the exporter toolkit's (Go's yaml.v2).
TEST(WebConfig, BooleansAreSpelledAsInYamlOnePointOne) {
    const auto prefer = [](const std::string& v) {
        return parse_web_config("tls_server_config:\n  cert_file: a\n  key_file: b\n  prefer_server_cipher_suites: " +
                                    v + "\n",
                                "w.yml")
            .tls->prefer_server_cipher_suites;
    };
    for (const char* t : {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "'yes'"})
        EXPECT_TRUE(prefer(t)) << t;
    for (const char* f : {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "\"off\""})
        EXPECT_FALSE(prefer(f)) << f;
    for (const char* bad : {"yEs", "tRUE", "1", "0", "t", "''", "~", "[true]"})
        EXPECT_EQ(error_of(std::string("http_server_config:\n  http2: ") + bad + "\n"),
                  "/etc/rocewatch/web.yml:2: http_server_config.http2: must be true or false")
            << bad;
}

// Go's yaml.v2 (the toolkit reads its file strictly) refuses a key given twice; yaml-cpp handed
// both over, and the last one won, or in basic_auth_users the first.
TEST(WebConfig, AKeyGivenTwiceIsAnError) {
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  cert_file: c\n"),
              "/etc/rocewatch/web.yml:4: tls_server_config.cert_file: given twice (first on line 2)");
    EXPECT_EQ(error_of("basic_auth_users:\n  alice: '" + std::string(kHash) + "'\n  alice: x\n"),
              "/etc/rocewatch/web.yml:3: basic_auth_users.alice: given twice (first on line 2)");
    EXPECT_EQ(error_of("basic_auth_users:\nhttp_server_config:\nbasic_auth_users:\n"),
              "/etc/rocewatch/web.yml:3: basic_auth_users: given twice (first on line 1)");
    // Header names are case-insensitive: two spellings are one header twice.
    EXPECT_EQ(error_of("http_server_config:\n  headers:\n    X-Frame-Options: DENY\n    x-frame-options: SAMEORIGIN\n"),
              "/etc/rocewatch/web.yml:4: http_server_config.headers.x-frame-options: given twice (first on line 3)");
}

// An alias is its anchor's node, shared (as in yaml-cpp): errors name the anchor's line.
TEST(WebConfig, AliasesAreTheirAnchorsNode) {
    const auto c = parse_web_config("basic_auth_users:\n  alice: &h '" + std::string(kHash) + "'\n  bob: *h\n",
                                    "w.yml");
    EXPECT_EQ(c.users.size(), 2u);
    EXPECT_EQ(c.users.at("bob"), kHash);
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: &s [TLS13]\n"
                       "  curve_preferences: *s\n"),
              "/etc/rocewatch/web.yml:4: tls_server_config.cipher_suites: \"TLS13\" is not one of "
              "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "
              "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "
              "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "
              "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "
              "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, "
              "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, "
              "TLS_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_256_GCM_SHA384, TLS_RSA_WITH_AES_128_CBC_SHA, "
              "TLS_RSA_WITH_AES_256_CBC_SHA\n"
              "/etc/rocewatch/web.yml:4: tls_server_config.curve_preferences: \"TLS13\" is not one of CurveP256, "
              "CurveP384, CurveP521, X25519");
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: *nope\n"),
              "/etc/rocewatch/web.yml:2: the alias *nope names no anchor complete before it");
    // An anchor is usable once its node is complete: no node contains itself.
    EXPECT_EQ(error_of("tls_server_config: &t\n  cert_file: *t\n"),
              "/etc/rocewatch/web.yml:2: the alias *t names no anchor complete before it");
    EXPECT_EQ(error_of("basic_auth_users:\n  ? &k [a]\n  : x\n  ? *k\n  : y\n"),
              "/etc/rocewatch/web.yml:2: basic_auth_users: a key must be a plain string\n"
              "/etc/rocewatch/web.yml:2: basic_auth_users: a key must be a plain string");
    // A billion laughs: 10^30 strings if aliases were copied; shared, it is 30 small lists. The first
    // item of *a29 is the list *a28, defined on line 29.
    std::string bomb = "x: &a0 [a, a, a, a, a, a, a, a, a, a]\n";
    for (int i = 1; i < 30; ++i) {
        bomb += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
        for (int j = 0; j < 10; ++j) bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
        bomb += "]\n";
    }
    bomb += "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: *a29\n";
    const std::string all = error_of(bomb);
    EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 30) << all;
    EXPECT_NE(all.find("web.yml:29: tls_server_config.cipher_suites: must be a string"), std::string::npos) << all;
}

// A web config nests 4 deep; 32 levels are allowed, more are refused before they cost memory
// (1 MiB of '[' made yaml-cpp take 250 MB to say "bad file").
TEST(WebConfig, DeepNestingIsRefused) {
    const auto nested = [](int depth) { return "x: " + std::string(depth, '[') + std::string(depth, ']') + "\n"; };
    EXPECT_EQ(error_of(nested(31)).find("x: unknown key"), 26u) << error_of(nested(31));
    EXPECT_EQ(error_of(nested(32)), "/etc/rocewatch/web.yml:1: nested deeper than 32 levels (a web config needs 4)");
    EXPECT_EQ(error_of(std::string((1 << 20) - 1, '[')),
              "/etc/rocewatch/web.yml:1: nested deeper than 32 levels (a web config needs 4)");
    std::string block;
    for (int i = 0; i < 40; ++i) block += std::string(2 * i, ' ') + "a:\n";
    EXPECT_EQ(error_of(block), "/etc/rocewatch/web.yml:33: nested deeper than 32 levels (a web config needs 4)");
}

// A key or value with a line break or a control character is echoed escaped: one error a line.
TEST(WebConfig, ErrorsStayOneLineWhateverTheTextHolds) {
    EXPECT_EQ(error_of("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: \"TLS\\n1\\e3\"\n"),
              "/etc/rocewatch/web.yml:4: tls_server_config.min_version: \"TLS\\n1\\x1b3\" is not one of TLS10, "
              "TLS11, TLS12, TLS13");
    EXPECT_EQ(error_of("{a\n\n b}\n"),
              "/etc/rocewatch/web.yml:1: a\\nb: unknown key (known: tls_server_config, http_server_config, "
              "basic_auth_users)");
}

// A stream of documents: the first is the config, as for yaml-cpp's Load and the toolkit's
// yaml.Unmarshal; what follows it is not read.
TEST(WebConfig, OnlyTheFirstDocumentIsRead) {
    const auto c = parse_web_config("---\nbasic_auth_users:\n  alice: '" + std::string(kHash) +
                                        "'\n---\nweb: 1\n---\n[unclosed\n",
                                    "w.yml");
    EXPECT_EQ(c.users.size(), 1u);
    EXPECT_EQ(error_of("---\nweb: 1\n---\nbasic_auth_users:\n"),
              "/etc/rocewatch/web.yml:2: web: unknown key (known: tls_server_config, http_server_config, "
              "basic_auth_users)");
    EXPECT_TRUE(parse_web_config("basic_auth_users:\n...\nweb: 1\n", "w.yml").users.empty());
}

std::string basic(const std::string& user_colon_password) { return "Basic " + base64_encode(user_colon_password); }

// libcrypt is not linked (api/basic_auth.hpp): crypt_rn is found in libcrypt.so.1 on first use.
TEST(BasicAuth, LibcryptLoadsOnFirstUse) {
    EXPECT_EQ(load_libcrypt(), std::nullopt);
    EXPECT_EQ(load_libcrypt(), std::nullopt) << "a second call is the first's answer";
    EXPECT_TRUE(bcrypt_matches("s3cret", kHash)) << "crypt_rn, through its pointer";
}

TEST(BasicAuth, BcryptHashesDecide) {
    EXPECT_TRUE(bcrypt_matches("s3cret", kHash));
    EXPECT_FALSE(bcrypt_matches("s3creT", kHash));
    EXPECT_FALSE(bcrypt_matches("s3cret", "not a hash"));
    // crypt() would stop at the NUL and check "s3cret"; Go's bcrypt hashes every byte.
    EXPECT_FALSE(bcrypt_matches(std::string("s3cret\0zzzz", 11), kHash));
    const BasicAuth auth(std::map<std::string, std::string>{{"prometheus", kHash}});
    EXPECT_FALSE(auth.check(basic(std::string("prometheus:s3cret\0zzzz", 22))));
}

TEST(BasicAuth, KnownUserWithTheRightPasswordOnly) {
    const BasicAuth auth(std::map<std::string, std::string>{{"prometheus", kHash}});
    EXPECT_TRUE(auth.enabled());
    EXPECT_EQ(auth.check(basic("prometheus:s3cret")), "prometheus");
    EXPECT_EQ(auth.check(basic("prometheus:s3cret")), "prometheus");  // the cached verdict agrees
    EXPECT_FALSE(auth.check(basic("prometheus:wrong")));
    EXPECT_FALSE(auth.check(basic("grafana:s3cret")));
    EXPECT_FALSE(auth.check(basic("prometheus")));  // no colon
    EXPECT_FALSE(auth.check("Bearer s3cret"));
    EXPECT_FALSE(auth.check(""));
    EXPECT_FALSE(BasicAuth(std::map<std::string, std::string>{}).enabled());
}

// A reload with the same users keeps what was verified (a certificate rotation must not send
// every scraper through bcrypt and the general lane again); other users start afresh.
TEST(WebGuard, AReloadWithTheSameUsersKeepsTheirVerifiedCredentials) {
    namespace fs = std::filesystem;
    using namespace std::chrono_literals;
    const auto dir = fs::temp_directory_path() / ("rw-webguard-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto path = (dir / "web.yml").string();
    std::ofstream(path) << "basic_auth_users:\n  prometheus: '" << kHash << "'\n";
    WebGuard guard(path, std::make_shared<spdlog::logger>("t"));
    auto t = SteadyClock::now();
    ASSERT_TRUE(guard.current(t)->auth->check(basic("prometheus:s3cret")));
    std::ofstream(path) << "# rotated\nbasic_auth_users:\n  prometheus: '" << kHash << "'\n";
    t += 2s;
    EXPECT_TRUE(guard.current(t)->auth->known(basic("prometheus:s3cret"))) << "the same users: still verified";
    std::ofstream(path) << "basic_auth_users:\n  prometheus: '" << kHash << "'\n  grafana: '" << kHash << "'\n";
    t += 2s;
    const auto st = guard.current(t);
    EXPECT_EQ(st->config.users.size(), 2u) << "reloaded";
    EXPECT_FALSE(st->auth->known(basic("prometheus:s3cret"))) << "other users: verified afresh";
    fs::remove_all(dir);
}

// A refused version (a renewed certificate that does not load, a typo) is seen in /metrics, not
// only in the log: 0 until a good version is in use again, and the time of the one in use.
TEST(WebGuard, ARefusedReloadIsInItsStatusUntilAGoodOneLoads) {
    namespace fs = std::filesystem;
    using namespace std::chrono_literals;
    EXPECT_FALSE(WebGuard("", nullptr).reload_status()) << "no web config, no status";
    const auto dir = fs::temp_directory_path() / ("rw-webguard-status-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto path = (dir / "web.yml").string();
    std::ofstream(path) << "basic_auth_users:\n  prometheus: '" << kHash << "'\n";
    WebGuard guard(path, std::make_shared<spdlog::logger>("t"));
    auto st = guard.reload_status();
    ASSERT_TRUE(st);
    EXPECT_TRUE(st->ok);
    const auto loaded = st->last_success;
    EXPECT_NE(loaded, TimePoint{});
    auto t = SteadyClock::now();
    std::ofstream(path) << "basic_auth_users:\n  prometheus: [not a hash\n";
    t += 2s;
    EXPECT_EQ(guard.current(t)->config.users.size(), 1u) << "the running one stays";
    st = guard.reload_status();
    EXPECT_FALSE(st->ok);
    EXPECT_EQ(st->last_success, loaded);
    HttpStats stats({"/metrics"});
    const std::string text = render_http_metrics(stats, &*st);
    EXPECT_NE(text.find("rocewatch_web_config_last_reload_successful 0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("rocewatch_web_config_last_reload_success_timestamp_seconds "), std::string::npos) << text;
    EXPECT_EQ(render_http_metrics(stats).find("rocewatch_web_config"), std::string::npos) << "none without one";
    std::ofstream(path) << "basic_auth_users:\n  grafana: '" << kHash << "'\n";
    t += 2s;
    EXPECT_TRUE(guard.current(t)->config.users.contains("grafana"));
    st = guard.reload_status();
    EXPECT_TRUE(st->ok);
    EXPECT_GE(st->last_success, loaded);
    fs::remove_all(dir);
}

// known(): verified before, without a bcrypt check of its own (the front end's lane choice).
TEST(BasicAuth, KnownOnlyOnceVerified) {
    const BasicAuth auth(std::map<std::string, std::string>{{"prometheus", kHash}});
    EXPECT_FALSE(auth.known(basic("prometheus:s3cret"))) << "not checked yet";
    EXPECT_FALSE(auth.check(basic("prometheus:wrong")));
    EXPECT_FALSE(auth.known(basic("prometheus:wrong")));
    EXPECT_TRUE(auth.check(basic("prometheus:s3cret")));
    EXPECT_TRUE(auth.known(basic("prometheus:s3cret")));
    EXPECT_FALSE(auth.known(basic("prometheus:s3creT")));
    EXPECT_FALSE(auth.known(basic("grafana:s3cret")));
    EXPECT_FALSE(auth.known("Bearer s3cret"));
}

}  // namespace
}  // namespace rocewatch::api
