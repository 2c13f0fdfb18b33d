// Turns a TOML config file into a validated Config, or into every reason it is not one.
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/config.hpp"

namespace rocewatch {

// One thing wrong with a config file, precise enough to fix without reading the code.
struct ConfigError {
    std::string file;
    int line = 0;     // 1-based; 0 when the problem has no line (unreadable file)
    std::string key;  // dotted: "expect.mtu", "rules.mtu_low.for"; "" for syntax errors
    std::string problem;

    // "file:line: key: problem"; the line and the key are left out where they are unknown.
    std::string to_string() const;
};

// Either a config (and no errors) or the errors (and no config): a file with one bad key
// is rejected whole, so a typo never runs with a half-applied config.
struct ConfigResult {
    std::optional<Config> config;
    std::vector<ConfigError> errors;  // in file order
};

// Parses and validates TOML text. Every error found is reported, not just the first; a
// TOML syntax error stops parsing, so it comes alone. source_name names the text in
// errors and becomes Config::source.
[[nodiscard]] ConfigResult parse_config(std::string_view text, const std::string& source_name);

// Reads and parses a file; an unreadable file is one error naming it.
// A FIFO (or the pipe of `--config <(...)`) gets `fifo_wait` to come to its end: one nobody
// writes to, or whose writer stalls, is an error, not a daemon waiting forever.
[[nodiscard]] ConfigResult load_config_file(const std::string& path,
                                            std::chrono::milliseconds fifo_wait = std::chrono::seconds(10));

// Settings given on the command line; each replaces the file's value (flags win).
struct ConfigOverrides {
    std::optional<std::string> listen;           // --listen (port 0 allowed: any free port)
    std::optional<std::string> sysfs_root;       // --sysfs-root
    std::optional<std::string> procfs_root;      // --procfs-root
    std::optional<std::string> lldpd_socket;     // --lldpd-socket ("" switches it off)
    std::optional<std::string> state_dir;        // --state-dir
    std::optional<std::string> log_level;        // --log-level
    std::optional<std::string> web_config_file;  // --web-config-file ("" switches it off)
};

// The file at `path` (the built-in defaults when nullopt) with the overrides laid over it,
// each held to the rules of its key; a bad one is an error naming the flag
// ("command line: --listen: ...") and the result has no config.
[[nodiscard]] ConfigResult load_config(const std::optional<std::string>& path, const ConfigOverrides& overrides);

// What a reload may not change in a running daemon (the listen address, the web config file,
// the state directory, the probe data port and token file): where `next` differs from
// `running`, the running value is put back and the key is named in next.restart_pending,
// "probes.data_port: 9881 in the file, 9880 running" (`running` holds the values of the start).
void keep_start_only(Config& next, const Config& running);

// The built-in defaults (those of model/config.hpp), with an empty source.
[[nodiscard]] Config default_config();

// "500ms", "5s", "1m", "12h", "1h30m": whole numbers, units ms/s/m/h from largest to
// smallest, each at most once. The result is > 0; the one way to write zero is "0s".
[[nodiscard]] std::optional<Duration> parse_duration(std::string_view s);

// The inverse of parse_duration: the shortest spelling ("1h30m", "500ms", "0s").
[[nodiscard]] std::string format_duration(Duration d);

// A latency limit: whole microseconds, milliseconds or seconds ("20us", "2ms", "1s"), above zero.
[[nodiscard]] std::optional<LatencyLimit> parse_latency(std::string_view s);
// The inverse of parse_latency: the largest unit that spells it whole.
[[nodiscard]] std::string format_latency(LatencyLimit d);

// A listen address split for the HTTP server. host is "" for ":port" (every address) and
// has its brackets removed for "[v6]:port".
struct ListenAddress {
    std::string host;
    uint16_t port = 0;
};

// Accepts "host:port", "[v6]:port", ":port", "0.0.0.0:9879"; port 0..65535, where 0 asks
// for any free port (tests on the command line). The config file's listen needs 1..65535.
[[nodiscard]] std::optional<ListenAddress> parse_listen_address(std::string_view s);

// The effective config as JSON, with every default applied (every rule id appears under
// "rules") and secrets replaced by "<redacted>". Keys are spelled as in the TOML file.
[[nodiscard]] nlohmann::json config_to_json(const Config& c);

// Dotted key paths config_to_json redacts; "*" matches any one key (e.g. "peers.*.token").
const std::vector<std::string>& secret_key_paths();

// Replaces the value at each path that is present in j by "<redacted>". Exposed so tests
// can check the mechanism before any real secret exists.
void redact_secrets(nlohmann::json& j, const std::vector<std::string>& paths);

}  // namespace rocewatch
