// The config module's parts that need no TOML: value syntaxes, defaults, JSON view.
#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>

#include "daemon/config/config_internal.hpp"
#include "daemon/config/config_loader.hpp"
#include "daemon/rules/rules.hpp"

namespace rocewatch {

std::string ConfigError::to_string() const {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    s += ": ";
    if (!key.empty()) s += key + ": ";
    return s + problem;
}

Config default_config() { return Config{}; }

// ---------------------------------------------------------------- durations

namespace {

struct Unit {
    std::string_view suffix;
    int64_t ms;
};

// Largest first. Components must follow this order, each at most once, so "1h30m" parses
// and "30m1h" does not: one spelling per value, as in Prometheus.
constexpr Unit kUnits[] = {{"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}};

// Index of the unit s starts with; the longest suffix wins, so "ms" is not read as "m".
std::optional<size_t> unit_at(std::string_view s) {
    std::optional<size_t> best;
    for (size_t u = 0; u < std::size(kUnits); ++u)
        if (s.starts_with(kUnits[u].suffix) && (!best || kUnits[u].suffix.size() > kUnits[*best].suffix.size()))
            best = u;
    return best;
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view s) {
    if (s.empty()) return std::nullopt;
    int64_t total = 0;
    std::optional<size_t> last_unit;
    size_t i = 0;
    while (i < s.size()) {
        size_t digits_start = i;
        int64_t n = 0;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
            int d = s[i] - '0';
            if (n > (std::numeric_limits<int64_t>::max() - d) / 10) return std::nullopt;
            n = n * 10 + d;
            ++i;
        }
        if (i == digits_start) return std::nullopt;  // a unit without a number, or "-5s", "1.5s"
        auto u = unit_at(s.substr(i));
        if (!u || (last_unit && *u <= *last_unit)) return std::nullopt;
        last_unit = u;
        const Unit& unit = kUnits[*u];
        i += unit.suffix.size();
        if (n > (std::numeric_limits<int64_t>::max() - total) / unit.ms) return std::nullopt;
        total += n * unit.ms;
    }
    // Zero only as "0s": a zero spelled otherwise ("0m" for "10m") is likelier a typo than
    // a wish for no delay.
    if (total == 0 && s != "0s") return std::nullopt;
    return Duration{total};
}

std::optional<LatencyLimit> parse_latency(std::string_view s) {
    size_t i = 0;
    int64_t n = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        if (n > 1'000'000'000) return std::nullopt;  // beyond any latency worth a threshold
        n = n * 10 + (s[i] - '0');
        ++i;
    }
    if (i == 0 || n == 0) return std::nullopt;
    const std::string_view unit = s.substr(i);
    if (unit == "us") return LatencyLimit{n};
    if (unit == "ms") return LatencyLimit{n * 1000};
    if (unit == "s") return LatencyLimit{n * 1'000'000};
    return std::nullopt;
}

std::string format_latency(LatencyLimit d) {
    const int64_t us = d.count();
    if (us % 1'000'000 == 0) return std::to_string(us / 1'000'000) + "s";
    if (us % 1000 == 0) return std::to_string(us / 1000) + "ms";
    return std::to_string(us) + "us";
}

std::string format_duration(Duration d) {
    int64_t ms = d.count();
    if (ms == 0) return "0s";
    std::string out;
    if (ms < 0) {
        out = "-";
        ms = -ms;
    }
    for (const auto& u : kUnits) {
        if (ms >= u.ms) {
            out += std::to_string(ms / u.ms);
            out += u.suffix;
            ms %= u.ms;
        }
    }
    return out;
}

// ---------------------------------------------------------------- listen addresses

namespace {

bool is_hostname(std::string_view h) {
    if (h.empty() || h.size() > 253) return false;
    size_t label_len = 0;
    char prev = '.';
    for (char c : h) {
        if (c == '.') {
            if (label_len == 0 || prev == '-') return false;
            label_len = 0;
        } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') {
            if (label_len == 0 && c == '-') return false;
            if (++label_len > 63) return false;
        } else {
            return false;
        }
        prev = c;
    }
    return label_len > 0 && prev != '-';
}

bool looks_like_ipv4(std::string_view h) {
    for (char c : h)
        if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
    return true;
}

}  // namespace

namespace config_detail {

std::optional<ListenAddress> parse_listen_address(std::string_view s, int min_port, std::string& why) {
    std::string_view host;
    std::string_view port;
    ListenAddress out;
    if (s.starts_with('[')) {
        auto close = s.find(']');
        if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
            why = "expected \"[address]:port\"";
            return std::nullopt;
        }
        host = s.substr(1, close - 1);
        port = s.substr(close + 2);
        in6_addr a6{};
        if (inet_pton(AF_INET6, std::string(host).c_str(), &a6) != 1) {
            why = "\"" + std::string(host) + "\" is not an IPv6 address";
            return std::nullopt;
        }
    } else {
        auto colon = s.rfind(':');
        if (colon == std::string_view::npos) {
            why = "expected \"host:port\", \"[v6]:port\" or \":port\"";
            return std::nullopt;
        }
        host = s.substr(0, colon);
        port = s.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) {
            why = "an IPv6 address needs brackets: \"[address]:port\"";
            return std::nullopt;
        }
        if (!host.empty()) {
            // Digits and dots only: meant as an IPv4 address, so hold it to that ("300.1.1.1").
            in_addr a4{};
            bool ok = looks_like_ipv4(host) ? inet_pton(AF_INET, std::string(host).c_str(), &a4) == 1
                                            : is_hostname(host);
            if (!ok) {
                why = "\"" + std::string(host) + "\" is not a host name or IPv4 address";
                return std::nullopt;
            }
        }
    }
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        why = "\"" + std::string(port) + "\" is not a port number";
        return std::nullopt;
    }
    int p = std::stoi(std::string(port));
    if (p < min_port || p > 65535) {
        why = "port " + std::to_string(p) + " is out of range " + std::to_string(min_port) + "..65535";
        return std::nullopt;
    }
    out.host = std::string(host);
    out.port = static_cast<uint16_t>(p);
    return out;
}

}  // namespace config_detail

