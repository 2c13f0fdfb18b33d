// Reads TOML into a Config against a schema of known tables and keys, collecting every error.
//
// The only translation unit that includes toml++ (it is heavy to compile). To add a table:
// write its KeySpec list and add one line to kSections.
#include <toml++/toml.h>

#include <algorithm>
#include <type_traits>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <limits>
#include <regex>
#include <span>

#include <arpa/inet.h>

#include "daemon/config/config_internal.hpp"
#include "daemon/config/config_loader.hpp"
#include "daemon/rules/rules.hpp"
#include "daemon/model/probe.hpp"
#include "util/read_file.hpp"
#include "util/http_url.hpp"

namespace rocewatch {

namespace {

// Collection faster than this is sysfs polling for its own sake; below it the daemon would
// mostly measure itself.
constexpr Duration kMinInterval{100};
// A request timeout this short drops clients on any loaded host.
constexpr Duration kMinHttpTimeout{100};
// A flap or counter window under a second spans a few collections at best: a slipped unit,
// not a window anyone means.
constexpr Duration kMinWindow{1000};
// Upper bounds: every duration ends up added to a steady_clock time point in nanoseconds,
// where "2562048h" already overflows (a collector that never sleeps, a rule that fires at
// once). Each bound is far above any value that means something for its key.
constexpr Duration kMaxInterval{std::chrono::hours(1)};
constexpr Duration kMaxHttpTimeout{std::chrono::minutes(5)};
// Trends keep every sample inside a window; a week of samples is already a lot of memory.
constexpr Duration kMaxWindow{std::chrono::hours(24 * 7)};
constexpr Duration kMaxRuleDelay{std::chrono::hours(24 * 7)};
// Bounds the persisted history file and every /history response.
constexpr int64_t kMaxHistory = 1'000'000;
// sockaddr_un's sun_path holds 108 bytes with the terminating NUL.
constexpr size_t kMaxLldpdSocket = 107;
constexpr const char* kLldpdSocketTooLong = " is longer than a Unix socket path can be (107 bytes)";

constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
constexpr int64_t kRoceMtus[] = {256, 512, 1024, 2048, 4096};

class Errors {
public:
    explicit Errors(std::string file) : file_(std::move(file)) {}

    void add(const toml::source_region& where, std::string key, std::string problem) {
        errors_.push_back({file_, static_cast<int>(where.begin.line), std::move(key), std::move(problem)});
    }
    bool empty() const { return errors_.empty(); }

