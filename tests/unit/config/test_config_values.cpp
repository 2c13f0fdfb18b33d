// Config value syntaxes (durations, listen addresses), error text, and the JSON view.
#include <gtest/gtest.h>

#include <algorithm>

#include "daemon/config/config_loader.hpp"
#include "daemon/rules/rules.hpp"

using namespace rocewatch;
using namespace std::chrono_literals;

TEST(ParseDuration, AcceptsEachUnitAndCombinations) {
    EXPECT_EQ(parse_duration("500ms"), Duration(500));
    EXPECT_EQ(parse_duration("5s"), Duration(5s));
    EXPECT_EQ(parse_duration("1m"), Duration(1min));
    EXPECT_EQ(parse_duration("12h"), Duration(12h));
    EXPECT_EQ(parse_duration("1h30m"), Duration(90min));
    EXPECT_EQ(parse_duration("1m30s500ms"), Duration(90500));
    EXPECT_EQ(parse_duration("90s"), Duration(90s)) << "a component may exceed the next unit";
    EXPECT_EQ(parse_duration("0s"), Duration(0));
}

TEST(ParseDuration, RejectsEverythingElse) {
    for (const char* bad : {"",
                            "5",
                            "s",
                            "5 s",
                            " 5s",
                            "5s ",
                            "-5s",
                            "+5s",
                            "1.5s",
                            "5S",
                            "5sec",
                            "1d",
                            "30m1h",
                            "1s1s",
                            "1m1m",
                            "5s5ms5s",
                            "0",
                            "0ms",
                            "0m",
                            "0h0s",
                            "ms",
                            "99999999999999999999s",
                            "9223372036854775807h"})
        EXPECT_FALSE(parse_duration(bad)) << '"' << bad << '"';
}

TEST(FormatDuration, IsTheShortestSpellingAndRoundTrips) {
    EXPECT_EQ(format_duration(Duration(0)), "0s");
    EXPECT_EQ(format_duration(Duration(500)), "500ms");
    EXPECT_EQ(format_duration(Duration(5s)), "5s");
    EXPECT_EQ(format_duration(Duration(90min)), "1h30m");
    EXPECT_EQ(format_duration(Duration(90500)), "1m30s500ms");
    for (int64_t ms : {1LL, 999LL, 1000LL, 61'001LL, 3'600'000LL, 86'400'000LL, 3'723'004LL})
        EXPECT_EQ(parse_duration(format_duration(Duration(ms))), Duration(ms)) << ms;
}

TEST(ParseListenAddress, AcceptsTheDocumentedForms) {
    auto a = parse_listen_address("0.0.0.0:9879");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "0.0.0.0");
    EXPECT_EQ(a->port, 9879);
    a = parse_listen_address(":9879");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "") << "empty host means every address";
    a = parse_listen_address("[::1]:80");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "::1");
    EXPECT_EQ(a->port, 80);
    a = parse_listen_address("[::]:65535");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "::");
    a = parse_listen_address("localhost:1");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "localhost");
    EXPECT_TRUE(parse_listen_address("spark-1.lab.example:9879"));
    EXPECT_TRUE(parse_listen_address("192.168.100.11:9879"));
    a = parse_listen_address("127.0.0.1:0");
    ASSERT_TRUE(a) << "port 0: any free port, for tests";
    EXPECT_EQ(a->port, 0);
}

TEST(ParseListenAddress, RejectsMalformed) {
    for (const char* bad :
         {"", "9879", "0.0.0.0", "0.0.0.0:", ":65536", ":99999999", ":-1", ":80x", "::1:9879", "[::1]", "[::1]9879",
          "[]:80", "[nope]:80", "300.1.1.1:80", "1.2.3:80", "bad host:80", "-lead:80", "trail-:80", "a..b:80"})
        EXPECT_FALSE(parse_listen_address(bad)) << '"' << bad << '"';
}