std::optional<ListenAddress> parse_listen_address(std::string_view s) {
    std::string why;
    return config_detail::parse_listen_address(s, 0, why);
}

// ---------------------------------------------------------------- JSON view

const std::vector<std::string>& secret_key_paths() {
    // The config holds only the token file's path; its content never enters the Config.
    // Listed anyway so a token that ever lands in the view is redacted, not served.
    static const std::vector<std::string> paths = {"probes.token", "peers.*.token"};
    return paths;
}

namespace {

void redact_at(nlohmann::json& node, const std::vector<std::string_view>& segs, size_t i) {
    if (!node.is_object()) return;
    for (auto& [k, v] : node.items()) {
        if (segs[i] != "*" && segs[i] != k) continue;
        if (i + 1 == segs.size())
            v = "<redacted>";
        else
            redact_at(v, segs, i + 1);
    }
}

}  // namespace

void redact_secrets(nlohmann::json& j, const std::vector<std::string>& paths) {
    for (const auto& path : paths) {
        std::vector<std::string_view> segs;
        std::string_view rest = path;
        while (true) {
            auto dot = rest.find('.');
            segs.push_back(rest.substr(0, dot));
            if (dot == std::string_view::npos) break;
            rest.remove_prefix(dot + 1);
        }
        redact_at(j, segs, 0);
    }
}