    // In file order: the table walk visits keys alphabetically, a reader goes top-down.
    std::vector<ConfigError> take() {
        std::stable_sort(errors_.begin(), errors_.end(),
                         [](const ConfigError& a, const ConfigError& b) { return a.line < b.line; });
        return std::move(errors_);
    }

private:
    std::string file_;
    std::vector<ConfigError> errors_;
};

// A value quoted in an error, escaped as JSON; a long one only in part (a 900 KB log_level was
// printed whole), cut where it may split a UTF-8 character, which the dump then replaces.
std::string in_quotes(std::string_view s) {
    constexpr size_t kShown = 256;
    const auto quoted = [](std::string_view v) {
        return nlohmann::json(std::string(v)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    if (s.size() <= kShown) return quoted(s);
    return quoted(s.substr(0, kShown)) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string number_text(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

const char* type_name(toml::node_type t) {
    switch (t) {
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a floating-point number";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::table: return "a table";
        case toml::node_type::array: return "an array";
        case toml::node_type::date: return "a date";
        case toml::node_type::time: return "a time";
        case toml::node_type::date_time: return "a date-time";
        case toml::node_type::none: break;
    }
    return "nothing";
}

template <class Range>
std::string joined(const Range& names) {
    std::string out;
    for (const auto& n : names) {
        if (!out.empty()) out += ", ";
        out += n;
    }
    return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// "unknown key; did you mean "listen"? Valid keys: ..." -- the suggestion only when one
// known name is within two edits, since a typo is the usual cause.
template <class Range>
std::string unknown(std::string_view what, std::string_view name, const Range& known, std::string_view valid = {}) {
    std::string_view best;
    size_t best_distance = 3;
    for (const auto& k : known) {
        size_t d = edit_distance(name, k);
        if (d < best_distance) {
            best = k;
            best_distance = d;
        }
    }
    std::string list = valid.empty() ? "valid " + std::string(what) + "s" : std::string(valid);
    std::string out = "unknown " + std::string(what) + "; ";
    if (!best.empty()) {
        out += "did you mean " + in_quotes(best) + "? ";
        list[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(list[0])));
    }
    return out + list + ": " + joined(known);
}

// One value being read: its node, its dotted key, and where to report what is wrong with
// it. Each getter returns nothing after recording an error, so setters stay one line.
class Field {
public:
    Field(const toml::node& node, std::string key, Errors& errors)
        : node_(node), key_(std::move(key)), errors_(errors) {}

    void fail(std::string problem) const { errors_.add(node_.source(), key_, std::move(problem)); }
    // The value as text when it is a string, without recording anything when it is not.
    [[nodiscard]] std::optional<std::string> text_if_string() const { return node_.value_exact<std::string>(); }

    std::optional<std::string> string() const {
        if (auto v = node_.value_exact<std::string>()) return v;
        return wrong_type("a string");
    }

    std::optional<std::string> nonempty_string() const {
        auto v = string();
        if (v && v->empty()) {
            fail("must not be empty");
            return std::nullopt;
        }
        return v;
    }

    std::optional<bool> boolean() const {
        if (auto v = node_.value_exact<bool>()) return v;
        return wrong_type("a boolean (true or false)");
    }

    std::optional<int64_t> integer(int64_t lo, int64_t hi) const {
        auto v = node_.value_exact<int64_t>();
        if (!v) return wrong_type("an integer");
        if (*v < lo || *v > hi) {
            fail(std::to_string(*v) + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
            return std::nullopt;
        }
        return v;
    }

    // An integer or a float, at least lo (above lo when lo is exclusive).
    std::optional<double> number(double lo, bool lo_exclusive = false) const {
        if (!node_.is_integer() && !node_.is_floating_point()) return wrong_type("a number");
        // By hand: toml++ refuses to convert an integer a double cannot hold exactly.
        double v = node_.is_integer() ? static_cast<double>(*node_.value_exact<int64_t>())
                                      : *node_.value_exact<double>();
        if (!std::isfinite(v)) {
            fail(number_text(v) + " is not a finite number");
            return std::nullopt;
        }
        if (v < lo || (lo_exclusive && v == lo)) {
            fail(number_text(v) + " is out of range (must be " + (lo_exclusive ? "> " : ">= ") + number_text(lo) + ")");
            return std::nullopt;
        }
        return v;
    }

    std::optional<Duration> duration(Duration min, Duration max) const {
        auto text = node_.value_exact<std::string>();
        if (!text) return wrong_type("a duration string such as \"5s\"");
        auto d = parse_duration(*text);
        if (!d) {
            fail(in_quotes(*text) + R"( is not a duration (write e.g. "500ms", "5s", "1m", "1h30m"; zero is "0s"))");
            return std::nullopt;
        }
        if (*d < min) {
            fail(format_duration(*d) + " is below the minimum " + format_duration(min));
            return std::nullopt;
        }
        if (*d > max) {
            fail(format_duration(*d) + " is above the maximum " + format_duration(max));
            return std::nullopt;
        }
        return d;
    }

    // A list of RDMA device or netdev names. Each becomes a path component under the sysfs
    // root, so a "/" or ".." could point the daemon outside it.
    std::optional<std::vector<std::string>> names() const {
        const toml::array* arr = node_.as_array();
        if (!arr) return wrong_type("an array of names");
        std::vector<std::string> out;
        bool ok = true;
        for (size_t i = 0; i < arr->size(); ++i) {
            Field item((*arr)[i], key_ + "[" + std::to_string(i) + "]", errors_);
            auto name = item.string();
            if (!name) {
                ok = false;
            } else if (name->empty() || *name == "." || *name == ".." ||
                       name->find_first_of("/ \t\n") != std::string::npos) {
                item.fail(in_quotes(*name) + " is not a device or interface name");
                ok = false;
            } else if (std::ranges::find(out, *name) != out.end()) {
                item.fail(in_quotes(*name) + " is listed twice");
                ok = false;
            } else {
                out.push_back(std::move(*name));
            }
        }
        if (!ok) return std::nullopt;
        return out;
    }

    // A value that must be a table (a sub-table such as [probes.tcp_lat]).
    const toml::table* table() const {
        if (const toml::table* t = node_.as_table()) return t;
        wrong_type("a table");
        return nullptr;
    }
    // A numeric IPv4 or IPv6 address (probes connect and bind without name lookups).
    std::optional<std::string> ip_address() const {
        auto v = string();
        if (!v) return std::nullopt;
        in_addr a4{};
        in6_addr a6{};
        if (inet_pton(AF_INET, v->c_str(), &a4) != 1 && inet_pton(AF_INET6, v->c_str(), &a6) != 1) {
            fail(in_quotes(*v) + " is not a numeric IPv4 or IPv6 address");
            return std::nullopt;
        }
        return v;
    }
    // One device or interface name (same rules as names()).
    std::optional<std::string> name() const {
        auto v = string();
        if (!v) return std::nullopt;
        if (v->empty() || *v == "." || *v == ".." || v->find_first_of("/ \t\n") != std::string::npos) {
            fail(in_quotes(*v) + " is not a device or interface name");
            return std::nullopt;
        }
        return v;
    }
    Errors& errors() const { return errors_; }
    const std::string& key() const { return key_; }
    const toml::node& node() const { return node_; }

private:
    std::nullopt_t wrong_type(std::string_view expected) const {
        fail("expected " + std::string(expected) + ", got " + type_name(node_.type()));
        return std::nullopt;
    }

    const toml::node& node_;
    std::string key_;
    Errors& errors_;
};

// One known key of a table and how it lands in its part of the Config.
template <class Section>
struct KeySpec {
    std::string_view name;
    void (*set)(const Field&, Section&);
};

template <class T, class V>
void assign(T& target, std::optional<V> v) {
    if (v) target = static_cast<T>(std::move(*v));
}

// ---------------------------------------------------------------- the schema

const KeySpec<DaemonConfig> kDaemonKeys[] = {
    {"listen",
     [](const Field& f, DaemonConfig& d) {
         auto text = f.string();
         if (!text) return;
         // Port 0 (any free port) suits tests on the command line; a config file needs a
         // fixed port, or nothing could scrape the daemon after a restart.
         std::string why;
         if (config_detail::parse_listen_address(*text, 1, why))
             d.listen = *text;
         else
             f.fail(in_quotes(*text) + " is not a listen address: " + why);
     }},
    {"interval", [](const Field& f, DaemonConfig& d) { assign(d.interval, f.duration(kMinInterval, kMaxInterval)); }},
    {"state_dir", [](const Field& f, DaemonConfig& d) { assign(d.state_dir, f.nonempty_string()); }},
    {"sysfs_root", [](const Field& f, DaemonConfig& d) { assign(d.sysfs_root, f.nonempty_string()); }},
    {"procfs_root", [](const Field& f, DaemonConfig& d) { assign(d.procfs_root, f.nonempty_string()); }},
    {"lldpd_socket",
     [](const Field& f, DaemonConfig& d) {
         auto v = f.string();
         if (!v) return;
         if (v->size() > kMaxLldpdSocket)
             f.fail(in_quotes(*v) + kLldpdSocketTooLong);
         else
             d.lldpd_socket = *v;
     }},
    {"log_level",
     [](const Field& f, DaemonConfig& d) {
         auto v = f.string();
         if (!v) return;
         if (std::ranges::find(kLogLevels, *v) != std::end(kLogLevels))
             d.log_level = *v;
         else
             f.fail(in_quotes(*v) + " is not a log level (" + joined(kLogLevels) + ")");
     }},
    {"http_threads", [](const Field& f, DaemonConfig& d) { assign(d.http_threads, f.integer(1, 64)); }},
    {"http_timeout",
     [](const Field& f, DaemonConfig& d) { assign(d.http_timeout, f.duration(kMinHttpTimeout, kMaxHttpTimeout)); }},
    {"history_limit", [](const Field& f, DaemonConfig& d) { assign(d.history_limit, f.integer(0, kMaxHistory)); }},
    {"web_config_file", [](const Field& f, DaemonConfig& d) { assign(d.web_config_file, f.string()); }},
};

// A regex for std::regex (ECMAScript), refused here when it does not compile, so that the
// exporter never meets a bad one. libstdc++ compiles a pattern by recursion, a few frames a
// character or group: 20,000 nested groups overflowed the stack (the daemon died on a reload).
// A netdev name is at most 15 bytes, and a pattern for it fits well within the cap.
constexpr size_t kMaxRegexBytes = 512;
// A count in {n} or {n,m} unrolls into n copies of what it repeats: "a{99000}" compiles (under
// libstdc++'s limit of 100,000 states) into 6 MB and 11 ms a render at 128 netdevs, to match
// names of at most 15 bytes.
constexpr unsigned long kMaxRegexRepeat = 64;

// The largest count of a {n} or {n,m} in `re`, outside bracket expressions and escapes.
unsigned long largest_repeat(std::string_view re) {
    unsigned long largest = 0;
    bool in_brackets = false;
    for (size_t i = 0; i < re.size(); ++i) {
        if (re[i] == '\\') {
            ++i;  // an escaped character: "\{" is a brace, not a count
        } else if (in_brackets) {
            in_brackets = re[i] != ']';
        } else if (re[i] == '[') {
            in_brackets = true;
        } else if (re[i] == '{') {
            // {n}, {n,} or {n,m}: each number counts.
            unsigned long n = 0;
            for (size_t j = i + 1; j < re.size() && (std::isdigit(static_cast<unsigned char>(re[j])) || re[j] == ',');
                 ++j) {
                if (re[j] == ',') {
                    largest = std::max(largest, n);
                    n = 0;
                } else {
                    n = std::min(n * 10 + static_cast<unsigned long>(re[j] - '0'), 1'000'000UL);
                }
            }
            largest = std::max(largest, n);
        }
    }
    return largest;
}

void set_regex(const Field& f, std::string& target) {
    auto v = f.string();
    if (!v) return;
    if (v->size() > kMaxRegexBytes)
        return f.fail("a regular expression of " + std::to_string(v->size()) + " bytes; at most " +
                      std::to_string(kMaxRegexBytes));
    if (const auto n = largest_repeat(*v); n > kMaxRegexRepeat)
        return f.fail(in_quotes(*v) + " repeats something " + std::to_string(n) + " times; at most " +
                      std::to_string(kMaxRegexRepeat) + " (a netdev name is at most 15 bytes)");
    try {
        (void)std::regex(*v, std::regex::ECMAScript);
        target = *v;
    } catch (const std::regex_error& e) {
        f.fail(in_quotes(*v) + " is not a regular expression: " + e.what());
    }
}

const KeySpec<MetricsConfig> kMetricsKeys[] = {
    {"netdev_include", [](const Field& f, MetricsConfig& m) { set_regex(f, m.netdev_include); }},
    {"netdev_exclude", [](const Field& f, MetricsConfig& m) { set_regex(f, m.netdev_exclude); }},
};

const KeySpec<ExpectConfig> kExpectKeys[] = {
    // 68 is the IPv4 minimum; 65535 the largest MTU a netdev can report.
    {"mtu", [](const Field& f, ExpectConfig& e) { assign(e.mtu, f.integer(68, 65535)); }},
    {"port_rate_gbps",
     [](const Field& f, ExpectConfig& e) {
         if (auto v = f.number(0, true)) e.port_rate_gbps = *v;
     }},
    {"roce_active_mtu",
     [](const Field& f, ExpectConfig& e) {
         auto v = f.integer(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
         if (!v) return;
         if (std::ranges::find(kRoceMtus, *v) != std::end(kRoceMtus))
             e.roce_active_mtu = static_cast<int>(*v);
         else
             f.fail(std::to_string(*v) + " is not a RoCE MTU (256, 512, 1024, 2048, 4096)");
     }},
    {"rails", [](const Field& f, ExpectConfig& e) { assign(e.rails, f.names()); }},
    {"ignore_devices", [](const Field& f, ExpectConfig& e) { assign(e.ignore_devices, f.names()); }},
    {"interfaces", [](const Field& f, ExpectConfig& e) { assign(e.interfaces, f.names()); }},
};

const KeySpec<ClusterConfig> kClusterKeys[] = {
    {"inventory", [](const Field& f, ClusterConfig& c) { assign(c.inventory, f.string()); }},  // "" = none
    {"rails", [](const Field& f, ClusterConfig& c) { assign(c.rails, f.names()); }},
    // 0 turns the ring off (only [[peers]] are probed); 16 is far more than any cluster needs.
    {"ring_successors", [](const Field& f, ClusterConfig& c) { assign(c.ring_successors, f.integer(0, 16)); }},
    // 0 turns rotation off; each rotating peer costs a hello and a latency probe per rail a round.
    {"rotating_peers", [](const Field& f, ClusterConfig& c) { assign(c.rotating_peers, f.integer(0, 16)); }},
    // A round shorter than 10 s is mostly hellos; longer than a day, a 2,000-node mesh takes years.
    {"rotate_every",
     [](const Field& f, ClusterConfig& c) {
         assign(c.rotate_every, f.duration(Duration{std::chrono::seconds(10)}, Duration{std::chrono::hours(24)}));
     }},
    {"peer_scheme",
     [](const Field& f, ClusterConfig& c) {
         auto v = f.string();
         if (!v) return;
         if (*v == "http" || *v == "https")
             c.peer_scheme = *v;
         else
             f.fail(in_quotes(*v) + " is not a scheme (http or https)");
     }},
    {"peer_ca_file", [](const Field& f, ClusterConfig& c) { assign(c.peer_ca_file, f.string()); }},
    {"peer_cert_file", [](const Field& f, ClusterConfig& c) { assign(c.peer_cert_file, f.string()); }},
    {"peer_key_file", [](const Field& f, ClusterConfig& c) { assign(c.peer_key_file, f.string()); }},
};

const KeySpec<Thresholds> kThresholdKeys[] = {
    {"symbol_error_per_hour", [](const Field& f, Thresholds& t) { assign(t.symbol_error_per_hour, f.number(0)); }},
    {"local_ack_timeout_per_second",
     [](const Field& f, Thresholds& t) { assign(t.local_ack_timeout_per_second, f.number(0)); }},
    {"cnp_per_second", [](const Field& f, Thresholds& t) { assign(t.cnp_per_second, f.number(0)); }},
    {"ecn_marked_per_second", [](const Field& f, Thresholds& t) { assign(t.ecn_marked_per_second, f.number(0)); }},
    {"pause_frames_per_second", [](const Field& f, Thresholds& t) { assign(t.pause_frames_per_second, f.number(0)); }},
    {"pre_fec_ber", [](const Field& f, Thresholds& t) { assign(t.pre_fec_ber, f.number(0, true)); }},
    {"flap_transitions",
     [](const Field& f, Thresholds& t) {
         assign(t.flap_transitions, f.integer(1, std::numeric_limits<uint32_t>::max()));
     }},
    {"flap_window", [](const Field& f, Thresholds& t) { assign(t.flap_window, f.duration(kMinWindow, kMaxWindow)); }},
    {"counter_window",
     [](const Field& f, Thresholds& t) { assign(t.counter_window, f.duration(kMinWindow, kMaxWindow)); }},
};

const KeySpec<RuleSettings> kRuleKeys[] = {
    {"enabled", [](const Field& f, RuleSettings& r) { assign(r.enabled, f.boolean()); }},
    {"for", [](const Field& f, RuleSettings& r) { assign(r.for_duration, f.duration(Duration{0}, kMaxRuleDelay)); }},
    {"clear_after",
     [](const Field& f, RuleSettings& r) { assign(r.clear_after, f.duration(Duration{0}, kMaxRuleDelay)); }},
    {"severity",
     [](const Field& f, RuleSettings& r) {
         auto v = f.string();
         if (!v) return;
         if (auto sev = severity_from_string(*v))
             r.severity = sev;
         else
             f.fail(in_quotes(*v) + " is not a severity (info, warning, critical)");
     }},
};

// Applies every key of t to out; a key not in keys is an error, never silently ignored.
template <class Section>
void load_keys(const toml::table& t, const std::string& prefix, std::span<const KeySpec<Section>> keys, Section& out,
               Errors& errors) {
    for (auto&& [k, node] : t) {
        std::string key = prefix + "." + std::string(k.str());
        auto spec = std::ranges::find(keys, k.str(), &KeySpec<Section>::name);
        if (spec == keys.end()) {
            std::vector<std::string_view> known;
            for (const auto& s : keys) known.push_back(s.name);
            errors.add(k.source(), key, unknown("key", k.str(), known));
            continue;
        }
        spec->set(Field(node, key, errors), out);
    }
}

// [rules.<id>]: one table per rule id, each id checked against the rules engine's list.
void load_rules(const toml::table& t, const std::string& prefix, Errors& errors, Config& c) {
    for (auto&& [k, node] : t) {
        std::string id(k.str());
        std::string key = prefix + "." + id;
        if (std::ranges::find(all_rule_ids(), id) == all_rule_ids().end()) {
            errors.add(k.source(), key, unknown("rule id", id, all_rule_ids()));
            continue;
        }
        const toml::table* rule = node.as_table();
        if (!rule) {
            errors.add(node.source(), key, std::string("expected a table, got ") + type_name(node.type()));
            continue;
        }
        RuleSettings settings = rule_settings(c, id);
        load_keys<RuleSettings>(*rule, key, kRuleKeys, settings, errors);
        c.rules[id] = settings;
    }
}

// ---------------------------------------------------------------- probes and peers

// A probe interval under a second would make the probes the node's main traffic.
constexpr Duration kMinProbeInterval{1000};
// Bandwidth probes: the data port server grants at most 10 s per session.
constexpr Duration kMaxBwDuration{10000};
// A probe a day is as rare as probing gets; a probe that needs more than five minutes to
// answer is a failed probe; a p99 limit above a minute judges nothing.
constexpr Duration kMaxProbeInterval{std::chrono::hours(24)};
constexpr Duration kMaxProbeTimeout{std::chrono::minutes(5)};
constexpr Duration kMaxLatencyThreshold{std::chrono::minutes(1)};

// Keys every probe section shares, for any section type with these members.
template <class C>
constexpr KeySpec<C> interval_key() {
    return {"interval",
            [](const Field& f, C& c) { assign(c.interval, f.duration(kMinProbeInterval, kMaxProbeInterval)); }};
}
template <class C>
constexpr KeySpec<C> jitter_key() {
    return {"jitter", [](const Field& f, C& c) { assign(c.jitter, f.duration(Duration{0}, kMaxProbeInterval)); }};
}
template <class C>
constexpr KeySpec<C> bw_duration_key() {
    return {"duration", [](const Field& f, C& c) { assign(c.duration, f.duration(Duration{100}, kMaxBwDuration)); }};
}
template <class C>
constexpr KeySpec<C> busy_fraction_key() {
    return {"busy_fraction", [](const Field& f, C& c) {
                auto v = f.number(0, true);
                if (v && *v > 1)
                    f.fail(number_text(*v) + " is out of range (a fraction: > 0 and <= 1)");
                else
                    assign(c.busy_fraction, v);
            }};
}
template <class C>
constexpr KeySpec<C> timeout_key() {
    return {"timeout", [](const Field& f, C& c) { assign(c.timeout, f.duration(Duration{100}, kMaxProbeTimeout)); }};
}
// A latency kind's own p99 limit for probe_latency_high.
template <class C>
constexpr KeySpec<C> latency_threshold_key() {
    return {
        "latency_threshold", [](const Field& f, C& c) {
            auto text = f.string();
            if (!text) return;
            auto v = parse_latency(*text);
            if (!v || *v > LatencyLimit{std::chrono::seconds(60)})
                f.fail(
                    in_quotes(*text) +
                    R"( is not a latency threshold (whole "us", "ms" or "s" above zero, at most 60s: e.g. "20us", "2ms"))");
            else
                c.latency_threshold = *v;
        }};
}
template <class C>
constexpr KeySpec<C> count_key() {
    return {"count", [](const Field& f, C& c) { assign(c.count, f.integer(1, 1'000'000)); }};
}

const KeySpec<TcpLatProbeConfig> kTcpLatKeys[] = {
    interval_key<TcpLatProbeConfig>(),
    jitter_key<TcpLatProbeConfig>(),
    count_key<TcpLatProbeConfig>(),
    {"size", [](const Field& f, TcpLatProbeConfig& c) { assign(c.size, f.integer(1, 64 * 1024)); }},
    timeout_key<TcpLatProbeConfig>(),
    latency_threshold_key<TcpLatProbeConfig>(),
};

const KeySpec<TcpBwProbeConfig> kTcpBwKeys[] = {
    interval_key<TcpBwProbeConfig>(),
    jitter_key<TcpBwProbeConfig>(),
    bw_duration_key<TcpBwProbeConfig>(),
    {"streams", [](const Field& f, TcpBwProbeConfig& c) { assign(c.streams, f.integer(1, 8)); }},
    busy_fraction_key<TcpBwProbeConfig>(),
};

const KeySpec<RdmaBwProbeConfig> kRdmaBwKeys[] = {
    interval_key<RdmaBwProbeConfig>(),
    jitter_key<RdmaBwProbeConfig>(),
    bw_duration_key<RdmaBwProbeConfig>(),
    {"message_size", [](const Field& f, RdmaBwProbeConfig& c) { assign(c.message_size, f.integer(1, 1 << 20)); }},
    {"tx_depth", [](const Field& f, RdmaBwProbeConfig& c) { assign(c.tx_depth, f.integer(1, 1024)); }},
    {"qps_per_rail", [](const Field& f, RdmaBwProbeConfig& c) { assign(c.qps_per_rail, f.integer(1, 8)); }},
    busy_fraction_key<RdmaBwProbeConfig>(),
};

const KeySpec<RdmaLatProbeConfig> kRdmaLatKeys[] = {
    interval_key<RdmaLatProbeConfig>(),
    jitter_key<RdmaLatProbeConfig>(),
    count_key<RdmaLatProbeConfig>(),
    {"size", [](const Field& f, RdmaLatProbeConfig& c) { assign(c.size, f.integer(1, 64 * 1024)); }},
    timeout_key<RdmaLatProbeConfig>(),
    latency_threshold_key<RdmaLatProbeConfig>(),
};

const KeySpec<UcxBwProbeConfig> kUcxBwKeys[] = {
    interval_key<UcxBwProbeConfig>(),
    jitter_key<UcxBwProbeConfig>(),
    bw_duration_key<UcxBwProbeConfig>(),
    {"message_size", [](const Field& f, UcxBwProbeConfig& c) { assign(c.message_size, f.integer(1, 1 << 20)); }},
    busy_fraction_key<UcxBwProbeConfig>(),
};

const KeySpec<UcxLatProbeConfig> kUcxLatKeys[] = {
    interval_key<UcxLatProbeConfig>(),
    jitter_key<UcxLatProbeConfig>(),
    count_key<UcxLatProbeConfig>(),
    {"size", [](const Field& f, UcxLatProbeConfig& c) { assign(c.size, f.integer(8, 64 * 1024)); }},
    timeout_key<UcxLatProbeConfig>(),
    latency_threshold_key<UcxLatProbeConfig>(),
};

// A [probes.<name>] sub-table loaded with its own key list.
template <class C, size_t N, C ProbesConfig::*member>
void load_probe_section(const Field& f, ProbesConfig& p, const KeySpec<C> (&keys)[N]) {
    if (auto* t = f.table()) load_keys<C>(*t, f.key(), keys, p.*member, f.errors());
}

const KeySpec<ProbesConfig> kProbeKeys[] = {
    {"token_file", [](const Field& f, ProbesConfig& p) { assign(p.token_file, f.nonempty_string()); }},
    {"data_port", [](const Field& f, ProbesConfig& p) { assign(p.data_port, f.integer(1, 65535)); }},
    {"data_listen",
     [](const Field& f, ProbesConfig& p) {
         // "" is every address; otherwise one address this node has (a rail's, say).
         if (f.text_if_string() == std::string()) {
             p.data_listen = "";
         } else if (auto v = f.ip_address()) {
             p.data_listen = std::move(*v);
         }
     }},
    {"enabled",
     [](const Field& f, ProbesConfig& p) {
         const toml::array* arr = f.node().as_array();
         if (!arr) {
             f.fail(std::string("expected an array of probe kinds, got ") + type_name(f.node().type()));
             return;
         }
         std::vector<std::string> kinds;
         std::vector<std::string> known;
         for (ProbeKind k : all_probe_kinds()) known.emplace_back(to_string(k));
         bool ok = true;
         for (size_t i = 0; i < arr->size(); ++i) {
             Field item((*arr)[i], f.key() + "[" + std::to_string(i) + "]", f.errors());
             auto v = item.string();
             if (!v) {
                 ok = false;
             } else if (!probe_kind_from_string(*v)) {
                 item.fail(unknown("probe kind", *v, known));
                 ok = false;
             } else if (std::ranges::find(kinds, *v) == kinds.end()) {
                 kinds.push_back(*v);
             }
         }
         if (ok) p.enabled = std::move(kinds);
     }},
    {"bw_fraction_of_link",
     [](const Field& f, ProbesConfig& p) {
         auto v = f.number(0, true);
         if (v && *v > 1)
             f.fail(number_text(*v) + " is out of range (a fraction: > 0 and <= 1)");
         else
             assign(p.bw_fraction_of_link, v);
     }},
    {"latency_threshold",
     [](const Field& f, ProbesConfig& p) {
         // Microseconds are a kind's own limit's ("500us" read as "not a duration" here).
         if (auto text = f.text_if_string(); text && !parse_duration(*text) && parse_latency(*text))
             return f.fail(in_quotes(*text) +
                           " is finer than this key's milliseconds: write at least \"1ms\", or give the kind its "
                           "own limit in microseconds ([probes.tcp_lat] latency_threshold = " +
                           in_quotes(*text) + ")");
         assign(p.latency_threshold, f.duration(Duration{1}, kMaxLatencyThreshold));
     }},
    // A million runs a minute is far beyond what one node can serve; 0 = no limit.
    {"max_runs_per_minute",
     [](const Field& f, ProbesConfig& p) { assign(p.max_runs_per_minute, f.integer(0, 1'000'000)); }},
    // 1 PiB a minute is far beyond any NIC; 0 = no limit.
    {"max_bytes_per_minute",
     [](const Field& f, ProbesConfig& p) { assign(p.max_bytes_per_minute, f.integer(0, int64_t{1} << 50)); }},
    {"tcp_lat",
     [](const Field& f, ProbesConfig& p) {
         if (auto* t = f.table()) load_keys<TcpLatProbeConfig>(*t, f.key(), kTcpLatKeys, p.tcp_lat, f.errors());
     }},
    {"tcp_bw",
     [](const Field& f, ProbesConfig& p) {
         if (auto* t = f.table()) load_keys<TcpBwProbeConfig>(*t, f.key(), kTcpBwKeys, p.tcp_bw, f.errors());
     }},
    {"rdma_bw",
     [](const Field& f, ProbesConfig& p) {
         load_probe_section<RdmaBwProbeConfig, std::size(kRdmaBwKeys), &ProbesConfig::rdma_bw>(f, p, kRdmaBwKeys);
     }},
    {"rdma_lat",
     [](const Field& f, ProbesConfig& p) {
         load_probe_section<RdmaLatProbeConfig, std::size(kRdmaLatKeys), &ProbesConfig::rdma_lat>(f, p, kRdmaLatKeys);
     }},
    {"ucx_bw",
     [](const Field& f, ProbesConfig& p) {
         load_probe_section<UcxBwProbeConfig, std::size(kUcxBwKeys), &ProbesConfig::ucx_bw>(f, p, kUcxBwKeys);
     }},
    {"ucx_lat",
     [](const Field& f, ProbesConfig& p) {
         load_probe_section<UcxLatProbeConfig, std::size(kUcxLatKeys), &ProbesConfig::ucx_lat>(f, p, kUcxLatKeys);
     }},
};

const KeySpec<PeerRailConfig> kRailKeys[] = {
    {"name", [](const Field& f, PeerRailConfig& r) { assign(r.name, f.name()); }},
    {"local_interface", [](const Field& f, PeerRailConfig& r) { assign(r.local_interface, f.name()); }},
    {"local_address", [](const Field& f, PeerRailConfig& r) { assign(r.local_address, f.ip_address()); }},
    {"remote_address", [](const Field& f, PeerRailConfig& r) { assign(r.remote_address, f.ip_address()); }},
    {"local_device", [](const Field& f, PeerRailConfig& r) { assign(r.local_device, f.name()); }},
    {"remote_device", [](const Field& f, PeerRailConfig& r) { assign(r.remote_device, f.name()); }},
};

const KeySpec<PeerConfig> kPeerKeys[] = {
    {"name", [](const Field& f, PeerConfig& p) { assign(p.name, f.name()); }},
    {"address",
     [](const Field& f, PeerConfig& p) {
         auto text = f.string();
         if (!text) return;
         std::string why;
         auto a = config_detail::parse_listen_address(*text, 1, why);
         if (a && a->host.empty()) why = "needs a host: \"host:port\"";
         if (a && !a->host.empty())
             p.address = *text;
         else
             f.fail(in_quotes(*text) + " is not a peer daemon address: " + why);
     }},
    {"rails",
     [](const Field& f, PeerConfig& p) {
         const toml::array* arr = f.node().as_array();
         if (!arr || (!arr->empty() && !arr->is_array_of_tables())) {
             f.fail("expected an array of tables ([[peers.rails]])");
             return;
         }
         for (size_t i = 0; i < arr->size(); ++i) {
             const toml::table* t = (*arr)[i].as_table();
             std::string key = f.key() + "[" + std::to_string(i) + "]";
             PeerRailConfig rail;
             load_keys<PeerRailConfig>(*t, key, kRailKeys, rail, f.errors());
             if (rail.name.empty() && !t->contains("name")) f.errors().add(t->source(), key + ".name", "missing");
             if (rail.remote_address.empty() && !t->contains("remote_address"))
                 f.errors().add(t->source(), key + ".remote_address", "missing");
             for (const auto& other : p.rails)
                 if (!rail.name.empty() && other.name == rail.name)
                     f.errors().add(t->source(), key + ".name", in_quotes(rail.name) + " is used twice");
             p.rails.push_back(std::move(rail));
         }
     }},
};

// [[peers]]: an array of tables, each checked against kPeerKeys.
void load_peers(const toml::node& node, const std::string& prefix, Errors& errors, Config& c) {
    const toml::array* arr = node.as_array();
    if (!arr || (!arr->empty() && !arr->is_array_of_tables())) {
        errors.add(node.source(), prefix, "expected an array of tables ([[peers]])");
        return;
    }
    for (size_t i = 0; i < arr->size(); ++i) {
        const toml::table* t = (*arr)[i].as_table();
        std::string key = prefix + "[" + std::to_string(i) + "]";
        PeerConfig peer;
        load_keys<PeerConfig>(*t, key, kPeerKeys, peer, errors);
        if (!t->contains("name")) errors.add(t->source(), key + ".name", "missing");
        if (!t->contains("address")) errors.add(t->source(), key + ".address", "missing");
        for (const auto& other : c.peers)
            if (!peer.name.empty() && other.name == peer.name)
                errors.add(t->source(), key + ".name", in_quotes(peer.name) + " is used twice");
        c.peers.push_back(std::move(peer));
    }
}

// ---------------------------------------------------------------- alertmanager

// A resend under a second would make the notifier the node's main traffic to Alertmanager.
constexpr Duration kMinResendInterval{1000};
constexpr Duration kMaxResendInterval{std::chrono::hours(1)};
constexpr Duration kMaxAlertmanagerTimeout{std::chrono::minutes(1)};

const KeySpec<AlertmanagerConfig> kAlertmanagerKeys[] = {
    {"urls",
     [](const Field& f, AlertmanagerConfig& a) {
         const toml::array* arr = f.node().as_array();
         if (!arr) {
             f.fail(std::string("expected an array of URLs, got ") + type_name(f.node().type()));
             return;
         }
         std::vector<std::string> urls;
         bool ok = true;
         for (size_t i = 0; i < arr->size(); ++i) {
             Field item((*arr)[i], f.key() + "[" + std::to_string(i) + "]", f.errors());
             auto v = item.string();
             std::string why;
             if (!v) {
                 ok = false;
             } else if (!parse_http_url(*v, why)) {
                 item.fail(in_quotes(*v) + " is not an Alertmanager URL: " + why);
                 ok = false;
             } else if (std::ranges::find(urls, *v) != urls.end()) {
                 item.fail(in_quotes(*v) + " is listed twice");
                 ok = false;
             } else {
                 urls.push_back(*v);
             }
         }
         if (ok) a.urls = std::move(urls);
     }},
    {"resend_interval",
     [](const Field& f, AlertmanagerConfig& a) {
         assign(a.resend_interval, f.duration(kMinResendInterval, kMaxResendInterval));
     }},
    {"timeout", [](const Field& f,
                   AlertmanagerConfig& a) { assign(a.timeout, f.duration(Duration{100}, kMaxAlertmanagerTimeout)); }},
    {"node", [](const Field& f, AlertmanagerConfig& a) { assign(a.node, f.nonempty_string()); }},
    {"external_url",
     [](const Field& f, AlertmanagerConfig& a) {
         // Only a link in the alerts (generatorURL), never fetched: https is fine here.
         auto v = f.string();
         if (v && !v->starts_with("http://") && !v->starts_with("https://"))
             f.fail(in_quotes(*v) + " is not a URL: must start with http:// or https://");
         else
             assign(a.external_url, v);
     }},
    {"bearer_token_file",
     [](const Field& f, AlertmanagerConfig& a) { assign(a.bearer_token_file, f.nonempty_string()); }},
    {"basic_auth_username",
     [](const Field& f, AlertmanagerConfig& a) { assign(a.basic_auth_username, f.nonempty_string()); }},
    {"basic_auth_password_file",
     [](const Field& f, AlertmanagerConfig& a) { assign(a.basic_auth_password_file, f.nonempty_string()); }},
    {"ca_file", [](const Field& f, AlertmanagerConfig& a) { assign(a.ca_file, f.nonempty_string()); }},
    {"cert_file", [](const Field& f, AlertmanagerConfig& a) { assign(a.cert_file, f.nonempty_string()); }},
    {"key_file", [](const Field& f, AlertmanagerConfig& a) { assign(a.key_file, f.nonempty_string()); }},
    {"queue_capacity",
     [](const Field& f, AlertmanagerConfig& a) { assign(a.queue_capacity, f.integer(1, 1'000'000)); }},
};

// [alertmanager]: its keys, then the ones that only make sense together.
void load_alertmanager(const toml::table& t, const std::string& p, Errors& e, Config& c) {
    auto& a = c.alertmanager;
    load_keys<AlertmanagerConfig>(t, p, kAlertmanagerKeys, a, e);
    auto at = [&](std::string_view key) { return t.get(key) ? t.get(key)->source() : t.source(); };
    if (!a.basic_auth_username.empty() && a.basic_auth_password_file.empty())
        e.add(at("basic_auth_username"), p + ".basic_auth_password_file", "missing (basic_auth_username is set)");
    if (a.basic_auth_username.empty() && !a.basic_auth_password_file.empty())
        e.add(at("basic_auth_password_file"), p + ".basic_auth_username", "missing (basic_auth_password_file is set)");
    if (!a.bearer_token_file.empty() && !a.basic_auth_username.empty())
        e.add(at("bearer_token_file"), p + ".bearer_token_file", "set together with basic_auth_username; choose one");
    if (!a.cert_file.empty() && a.key_file.empty())
        e.add(at("cert_file"), p + ".key_file", "missing (cert_file is set)");
    if (a.cert_file.empty() && !a.key_file.empty())
        e.add(at("key_file"), p + ".cert_file", "missing (key_file is set)");
    // TLS settings for URLs that are all plain HTTP would look applied and be ignored.
    const bool any_https = std::ranges::any_of(a.urls, [](const std::string& u) { return u.starts_with("https://"); });
    for (const char* key : {"ca_file", "cert_file", "key_file"})
        if (t.get(key) && !any_https) e.add(at(key), p + "." + key, "set, but no Alertmanager URL is https://");
}

struct SectionSpec {
    std::string_view name;
    void (*load)(const toml::table&, const std::string& prefix, Errors&, Config&);
};

const SectionSpec kSections[] = {
    {"daemon", [](const toml::table& t, const std::string& p, Errors& e,
                  Config& c) { load_keys<DaemonConfig>(t, p, kDaemonKeys, c.daemon, e); }},
    {"expect", [](const toml::table& t, const std::string& p, Errors& e,
                  Config& c) { load_keys<ExpectConfig>(t, p, kExpectKeys, c.expect, e); }},
    {"metrics", [](const toml::table& t, const std::string& p, Errors& e,
                   Config& c) { load_keys<MetricsConfig>(t, p, kMetricsKeys, c.metrics, e); }},
    {"thresholds", [](const toml::table& t, const std::string& p, Errors& e,
                      Config& c) { load_keys<Thresholds>(t, p, kThresholdKeys, c.thresholds, e); }},
    {"rules", load_rules},
    {"probes", [](const toml::table& t, const std::string& p, Errors& e,
                  Config& c) { load_keys<ProbesConfig>(t, p, kProbeKeys, c.probes, e); }},
    {"cluster", [](const toml::table& t, const std::string& p, Errors& e,
                   Config& c) { load_keys<ClusterConfig>(t, p, kClusterKeys, c.cluster, e); }},
    {"peers", nullptr},  // an array of tables: load_peers
    {"alertmanager", load_alertmanager},
};

// ---------------------------------------------------------------- nesting pre-scan

// toml++ 3.3 builds and frees nested tables recursively and bounds only nested values, so
// a key or table header a few thousand parts deep overflows the stack. A rocewatch config
// nests three levels; these bounds leave room for any hand-written file.
constexpr int kMaxDottedParts = 64;   // dots outside strings and comments on one line
constexpr int kMaxBracketDepth = 32;  // open [ and { outside strings, across lines

// Where the text nests deeper than the bounds above, as (line, problem); nullopt when it
// does not. Skips strings (all four kinds) and comments; counts every dot outside them, so
// a line with more than 64 floats is refused too, which no rocewatch key takes.
std::optional<std::pair<int, std::string>> nesting_problem(std::string_view text) {
    int line = 1, dots = 0, depth = 0;
    std::string_view open_string;  // the delimiter of the string we are in, "" outside
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (ch == '\n') {
            ++line;
            dots = 0;
            continue;
        }
        if (!open_string.empty()) {
            // An escape hides the next character (never the closing quote), a line end excepted
            // so that lines stay counted.
            if (ch == '\\' && open_string[0] == '"' && i + 1 < text.size() && text[i + 1] != '\n')
                ++i;
            else if (text.substr(i, open_string.size()) == open_string) {
                i += open_string.size() - 1;
                open_string = {};
            }
            continue;
        }
        if (ch == '#') {
            while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        } else if (ch == '"' || ch == '\'') {
            const bool multi = text.substr(i, 3) == std::string_view(ch == '"' ? "\"\"\"" : "'''");
            open_string = text.substr(i, multi ? 3 : 1);
            i += open_string.size() - 1;
        } else if (ch == '.' && ++dots > kMaxDottedParts) {
            return std::pair{line, "more than " + std::to_string(kMaxDottedParts) +
                                       " dotted key parts on one line; tables nest this deep in no config"};
        } else if ((ch == '[' || ch == '{') && ++depth > kMaxBracketDepth) {
            return std::pair{line, "arrays or inline tables nested deeper than " + std::to_string(kMaxBracketDepth)};
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            --depth;
        }
    }
    return std::nullopt;
}

}  // namespace

// The probe data port must not be the HTTP port: the daemon would fail to start on it, while
// --check-config said ok. Empty when they differ, when the listen address is not valid, or
// when no token_file asks for peer probing (the data port is then not opened; a config that
// ran before must still load).
// Whether peer probing will be on: a token_file, or the systemd credential the shipped unit
// loads (kTokenCredential in daemon/peering/token.hpp, under $CREDENTIALS_DIRECTORY).
bool probing_token_expected(const Config& c) {
    if (!c.probes.token_file.empty()) return true;
    const char* creds = std::getenv("CREDENTIALS_DIRECTORY");
    std::error_code ec;
    return creds && *creds && std::filesystem::exists(std::filesystem::path(creds) / "rocewatch-peer-token", ec);
}

std::string port_clash(const Config& c) {
    if (!probing_token_expected(c)) return {};
    const auto listen = parse_listen_address(c.daemon.listen);
    if (!listen || listen->port != c.probes.data_port) return {};
    return "is the port the HTTP API listens on (daemon.listen = " + in_quotes(c.daemon.listen) +
           "); the probe data port needs a port of its own";
}

// The same clash told from the listen address's side (its line in the file, or --listen).
std::string listen_on_data_port(const Config& c) {
    return "port " + std::to_string(c.probes.data_port) +
           " is the probe data port's (probes.data_port, default 9880); the HTTP API needs a port of its own";
}

ConfigResult parse_config(std::string_view text, const std::string& source_name) {
    ConfigResult result;
    Errors errors(source_name);
    if (auto deep = nesting_problem(text)) {
        result.errors.push_back({source_name, deep->first, "", std::move(deep->second)});
        return result;
    }
    toml::table doc;
    try {
        doc = toml::parse(text, std::string_view(source_name));
    } catch (const toml::parse_error& e) {
        errors.add(e.source(), "", std::string(e.description()));
        result.errors = errors.take();
        return result;
    }

    Config c = default_config();
    c.source = source_name;
    for (auto&& [k, node] : doc) {
        std::string name(k.str());
        auto section = std::ranges::find(kSections, k.str(), &SectionSpec::name);
        if (section == std::end(kSections)) {
            std::vector<std::string_view> known;
            for (const auto& s : kSections) known.push_back(s.name);
            if (node.is_table())
                errors.add(k.source(), name, unknown("table", name, known));
            else
                errors.add(k.source(), name, unknown("key", name, known, "settings belong in a table"));
            continue;
        }
        if (name == "peers") {
            load_peers(node, name, errors, c);
            continue;
        }
        const toml::table* t = node.as_table();
        if (!t) {
            errors.add(node.source(), name, std::string("expected a table, got ") + type_name(node.type()));
            continue;
        }
        section->load(*t, name, errors, c);
    }
    // A rail that is also ignored is judged by nothing: expect.rails names what must be
    // there and healthy, ignore_devices what no rule looks at. The node passed as healthy.
    if (const auto* ignore = doc.at_path("expect.ignore_devices").node())
        for (const auto& rail : c.expect.rails)
            if (std::ranges::find(c.expect.ignore_devices, rail) != c.expect.ignore_devices.end())
                errors.add(ignore->source(), "expect.ignore_devices",
                           in_quotes(rail) + " is in expect.rails too: a rail is judged, an ignored device is not");
    if (errors.empty()) {
        if (auto clash = port_clash(c); !clash.empty()) {
            if (const auto* port = doc.at_path("probes.data_port").node())
                errors.add(port->source(), "probes.data_port", std::move(clash));
            else if (const auto* listen = doc.at_path("daemon.listen").node())
                errors.add(listen->source(), "daemon.listen", listen_on_data_port(c));
        }
    }

    if (errors.empty())
        result.config = std::move(c);
    else
        result.errors = errors.take();
    return result;
}

ConfigResult load_config(const std::optional<std::string>& path, const ConfigOverrides& o) {
    auto flag_error = [](ConfigResult& r, const char* flag, std::string problem) {
        r.errors.push_back({.file = "command line", .line = 0, .key = flag, .problem = std::move(problem)});
    };
    if (path && path->empty()) {
        ConfigResult r;
        flag_error(r, "--config", "must not be empty");
        return r;
    }
    ConfigResult r = path ? load_config_file(*path) : ConfigResult{.config = default_config(), .errors = {}};
    // A file with errors still has its flags checked (against the defaults), so that one run
    // of --check-config names every mistake, not the file's first and the flags' next time.
    const bool file_ok = r.config.has_value();
    if (!file_ok) r.config = default_config();
    auto& d = r.config->daemon;
    auto nonempty = [&](const char* flag, const std::optional<std::string>& v, std::string& target) {
        if (!v) return;
        if (v->empty()) flag_error(r, flag, "must not be empty");
        target = *v;
    };
    if (o.listen) {
        std::string why;
        if (!config_detail::parse_listen_address(*o.listen, 0, why))
            flag_error(r, "--listen", in_quotes(*o.listen) + " is not a listen address: " + why);
        d.listen = *o.listen;
        if (!port_clash(*r.config).empty()) flag_error(r, "--listen", listen_on_data_port(*r.config));
    }
    nonempty("--sysfs-root", o.sysfs_root, d.sysfs_root);
    nonempty("--procfs-root", o.procfs_root, d.procfs_root);
    nonempty("--state-dir", o.state_dir, d.state_dir);
    if (o.web_config_file) d.web_config_file = *o.web_config_file;
    if (o.lldpd_socket) {
        if (o.lldpd_socket->size() > kMaxLldpdSocket)
            flag_error(r, "--lldpd-socket", in_quotes(*o.lldpd_socket) + kLldpdSocketTooLong);
        d.lldpd_socket = *o.lldpd_socket;
    }
    if (o.log_level) {
        if (std::ranges::find(kLogLevels, *o.log_level) == std::end(kLogLevels))
            flag_error(r, "--log-level", in_quotes(*o.log_level) + " is not a log level (" + joined(kLogLevels) + ")");
        d.log_level = *o.log_level;
    }
    if (!file_ok || !r.errors.empty()) r.config.reset();
    return r;
}

void keep_start_only(Config& next, const Config& running) {
    next.restart_pending.clear();
    const auto keep = [&](const char* key, auto& now, const auto& was) {
        if (now == was) return;
        const auto text = [](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>)
                return in_quotes(v);
            else if constexpr (std::is_same_v<T, std::optional<std::string>>)
                return v ? in_quotes(*v) : std::string("unset");
            else if constexpr (std::is_same_v<T, Duration>)
                return in_quotes(format_duration(v));
            else
                return std::to_string(v);
        };
        next.restart_pending.push_back(std::string(key) + ": " + text(now) + " in the file, " + text(was) + " running");
        now = was;
    };
    keep("daemon.listen", next.daemon.listen, running.daemon.listen);
    keep("daemon.web_config_file", next.daemon.web_config_file, running.daemon.web_config_file);
    keep("daemon.state_dir", next.daemon.state_dir, running.daemon.state_dir);
    // The HTTP server's worker pool and its timeouts are made once, with the listening socket.
    keep("daemon.http_threads", next.daemon.http_threads, running.daemon.http_threads);
    keep("daemon.http_timeout", next.daemon.http_timeout, running.daemon.http_timeout);
    keep("probes.data_port", next.probes.data_port, running.probes.data_port);
    keep("probes.data_listen", next.probes.data_listen, running.probes.data_listen);
    keep("probes.token_file", next.probes.token_file, running.probes.token_file);
}

ConfigResult load_config_file(const std::string& path, std::chrono::milliseconds fifo_wait) {
    // A config file is a few KiB; the cap stops a mistaken path (a device, a log) from
    // being read whole into memory.
    constexpr size_t kMaxSize = 1 << 20;
    auto unreadable = [&](std::string why) {
        ConfigResult r;
        r.errors.push_back({path, 0, "", std::move(why)});
        return r;
    };

    const auto file = read_small_file(path, kMaxSize, fifo_wait);
    if (file.too_large) return unreadable("larger than 1 MiB; not a config file");
    if (!file.ok) return unreadable(file.error);
    return parse_config(file.text, path);
}

}  // namespace rocewatch