TEST(ConfigError, FormatsFileLineKeyProblem) {
    EXPECT_EQ((ConfigError{"a.toml", 3, "expect.mtu", "too small"}).to_string(), "a.toml:3: expect.mtu: too small");
    EXPECT_EQ((ConfigError{"a.toml", 0, "expect.mtu", "too small"}).to_string(), "a.toml: expect.mtu: too small");
    EXPECT_EQ((ConfigError{"a.toml", 2, "", "syntax"}).to_string(), "a.toml:2: syntax");
    EXPECT_EQ((ConfigError{"a.toml", 0, "", "cannot read"}).to_string(), "a.toml: cannot read");
}

TEST(ConfigToJson, HasEverySectionWithDefaultsApplied) {
    Config c = default_config();
    c.rules["mtu_low"].severity = Severity::critical;
    auto j = config_to_json(c);
    for (const char* section : {"source", "daemon", "expect", "thresholds", "rules"})
        EXPECT_TRUE(j.contains(section)) << section;
    EXPECT_EQ(j["daemon"]["listen"], "0.0.0.0:9879");
    EXPECT_EQ(j["daemon"]["interval"], "5s");
    EXPECT_EQ(j["daemon"]["http_threads"], 4);
    EXPECT_EQ(j["expect"]["mtu"], 9000);
    EXPECT_TRUE(j["expect"]["port_rate_gbps"].is_null());
    EXPECT_TRUE(j["expect"]["rails"].is_array());
    EXPECT_EQ(j["thresholds"]["flap_window"], "10m");
    EXPECT_EQ(j["thresholds"]["symbol_error_per_hour"], 120.0);
    ASSERT_EQ(j["rules"].size(), all_rule_ids().size()) << "every rule, configured or not";
    EXPECT_EQ(j["rules"]["port_down"]["enabled"], true);
    EXPECT_EQ(j["rules"]["port_down"]["for"], "0s");
    EXPECT_EQ(j["rules"]["port_down"]["clear_after"], "30s");
    EXPECT_TRUE(j["rules"]["port_down"]["severity"].is_null());
    EXPECT_EQ(j["rules"]["mtu_low"]["severity"], "critical");
}

TEST(ConfigToJson, TheTokenFilesPathShowsButNeverAToken) {
    // The config holds the token file's path only; the token (its content) is read by main
    // and never enters the Config, and "probes.token" is redacted should it ever appear.
    Config c = default_config();
    c.probes.token_file = "/etc/rocewatch/token";
    auto j = config_to_json(c);
    EXPECT_EQ(j["probes"]["token_file"], "/etc/rocewatch/token");
    EXPECT_FALSE(j["probes"].contains("token"));
    EXPECT_NE(std::find(secret_key_paths().begin(), secret_key_paths().end(), "probes.token"),
              secret_key_paths().end());
    j["probes"]["token"] = "00ff";
    redact_secrets(j, secret_key_paths());
    EXPECT_EQ(j["probes"]["token"], "<redacted>");
}

TEST(RedactSecrets, ReplacesEachListedPathOnly) {
    nlohmann::json j = {
        {"daemon", {{"listen", ":1"}, {"token", "s3cret"}}},
        {"peers",
         {{"spark-2", {{"address", "10.0.0.2"}, {"token", "t2"}}},
          {"spark-3", {{"address", "10.0.0.3"}, {"token", "t3"}}}}},
        {"expect", {{"mtu", 9000}}},
    };
    redact_secrets(j, {"daemon.token", "peers.*.token", "absent.key", "expect.mtu.deeper"});
    EXPECT_EQ(j["daemon"]["token"], "<redacted>");
    EXPECT_EQ(j["daemon"]["listen"], ":1");
    EXPECT_EQ(j["peers"]["spark-2"]["token"], "<redacted>");
    EXPECT_EQ(j["peers"]["spark-3"]["token"], "<redacted>");
    EXPECT_EQ(j["peers"]["spark-2"]["address"], "10.0.0.2");
    EXPECT_EQ(j["expect"]["mtu"], 9000) << "a path through a scalar changes nothing";
    EXPECT_FALSE(j.contains("absent")) << "a missing path is not created";
}