namespace {

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json rule_json(const RuleSettings& r) {
    return {
        {"enabled", r.enabled},
        {"for", format_duration(r.for_duration)},
        {"clear_after", format_duration(r.clear_after)},
        // null: the rule's own severity, which the rules engine knows and config does not.
        {"severity", r.severity ? nlohmann::json(to_string(*r.severity)) : nlohmann::json(nullptr)},
    };
}

nlohmann::json probes_json(const ProbesConfig& p) {
    // null when unset: the kind falls back to [probes] latency_threshold.
    auto latency_json = [](const std::optional<LatencyLimit>& v) {
        return v ? nlohmann::json(format_latency(*v)) : nlohmann::json(nullptr);
    };
    return {
        // null when unset: "" is not a valid token_file, and the view must read back in.
        {"token_file", p.token_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.token_file)},
        {"data_port", p.data_port},
        // null when unset: the data port binds the host of [daemon] listen.
        {"data_listen", p.data_listen ? nlohmann::json(*p.data_listen) : nlohmann::json(nullptr)},
        {"enabled", p.enabled},
        {"bw_fraction_of_link", p.bw_fraction_of_link},
        {"latency_threshold", format_duration(p.latency_threshold)},
        {"max_runs_per_minute", p.max_runs_per_minute},
        {"max_bytes_per_minute", p.max_bytes_per_minute},
        {"tcp_lat",
         {
             {"interval", format_duration(p.tcp_lat.interval)},
             {"jitter", format_duration(p.tcp_lat.jitter)},
             {"count", p.tcp_lat.count},
             {"size", p.tcp_lat.size},
             {"timeout", format_duration(p.tcp_lat.timeout)},
             {"latency_threshold", latency_json(p.tcp_lat.latency_threshold)},
         }},
        {"tcp_bw",
         {
             {"interval", format_duration(p.tcp_bw.interval)},
             {"jitter", format_duration(p.tcp_bw.jitter)},
             {"duration", format_duration(p.tcp_bw.duration)},
             {"streams", p.tcp_bw.streams},
             {"busy_fraction", p.tcp_bw.busy_fraction},
         }},
        {"rdma_bw",
         {
             {"interval", format_duration(p.rdma_bw.interval)},
             {"jitter", format_duration(p.rdma_bw.jitter)},
             {"duration", format_duration(p.rdma_bw.duration)},
             {"message_size", p.rdma_bw.message_size},
             {"tx_depth", p.rdma_bw.tx_depth},
             {"qps_per_rail", p.rdma_bw.qps_per_rail},
             {"busy_fraction", p.rdma_bw.busy_fraction},
         }},
        {"rdma_lat",
         {
             {"interval", format_duration(p.rdma_lat.interval)},
             {"jitter", format_duration(p.rdma_lat.jitter)},
             {"count", p.rdma_lat.count},
             {"size", p.rdma_lat.size},
             {"timeout", format_duration(p.rdma_lat.timeout)},
             {"latency_threshold", latency_json(p.rdma_lat.latency_threshold)},
         }},
        {"ucx_bw",
         {
             {"interval", format_duration(p.ucx_bw.interval)},
             {"jitter", format_duration(p.ucx_bw.jitter)},
             {"duration", format_duration(p.ucx_bw.duration)},
             {"message_size", p.ucx_bw.message_size},
             {"busy_fraction", p.ucx_bw.busy_fraction},
         }},
        {"ucx_lat",
         {
             {"interval", format_duration(p.ucx_lat.interval)},
             {"jitter", format_duration(p.ucx_lat.jitter)},
             {"count", p.ucx_lat.count},
             {"size", p.ucx_lat.size},
             {"timeout", format_duration(p.ucx_lat.timeout)},
             {"latency_threshold", latency_json(p.ucx_lat.latency_threshold)},
         }},
    };
}

nlohmann::json peers_json(const std::vector<PeerConfig>& peers) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& p : peers) {
        nlohmann::json rails = nlohmann::json::array();
        for (const auto& r : p.rails)
            rails.push_back({{"name", r.name},
                             {"local_interface", r.local_interface},
                             {"local_address", r.local_address},
                             {"remote_address", r.remote_address},
                             {"local_device", r.local_device},
                             {"remote_device", r.remote_device}});
        out.push_back({{"name", p.name}, {"address", p.address}, {"rails", std::move(rails)}});
    }
    return out;
}

// null for an unset file or name: "" is not a valid value, and the view must read back in.
nlohmann::json alertmanager_json(const AlertmanagerConfig& a) {
    auto or_null_text = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
    return {
        {"urls", a.urls},
        {"resend_interval", format_duration(a.resend_interval)},
        {"timeout", format_duration(a.timeout)},
        {"node", or_null_text(a.node)},
        {"external_url", or_null_text(a.external_url)},
        {"bearer_token_file", or_null_text(a.bearer_token_file)},
        {"basic_auth_username", or_null_text(a.basic_auth_username)},
        {"basic_auth_password_file", or_null_text(a.basic_auth_password_file)},
        {"ca_file", or_null_text(a.ca_file)},
        {"cert_file", or_null_text(a.cert_file)},
        {"key_file", or_null_text(a.key_file)},
        {"queue_capacity", a.queue_capacity},
    };
}

}  // namespace

nlohmann::json config_to_json(const Config& c) {
    const auto& d = c.daemon;
    const auto& e = c.expect;
    const auto& t = c.thresholds;
    nlohmann::json rules = nlohmann::json::object();
    for (const auto& id : all_rule_ids()) rules[id] = rule_json(rule_settings(c, id));
    for (const auto& [id, r] : c.rules) rules[id] = rule_json(r);  // ids only code can set
    nlohmann::json j = {
        {"source", c.source.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.source)},  // null: built-in defaults
        {"restart_pending", c.restart_pending},
        {"daemon",
         {
             {"listen", d.listen},
             {"interval", format_duration(d.interval)},
             {"state_dir", d.state_dir},
             {"sysfs_root", d.sysfs_root},
             {"procfs_root", d.procfs_root},
             {"lldpd_socket", d.lldpd_socket},
             {"log_level", d.log_level},
             {"http_threads", d.http_threads},
             {"http_timeout", format_duration(d.http_timeout)},
             {"history_limit", d.history_limit},
             {"web_config_file", d.web_config_file},
         }},
        {"expect",
         {
             {"mtu", e.mtu},
             {"port_rate_gbps", or_null(e.port_rate_gbps)},
             {"roce_active_mtu", or_null(e.roce_active_mtu)},
             {"rails", e.rails},
             {"ignore_devices", e.ignore_devices},
             {"interfaces", e.interfaces},
         }},
        {"metrics",
         {
             {"netdev_include", c.metrics.netdev_include},
             {"netdev_exclude", c.metrics.netdev_exclude},
         }},
        {"thresholds",
         {
             {"symbol_error_per_hour", t.symbol_error_per_hour},
             {"local_ack_timeout_per_second", t.local_ack_timeout_per_second},
             {"cnp_per_second", t.cnp_per_second},
             {"ecn_marked_per_second", t.ecn_marked_per_second},
             {"pause_frames_per_second", t.pause_frames_per_second},
             {"pre_fec_ber", t.pre_fec_ber},
             {"flap_transitions", t.flap_transitions},
             {"flap_window", format_duration(t.flap_window)},
             {"counter_window", format_duration(t.counter_window)},
         }},
        {"rules", std::move(rules)},
        {"probes", probes_json(c.probes)},
        {"cluster",
         {
             {"inventory", c.cluster.inventory},
             {"rails", c.cluster.rails},
             {"ring_successors", c.cluster.ring_successors},
             {"rotating_peers", c.cluster.rotating_peers},
             {"rotate_every", format_duration(c.cluster.rotate_every)},
             {"peer_scheme", c.cluster.peer_scheme},
             {"peer_ca_file", c.cluster.peer_ca_file},
             {"peer_cert_file", c.cluster.peer_cert_file},
             {"peer_key_file", c.cluster.peer_key_file},
         }},
        {"peers", peers_json(c.peers)},
        {"alertmanager", alertmanager_json(c.alertmanager)},
    };
    redact_secrets(j, secret_key_paths());
    return j;
}

}  // namespace rocewatch
