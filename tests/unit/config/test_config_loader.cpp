// TOML -> Config: defaults, every key, every class of error with its file:line: key: problem.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config/config_loader.hpp"
#include "daemon/rules/rules.hpp"
#include "test_env.hpp"

using namespace rocewatch;
using namespace std::chrono_literals;
using Lines = std::vector<std::string>;

namespace {

Lines errors_of(const ConfigResult& r) {
    Lines out;
    for (const auto& e : r.errors) out.push_back(e.to_string());
    return out;
}

// Errors of a snippet parsed as "t.toml"; also checks the all-or-nothing contract.
Lines errors_of(std::string_view text) {
    auto r = parse_config(text, "t.toml");
    EXPECT_EQ(r.config.has_value(), r.errors.empty()) << "a config with errors must be rejected whole";
    return errors_of(r);
}

// Errors of a fixture file, named relative to the fixtures' config directory.
Lines fixture_errors(const std::string& name) {
    std::string dir = rocewatch::testing::fixtures_dir() + "/config/";
    Lines out;
    for (auto line : errors_of(load_config_file(dir + name))) {
        if (line.starts_with(dir)) line.erase(0, dir.size());
        out.push_back(line);
    }
    return out;
}

std::string source_root() { return rocewatch::testing::fixtures_dir() + "/../.."; }

// The effective config without its source, for comparing configs from different files.
nlohmann::json effective(const Config& c) {
    auto j = config_to_json(c);
    j.erase("source");
    return j;
}

bool is_table_array(const nlohmann::json& v) { return v.is_array() && !v.empty() && v.front().is_object(); }

// Writes one table's scalars and arrays, then its sub-tables ([name.sub]) and arrays of
// tables ([[name.sub]]), as TOML wants them.
void table_to_toml(const std::string& name, const nlohmann::json& table, bool array_item, std::string& out) {
    out += (array_item ? "[[" : "[") + name + (array_item ? "]]\n" : "]\n");
    for (const auto& [k, v] : table.items())
        if (!v.is_null() && !v.is_object() && !is_table_array(v)) out += k + " = " + v.dump() + "\n";
    for (const auto& [k, v] : table.items()) {
        if (v.is_object()) table_to_toml(name + "." + k, v, false, out);
        if (is_table_array(v))
            for (const auto& item : v) table_to_toml(name + "." + k, item, true, out);
    }
}

// Writes config_to_json's output back as TOML (null = unset = left out).
std::string to_toml(const nlohmann::json& j) {
    std::string out;
    for (const auto& [section, table] : j.items()) {
        if (section == "source") continue;
        if (section == "rules") {
            for (const auto& [id, rule] : table.items()) table_to_toml("rules." + id, rule, false, out);
            continue;
        }
        if (table.is_array()) {
            for (const auto& item : table) table_to_toml(section, item, true, out);
            continue;
        }
        table_to_toml(section, table, false, out);
    }
    return out;
}

const std::string kRuleIds =
    "no_rdma_device, port_down, ib_port_not_active_no_sm, netdev_down, port_rate_low, mtu_low, roce_mtu_low, "
    "no_roce_v2_gid, "
    "pfc_off_roce_priority, rdma_cm_roce_v1, ecn_off_pfc_on, pause_storm, pause_frames_high, fec_uncorrectable, "
    "fec_corrected_high, fcs_errors, link_speed_below_module, module_rx_power_low, module_temperature_high, "
    "discards_with_pfc, "
    "gid_on_bond, "
    "bond_slave_down, "
    "bond_degraded, bond_link_failures, bond_mode_reorders, subnet_overlap, error_counters, congestion, "
    "link_flapping, peermem_missing, collector_errors, peer_unreachable, rail_unreachable, probe_bandwidth_low, "
    "probe_latency_high, "
    "rdma_fails_tcp_works, tcp_fails_rdma_works, probe_failed, rail_imbalance, ucx_version_mismatch, "
    "peer_config_mismatch, rails_crossed, arp_answered_by_wrong_nic, rail_subnet_mismatch";

const char* kEveryKey = R"(
[daemon]
listen = "[::1]:19879"
interval = "250ms"
state_dir = "/tmp/rw-state"
sysfs_root = "/srv/fixtures/sys"
procfs_root = "/srv/fixtures/proc"
lldpd_socket = "/run/lldpd/test.socket"
log_level = "debug"
http_threads = 8
http_timeout = "2s"
history_limit = 50
web_config_file = "/etc/rocewatch/web.yml"

[expect]
mtu = 4200
port_rate_gbps = 200.5
roce_active_mtu = 1024
rails = ["rocep1s0f0", "rocep1s0f1"]
ignore_devices = ["roceP2p1s0f0"]
interfaces = ["bond0", "enp1s0f0np0"]

[cluster]
inventory = "/etc/rocewatch/inventory.json"
rails = ["r0", "r1"]
ring_successors = 5
rotating_peers = 4
rotate_every = "5m"
peer_scheme = "https"
peer_ca_file = "/etc/rocewatch/ca.crt"
peer_cert_file = "/etc/rocewatch/client.crt"
peer_key_file = "/etc/rocewatch/client.key"

[thresholds]
symbol_error_per_hour = 60
local_ack_timeout_per_second = 0.5
cnp_per_second = 2000
pause_frames_per_second = 50
pre_fec_ber = 2.5e-5
ecn_marked_per_second = 3000.25
flap_transitions = 4
flap_window = "1h30m"
counter_window = "2m"

[rules.mtu_low]
enabled = false
for = "30s"
clear_after = "1m"
severity = "critical"

[probes]
token_file = "/etc/rocewatch/token"
data_port = 19880
data_listen = "10.0.0.5"
enabled = ["tcp_lat"]
bw_fraction_of_link = 0.8
latency_threshold = "2ms"
max_runs_per_minute = 120
max_bytes_per_minute = 1000000000

[probes.tcp_lat]
interval = "10s"
jitter = "1s"
count = 50
size = 128
timeout = "3s"
latency_threshold = "500us"

[probes.tcp_bw]
interval = "1h"
jitter = "5m"
duration = "1s"
streams = 4
busy_fraction = 0.25

[probes.rdma_bw]
interval = "2h"
jitter = "10m"
duration = "3s"
message_size = 1048576
tx_depth = 256
qps_per_rail = 4
busy_fraction = 0.3

[probes.rdma_lat]
interval = "2m"
jitter = "10s"
count = 5000
size = 64
timeout = "8s"
latency_threshold = "20us"

[probes.ucx_bw]
interval = "3h"
jitter = "7m"
duration = "4s"
message_size = 131072
busy_fraction = 0.4

[probes.ucx_lat]
interval = "3m"
jitter = "9s"
count = 2000
size = 16
timeout = "7s"
latency_threshold = "3ms"

[[peers]]
name = "spark-b"
address = "192.168.1.12:9879"

[[peers.rails]]
name = "rail0"
local_interface = "enp1s0f0np0"
local_address = "192.168.100.11"
remote_address = "192.168.100.12"
local_device = "rocep1s0f0"
remote_device = "rocep1s0f0"

[alertmanager]
urls = ["http://am-1:9093", "https://[::1]:9093/am"]
resend_interval = "30s"
timeout = "3s"
node = "spark-a"
external_url = "https://spark-a.example:9879"
basic_auth_username = "rocewatch"
basic_auth_password_file = "/etc/rocewatch/am-password"
ca_file = "/etc/rocewatch/am-ca.crt"
cert_file = "/etc/rocewatch/node.crt"
key_file = "/etc/rocewatch/node.key"
queue_capacity = 500
)";

}  // namespace

// ---------------------------------------------------------------- defaults and keys

TEST(ConfigDefaults, MatchTheModel) {
    Config c = default_config();
    EXPECT_EQ(c.source, "");
    EXPECT_EQ(c.daemon.listen, "0.0.0.0:9879");
    EXPECT_EQ(c.daemon.interval, 5s);
    EXPECT_EQ(c.daemon.state_dir, "/var/lib/rocewatch");
    EXPECT_EQ(c.daemon.sysfs_root, "/sys");
    EXPECT_EQ(c.daemon.procfs_root, "/proc");
    EXPECT_EQ(c.daemon.lldpd_socket, "/run/lldpd.socket");
    EXPECT_EQ(c.daemon.log_level, "info");
    EXPECT_EQ(c.daemon.http_threads, 4);
    EXPECT_EQ(c.daemon.http_timeout, 5s);
    EXPECT_EQ(c.daemon.history_limit, 1000u);
    EXPECT_EQ(c.expect.mtu, 9000u);
    EXPECT_FALSE(c.expect.port_rate_gbps);
    EXPECT_FALSE(c.expect.roce_active_mtu);
    EXPECT_TRUE(c.expect.rails.empty());
    EXPECT_TRUE(c.expect.ignore_devices.empty());
    EXPECT_TRUE(c.expect.interfaces.empty());
    EXPECT_EQ(c.thresholds.symbol_error_per_hour, 120);
    EXPECT_EQ(c.thresholds.local_ack_timeout_per_second, 1);
    EXPECT_EQ(c.thresholds.cnp_per_second, 1000);
    EXPECT_EQ(c.thresholds.ecn_marked_per_second, 1000);
    EXPECT_EQ(c.thresholds.flap_transitions, 6u);
    EXPECT_EQ(c.thresholds.flap_window, 10min);
    EXPECT_EQ(c.thresholds.counter_window, 5min);
    EXPECT_TRUE(c.rules.empty());
    EXPECT_EQ(effective(c), effective(Config{}));
}

TEST(ConfigDefaults, EmptyTextGivesTheDefaultsAndItsSource) {
    auto r = parse_config("", "empty.toml");
    ASSERT_TRUE(r.config);
    EXPECT_TRUE(r.errors.empty());
    EXPECT_EQ(r.config->source, "empty.toml");
    EXPECT_EQ(effective(*r.config), effective(default_config()));
    // Empty tables are fine too.
    r = parse_config("[daemon]\n[expect]\n[thresholds]\n[rules]\n", "t.toml");
    ASSERT_TRUE(r.config) << errors_of(r)[0];
    EXPECT_EQ(effective(*r.config), effective(default_config()));
}

TEST(ConfigKeys, EveryKeyIsRead) {
    auto r = parse_config(kEveryKey, "t.toml");
    ASSERT_TRUE(r.config) << errors_of(r)[0];
    const Config& c = *r.config;
    EXPECT_EQ(c.daemon.listen, "[::1]:19879");
    EXPECT_EQ(c.daemon.interval, 250ms);
    EXPECT_EQ(c.daemon.state_dir, "/tmp/rw-state");
    EXPECT_EQ(c.daemon.sysfs_root, "/srv/fixtures/sys");
    EXPECT_EQ(c.daemon.procfs_root, "/srv/fixtures/proc");
    EXPECT_EQ(c.daemon.lldpd_socket, "/run/lldpd/test.socket");
    EXPECT_EQ(c.daemon.log_level, "debug");
    EXPECT_EQ(c.daemon.http_threads, 8);
    EXPECT_EQ(c.daemon.http_timeout, 2s);
    EXPECT_EQ(c.daemon.history_limit, 50u);
    EXPECT_EQ(c.expect.mtu, 4200u);
    EXPECT_EQ(c.expect.port_rate_gbps, 200.5);
    EXPECT_EQ(c.expect.roce_active_mtu, 1024);
    EXPECT_EQ(c.expect.rails, (Lines{"rocep1s0f0", "rocep1s0f1"}));
    EXPECT_EQ(c.expect.ignore_devices, (Lines{"roceP2p1s0f0"}));
    EXPECT_EQ(c.expect.interfaces, (Lines{"bond0", "enp1s0f0np0"}));
    EXPECT_EQ(c.cluster.inventory, "/etc/rocewatch/inventory.json");
    EXPECT_EQ(c.cluster.rails, (Lines{"r0", "r1"}));
    EXPECT_EQ(c.cluster.ring_successors, 5u);
    EXPECT_EQ(c.cluster.rotating_peers, 4u);
    EXPECT_EQ(c.cluster.rotate_every, 5min);
    EXPECT_EQ(c.cluster.peer_scheme, "https");
    EXPECT_EQ(c.cluster.peer_ca_file, "/etc/rocewatch/ca.crt");
    EXPECT_EQ(c.cluster.peer_cert_file, "/etc/rocewatch/client.crt");
    EXPECT_EQ(c.cluster.peer_key_file, "/etc/rocewatch/client.key");
    EXPECT_EQ(c.daemon.web_config_file, "/etc/rocewatch/web.yml");
    EXPECT_EQ(c.thresholds.symbol_error_per_hour, 60) << "an integer is fine where a number is asked";
    EXPECT_EQ(c.thresholds.local_ack_timeout_per_second, 0.5);
    EXPECT_EQ(c.thresholds.cnp_per_second, 2000);
    EXPECT_EQ(c.thresholds.pause_frames_per_second, 50);
    EXPECT_EQ(c.thresholds.pre_fec_ber, 2.5e-5);
    EXPECT_EQ(c.thresholds.ecn_marked_per_second, 3000.25);
    EXPECT_EQ(c.thresholds.flap_transitions, 4u);
    EXPECT_EQ(c.thresholds.flap_window, 90min);
    EXPECT_EQ(c.thresholds.counter_window, 2min);
    ASSERT_EQ(c.rules.size(), 1u);
    const RuleSettings& rule = c.rules.at("mtu_low");
    EXPECT_FALSE(rule.enabled);
    EXPECT_EQ(rule.for_duration, 30s);
    EXPECT_EQ(rule.clear_after, 1min);
    EXPECT_EQ(rule.severity, Severity::critical);
    EXPECT_EQ(c.probes.token_file, "/etc/rocewatch/token");
    EXPECT_EQ(c.probes.data_port, 19880);
    EXPECT_EQ(c.probes.data_listen, "10.0.0.5");
    EXPECT_EQ(c.probes.enabled, (Lines{"tcp_lat"}));
    EXPECT_EQ(c.probes.bw_fraction_of_link, 0.8);
    EXPECT_EQ(c.probes.latency_threshold, 2ms);
    EXPECT_EQ(c.probes.max_runs_per_minute, 120u);
    EXPECT_EQ(c.probes.max_bytes_per_minute, 1000000000u);
    EXPECT_EQ(c.probes.tcp_lat.interval, 10s);
    EXPECT_EQ(c.probes.tcp_lat.jitter, 1s);
    EXPECT_EQ(c.probes.tcp_lat.count, 50u);
    EXPECT_EQ(c.probes.tcp_lat.size, 128u);
    EXPECT_EQ(c.probes.tcp_lat.timeout, 3s);
    EXPECT_EQ(c.probes.tcp_lat.latency_threshold, LatencyLimit{500});
    EXPECT_EQ(c.probes.rdma_lat.latency_threshold, LatencyLimit{20});
    EXPECT_EQ(c.probes.ucx_lat.latency_threshold, LatencyLimit{3000});
    EXPECT_EQ(c.probes.tcp_bw.interval, 1h);
    EXPECT_EQ(c.probes.tcp_bw.jitter, 5min);
    EXPECT_EQ(c.probes.tcp_bw.duration, 1s);
    EXPECT_EQ(c.probes.tcp_bw.streams, 4u);
    EXPECT_EQ(c.probes.tcp_bw.busy_fraction, 0.25);
    ASSERT_EQ(c.peers.size(), 1u);
    EXPECT_EQ(c.peers[0].name, "spark-b");
    EXPECT_EQ(c.peers[0].address, "192.168.1.12:9879");
    ASSERT_EQ(c.peers[0].rails.size(), 1u);
    const PeerRailConfig& rail = c.peers[0].rails[0];
    EXPECT_EQ(rail.name, "rail0");
    EXPECT_EQ(rail.local_interface, "enp1s0f0np0");
    EXPECT_EQ(rail.local_address, "192.168.100.11");
    EXPECT_EQ(rail.remote_address, "192.168.100.12");
    EXPECT_EQ(rail.local_device, "rocep1s0f0");
    EXPECT_EQ(rail.remote_device, "rocep1s0f0");
    const AlertmanagerConfig& am = c.alertmanager;
    EXPECT_EQ(am.urls, (Lines{"http://am-1:9093", "https://[::1]:9093/am"}));
    EXPECT_EQ(am.resend_interval, 30s);
    EXPECT_EQ(am.timeout, 3s);
    EXPECT_EQ(am.node, "spark-a");
    EXPECT_EQ(am.external_url, "https://spark-a.example:9879");
    EXPECT_EQ(am.basic_auth_username, "rocewatch");
    EXPECT_EQ(am.basic_auth_password_file, "/etc/rocewatch/am-password");
    EXPECT_EQ(am.ca_file, "/etc/rocewatch/am-ca.crt");
    EXPECT_EQ(am.cert_file, "/etc/rocewatch/node.crt");
    EXPECT_EQ(am.key_file, "/etc/rocewatch/node.key");
    EXPECT_EQ(am.queue_capacity, 500u);
}

TEST(ConfigKeys, AlertmanagerDefaultsSendNothing) {
    const AlertmanagerConfig am = default_config().alertmanager;
    EXPECT_TRUE(am.urls.empty());
    EXPECT_EQ(am.resend_interval, 1min);
    EXPECT_EQ(am.timeout, 10s);
    EXPECT_EQ(am.queue_capacity, 10000u);
    auto r = parse_config("[alertmanager]\nurls = [\"http://am:9093\"]\nbearer_token_file = \"/run/t\"\n", "t.toml");
    ASSERT_TRUE(r.config);
    EXPECT_EQ(r.config->alertmanager.bearer_token_file, "/run/t");
}

TEST(ConfigErrors, Alertmanager) {
    EXPECT_EQ(errors_of("[alertmanager]\nurls = [\"https://am:9093\", \"am:9093\", \"http://am:0\"]\n"),
              (Lines{"t.toml:2: alertmanager.urls[1]: \"am:9093\" is not an Alertmanager URL: must start with "
                     "http:// or https://",
                     "t.toml:2: alertmanager.urls[2]: \"http://am:0\" is not an Alertmanager URL: port must be "
                     "1..65535"}));
    // TLS settings: a certificate with its key, and only where some URL is https://.
    EXPECT_EQ(errors_of("[alertmanager]\nurls = [\"https://am:9093\"]\ncert_file = \"/c\"\n"),
              (Lines{"t.toml:3: alertmanager.key_file: missing (cert_file is set)"}));
    EXPECT_EQ(errors_of("[alertmanager]\nurls = [\"https://am:9093\"]\nkey_file = \"/k\"\n"),
              (Lines{"t.toml:3: alertmanager.cert_file: missing (key_file is set)"}));
    EXPECT_EQ(errors_of("[alertmanager]\nurls = [\"http://am:9093\"]\nca_file = \"/ca\"\n"),
              (Lines{"t.toml:3: alertmanager.ca_file: set, but no Alertmanager URL is https://"}));
    EXPECT_EQ(errors_of("[alertmanager]\nurls = [\"http://a:1\", \"https://b\"]\nca_file = \"/ca\"\n"
                        "cert_file = \"/c\"\nkey_file = \"/k\"\n"),
              Lines{})
        << "one https:// URL is enough";
    EXPECT_EQ(errors_of("[alertmanager]\nurls = [\"http://a:1\", \"http://a:1\"]\n"),
              (Lines{"t.toml:2: alertmanager.urls[1]: \"http://a:1\" is listed twice"}));
    EXPECT_EQ(errors_of("[alertmanager]\nresend_interval = \"500ms\"\ntimeout = \"2m\"\n"),
              (Lines{"t.toml:2: alertmanager.resend_interval: 500ms is below the minimum 1s",
                     "t.toml:3: alertmanager.timeout: 2m is above the maximum 1m"}));
    EXPECT_EQ(errors_of("[alertmanager]\nbasic_auth_username = \"u\"\n"),
              (Lines{"t.toml:2: alertmanager.basic_auth_password_file: missing (basic_auth_username is set)"}));
    EXPECT_EQ(errors_of("[alertmanager]\nbearer_token_file = \"/t\"\nbasic_auth_username = \"u\"\n"
                        "basic_auth_password_file = \"/p\"\n"),
              (Lines{"t.toml:2: alertmanager.bearer_token_file: set together with basic_auth_username; choose one"}));
    EXPECT_EQ(errors_of("[alertmanager]\nurl = \"http://am:9093\"\n"),
              (Lines{"t.toml:2: alertmanager.url: unknown key; did you mean \"urls\"? Valid keys: urls, "
                     "resend_interval, timeout, node, external_url, bearer_token_file, basic_auth_username, "
                     "basic_auth_password_file, ca_file, cert_file, key_file, queue_capacity"}));
}

TEST(ConfigKeys, ProbeDefaultsAreGentle) {
    Config c = default_config();
    EXPECT_TRUE(c.probes.token_file.empty()) << "no token file: peer probing off";
    EXPECT_EQ(c.probes.data_port, 9880);
    EXPECT_EQ(c.probes.data_listen, std::nullopt) << "the data port binds where the HTTP API listens";
    EXPECT_EQ(c.probes.tcp_lat.interval, 30s);
    EXPECT_EQ(c.probes.tcp_lat.size, 64u);
    EXPECT_EQ(c.probes.tcp_bw.interval, 15min);
    EXPECT_EQ(c.probes.tcp_bw.duration, 2s);
    EXPECT_EQ(c.probes.bw_fraction_of_link, 0.9);
    EXPECT_EQ(c.probes.latency_threshold, 1ms);
    EXPECT_TRUE(c.peers.empty());
}

// The data port's own address: "" for every address, else one numeric address.
TEST(ConfigKeys, DataListen) {
    for (const char* v : {"", "10.77.0.2", "fd00::2"}) {
        auto r = parse_config(std::string("[probes]\ndata_listen = \"") + v + "\"\n", "t.toml");
        ASSERT_TRUE(r.config) << v;
        EXPECT_EQ(r.config->probes.data_listen, std::optional<std::string>(v));
    }
}

TEST(ConfigErrors, ProbesAndPeers) {
    EXPECT_EQ(errors_of("[probes]\nenabled = [\"tcp_lta\"]\n"),
              (Lines{"t.toml:2: probes.enabled[0]: unknown probe kind; did you mean \"tcp_lat\"? Valid probe "
                     "kinds: rdma_write_bw, rdma_write_lat, rdma_multirail_bw, tcp_bw, tcp_lat, ucx_put_bw, "
                     "ucx_put_lat"}));
    EXPECT_EQ(errors_of("[probes.tcp_bw]\nbusy_fraction = 1.5\nduration = \"1m\"\n"),
              (Lines{"t.toml:2: probes.tcp_bw.busy_fraction: 1.5 is out of range (a fraction: > 0 and <= 1)",
                     "t.toml:3: probes.tcp_bw.duration: 1m is above the maximum 10s"}));
    EXPECT_EQ(errors_of("[probes.rdma_bw]\nqps_per_rail = 9\nduration = \"20s\"\n[probes.ucx_lat]\nsize = 4\n"),
              (Lines{"t.toml:2: probes.rdma_bw.qps_per_rail: 9 is out of range 1..8",
                     "t.toml:3: probes.rdma_bw.duration: 20s is above the maximum 10s",
                     "t.toml:5: probes.ucx_lat.size: 4 is out of range 8..65536"}));
    EXPECT_EQ(errors_of("[probes]\ndata_port = 0\n"),
              (Lines{"t.toml:2: probes.data_port: 0 is out of range 1..65535"}));
    EXPECT_EQ(errors_of("[probes]\ndata_listen = \"node07\"\n"),
              (Lines{"t.toml:2: probes.data_listen: \"node07\" is not a numeric IPv4 or IPv6 address"}));
    EXPECT_EQ(errors_of("[probes]\ndata_listen = 7\n"),
              (Lines{"t.toml:2: probes.data_listen: expected a string, got an integer"}));
    EXPECT_EQ(errors_of("[cluster]\npeer_scheme = \"ftp\"\n"),
              (Lines{"t.toml:2: cluster.peer_scheme: \"ftp\" is not a scheme (http or https)"}));
    EXPECT_EQ(errors_of("[probes]\nmax_runs_per_minute = -1\n[cluster]\nrotating_peers = 17\nrotate_every = \"5s\"\n"),
              (Lines{"t.toml:2: probes.max_runs_per_minute: -1 is out of range 0..1000000",
                     "t.toml:4: cluster.rotating_peers: 17 is out of range 0..16",
                     "t.toml:5: cluster.rotate_every: 5s is below the minimum 10s"}));
    EXPECT_EQ(errors_of("[probes.tcp_lat]\ncnt = 5\n"),
              (Lines{"t.toml:2: probes.tcp_lat.cnt: unknown key; did you mean \"count\"? Valid keys: interval, "
                     "jitter, count, size, timeout, latency_threshold"}));
    EXPECT_EQ(errors_of("[[peers]]\nname = \"b\"\naddress = \":9879\"\n"),
              (Lines{"t.toml:3: peers[0].address: \":9879\" is not a peer daemon address: needs a host: "
                     "\"host:port\""}));
    EXPECT_EQ(errors_of("[[peers]]\nname = \"b\"\n"), (Lines{"t.toml:1: peers[0].address: missing"}));
    EXPECT_EQ(errors_of("[[peers]]\nname = \"b\"\naddress = \"b:1\"\n[[peers.rails]]\nname = \"r\"\n"
                        "remote_address = \"spark-b\"\n"),
              (Lines{"t.toml:6: peers[0].rails[0].remote_address: \"spark-b\" is not a numeric IPv4 or IPv6 "
                     "address"}));
    EXPECT_EQ(errors_of("[[peers]]\nname = \"b\"\naddress = \"b:1\"\n[[peers]]\nname = \"b\"\naddress = "
                        "\"c:1\"\n"),
              (Lines{"t.toml:4: peers[1].name: \"b\" is used twice"}));
    EXPECT_EQ(errors_of("[peers]\nname = \"b\"\n"),
              (Lines{"t.toml:1: peers: expected an array of tables ([[peers]])"}));
}

TEST(ConfigKeys, EveryKeyDiffersFromItsDefaultInTheTestConfig) {
    // Guards the test above: a key added to the schema but not to kEveryKey shows up here.
    auto r = parse_config(kEveryKey, "t.toml");
    ASSERT_TRUE(r.config);
    auto got = effective(*r.config);
    auto def = effective(default_config());
    for (const char* section : {"daemon", "expect", "thresholds", "probes", "cluster"}) {
        for (const auto& [k, v] : def[section].items())
            EXPECT_NE(got[section][k], v) << section << "." << k << " is not exercised";
    }
    for (const char* sub : {"tcp_lat", "tcp_bw", "rdma_bw", "rdma_lat", "ucx_bw", "ucx_lat"})
        for (const auto& [k, v] : def["probes"][sub].items())
            EXPECT_NE(got["probes"][sub][k], v) << "probes." << sub << "." << k << " is not exercised";
    // bearer_token_file excepted: it cannot be set together with basic auth (see above).
    for (const auto& [k, v] : def["alertmanager"].items())
        if (k != "bearer_token_file") {
            EXPECT_NE(got["alertmanager"][k], v) << "alertmanager." << k << " is not exercised";
        }
    for (const auto& [k, v] : def["rules"]["mtu_low"].items())
        EXPECT_NE(got["rules"]["mtu_low"][k], v) << "rules.mtu_low." << k << " is not exercised";
}

TEST(ConfigKeys, RoundTripThroughJsonAndBack) {
    // Config -> JSON -> TOML -> Config is the identity: the JSON view spells every key and
    // value exactly as the file does.
    auto first = parse_config(kEveryKey, "t.toml");
    ASSERT_TRUE(first.config);
    std::string toml = to_toml(config_to_json(*first.config));
    auto second = parse_config(toml, "round-trip.toml");
    ASSERT_TRUE(second.config) << errors_of(second)[0] << "\n" << toml;
    EXPECT_EQ(effective(*second.config), effective(*first.config));

    auto defaults = parse_config(to_toml(config_to_json(default_config())), "defaults.toml");
    ASSERT_TRUE(defaults.config) << errors_of(defaults)[0];
    EXPECT_EQ(effective(*defaults.config), effective(default_config()));
}

TEST(ConfigKeys, RuleTableAppliesOnlyWhatItSets) {
    auto r = parse_config("[rules.port_down]\nfor = \"10s\"\n", "t.toml");
    ASSERT_TRUE(r.config);
    auto s = rule_settings(*r.config, "port_down");
    EXPECT_EQ(s.for_duration, 10s);
    EXPECT_TRUE(s.enabled);
    EXPECT_EQ(s.clear_after, RuleSettings{}.clear_after);
    EXPECT_FALSE(s.severity);
}

TEST(ConfigKeys, DurationsAcceptZeroOnlyWhereItMeansSomething) {
    auto r = parse_config("[rules.port_down]\nfor = \"0s\"\nclear_after = \"0s\"\n", "t.toml");
    ASSERT_TRUE(r.config);
    EXPECT_EQ(r.config->rules.at("port_down").clear_after, 0s);
    EXPECT_EQ(errors_of("[daemon]\ninterval = \"0s\"\n"),
              (Lines{"t.toml:2: daemon.interval: 0s is below the minimum 100ms"}));
}

// ---------------------------------------------------------------- each class of error

TEST(ConfigErrors, SyntaxErrorCarriesTomlsLine) {
    auto r = parse_config("[daemon]\nlisten = \"0.0.0.0:9879\"\ninterval = \n", "t.toml");
    EXPECT_FALSE(r.config);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].file, "t.toml");
    EXPECT_EQ(r.errors[0].line, 3);
    EXPECT_EQ(r.errors[0].key, "");
    EXPECT_FALSE(r.errors[0].problem.empty());
    EXPECT_TRUE(r.errors[0].to_string().starts_with("t.toml:3: ")) << r.errors[0].to_string();

    EXPECT_EQ(errors_of("[daemon]\nhttp_threads = 1\nhttp_threads = 2\n").size(), 1u) << "duplicate key";
    EXPECT_EQ(errors_of("[daemon]\n[daemon]\n").size(), 1u) << "duplicate table";
}

TEST(ConfigErrors, FieldsOfAnError) {
    auto r = parse_config("\n[expect]\n\nmtu = \"9000\"\n", "dir/x.toml");
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].file, "dir/x.toml");
    EXPECT_EQ(r.errors[0].line, 4);
    EXPECT_EQ(r.errors[0].key, "expect.mtu");
    EXPECT_EQ(r.errors[0].problem, "expected an integer, got a string");
}

// The probe data port on the HTTP port: --check-config said ok and the daemon then failed to
// bind. Refused at the line that set it, whichever of the two it was, and from the command line.
TEST(ConfigErrors, ProbeDataPortOnTheHttpPort) {
    auto r = parse_config("[daemon]\nlisten = \"127.0.0.1:19993\"\n[probes]\ndata_port = 19993\ntoken_file = \"/t\"\n",
                          "c.toml");
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].line, 4);
    EXPECT_EQ(r.errors[0].key, "probes.data_port");
    EXPECT_NE(r.errors[0].problem.find("the HTTP API listens on"), std::string::npos) << r.errors[0].problem;
    r = parse_config("[daemon]\nlisten = \":9880\"\n[probes]\ntoken_file = \"/t\"\n", "c.toml");  // its default
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].line, 2);
    EXPECT_EQ(r.errors[0].key, "daemon.listen");
    EXPECT_EQ(errors_of("[probes]\ndata_port = 9879\ntoken_file = \"/t\"\n").size(), 1u) << "the listen default";
    EXPECT_TRUE(errors_of("[daemon]\nlisten = \":19993\"\n[probes]\ndata_port = 19994\ntoken_file = \"/t\"\n").empty());
    // Without a token file the data port is not opened: a config that ran before still loads.
    EXPECT_TRUE(errors_of("[daemon]\nlisten = \":9880\"\n").empty());
    r = parse_config("[probes]\ntoken_file = \"/t\"\n", "c.toml");
    ASSERT_TRUE(r.config);
    EXPECT_TRUE(load_config(std::nullopt, ConfigOverrides{.listen = "127.0.0.1:9880"}).config)
        << "no token file, no data port";
    // --listen onto the data port of a file that asks for probing.
    const auto path = std::filesystem::temp_directory_path() / ("rw-clash-" + std::to_string(::getpid()) + ".toml");
    std::ofstream(path) << "[probes]\ntoken_file = \"/t\"\n";
    const auto flag = load_config(path.string(), ConfigOverrides{.listen = "127.0.0.1:9880"});
    std::filesystem::remove(path);
    EXPECT_FALSE(flag.config);
    ASSERT_EQ(flag.errors.size(), 1u);
    EXPECT_EQ(flag.errors[0].key, "--listen");
}

// The token the README recommends comes as the unit's credential, not a token_file: the clash
// was not seen then, --check-config said ok and the daemon failed to bind its own port.
TEST(ConfigErrors, ProbeDataPortOnTheHttpPortWithTheTokenAsACredential) {
    const auto dir = std::filesystem::temp_directory_path() / ("rw-creds-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const char* was = std::getenv("CREDENTIALS_DIRECTORY");
    const std::string saved = was ? was : "";
    ::setenv("CREDENTIALS_DIRECTORY", dir.c_str(), 1);
    EXPECT_TRUE(errors_of("[daemon]\nlisten = \":9880\"\n").empty()) << "no credential there: no data port";
    std::ofstream(dir / "rocewatch-peer-token") << std::string(64, 'a') << "\n";
    EXPECT_EQ(errors_of("[daemon]\nlisten = \":9880\"\n").size(), 1u) << "the credential turns probing on";
    if (was)
        ::setenv("CREDENTIALS_DIRECTORY", saved.c_str(), 1);
    else
        ::unsetenv("CREDENTIALS_DIRECTORY");
    std::filesystem::remove_all(dir);
}

// probes.latency_threshold is whole milliseconds; a kind's own limit takes microseconds.
TEST(ConfigErrors, MicrosecondsOnTheMillisecondLatencyThresholdSayWhereTheyGo) {
    EXPECT_EQ(errors_of("[probes]\nlatency_threshold = \"500us\"\n"),
              (Lines{"t.toml:2: probes.latency_threshold: \"500us\" is finer than this key's milliseconds: write at "
                     "least \"1ms\", or give the kind its own limit in microseconds ([probes.tcp_lat] "
                     "latency_threshold = \"500us\")"}));
    EXPECT_TRUE(errors_of("[probes]\nlatency_threshold = \"2ms\"\n").empty());
}

// A name listed twice, and a rail that is also ignored (judged by nothing: the node passed as
// healthy with that rail down).
TEST(ConfigErrors, ARailTwiceOrARailIgnoredIsRefused) {
    EXPECT_EQ(errors_of("[expect]\nrails = [\"r0\", \"r0\"]\n"),
              (Lines{"t.toml:2: expect.rails[1]: \"r0\" is listed twice"}));
    EXPECT_EQ(errors_of("[expect]\nrails = [\"r0\", \"r1\"]\nignore_devices = [\"r1\"]\n"),
              (Lines{"t.toml:3: expect.ignore_devices: \"r1\" is in expect.rails too: a rail is judged, an ignored "
                     "device is not"}));
    EXPECT_TRUE(errors_of("[expect]\nrails = [\"r0\"]\nignore_devices = [\"r1\"]\n").empty());
}

// One --check-config names every mistake: the flags' errors were hidden until the file's were
// fixed. An empty --config= is a flag error, not ": cannot read".
TEST(ConfigErrors, FlagErrorsAreReportedWithTheFilesAndAnEmptyConfigPathIsOne) {
    const auto path = std::filesystem::temp_directory_path() / ("rw-both-" + std::to_string(::getpid()) + ".toml");
    std::ofstream(path) << "[daemon]\ninterval = \"1x\"\n";
    const auto r = load_config(path.string(), ConfigOverrides{.listen = "nonsense", .log_level = "loud"});
    std::filesystem::remove(path);
    EXPECT_FALSE(r.config);
    ASSERT_EQ(r.errors.size(), 3u);
    EXPECT_EQ(r.errors[0].key, "daemon.interval");
    EXPECT_EQ(r.errors[1].key, "--listen");
    EXPECT_EQ(r.errors[2].key, "--log-level");
    const auto empty = load_config(std::string(), ConfigOverrides{});
    EXPECT_FALSE(empty.config);
    ASSERT_EQ(empty.errors.size(), 1u);
    EXPECT_EQ(empty.errors[0].to_string(), "command line: --config: must not be empty");
}

TEST(ConfigErrors, UnknownTopLevelTable) {
    EXPECT_EQ(errors_of("[peer]\nspark-2 = \"192.168.100.12\"\n"),
              (Lines{"t.toml:1: peer: unknown table; did you mean \"peers\"? Valid tables: daemon, expect, metrics, "
                     "thresholds, rules, probes, cluster, peers, alertmanager"}));
    EXPECT_EQ(errors_of("\n[deamon]\nlisten = \":1\"\n"),
              (Lines{
                  "t.toml:2: deamon: unknown table; did you mean \"daemon\"? "
                  "Valid tables: daemon, expect, metrics, thresholds, rules, probes, cluster, peers, alertmanager"}));
    EXPECT_EQ(errors_of("interval = \"5s\"\n"),
              (Lines{"t.toml:1: interval: unknown key; settings belong in a table: "
                     "daemon, expect, metrics, thresholds, rules, probes, cluster, peers, alertmanager"}));
}

TEST(ConfigErrors, KnownTableOfTheWrongType) {
    EXPECT_EQ(errors_of("daemon = 5\n"), (Lines{"t.toml:1: daemon: expected a table, got an integer"}));
    EXPECT_EQ(errors_of("[[expect]]\nmtu = 9000\n"), (Lines{"t.toml:1: expect: expected a table, got an array"}));
    EXPECT_EQ(errors_of("[rules]\nmtu_low = true\n"),
              (Lines{"t.toml:2: rules.mtu_low: expected a table, got a boolean"}));
}

TEST(ConfigErrors, UnknownKeyInKnownTable) {
    EXPECT_EQ(errors_of("[daemon]\nlisten_on = \":1\"\n"),
              (Lines{"t.toml:2: daemon.listen_on: unknown key; valid keys: listen, interval, state_dir, "
                     "sysfs_root, procfs_root, lldpd_socket, log_level, http_threads, http_timeout, history_limit, "
                     "web_config_file"}));
    EXPECT_EQ(errors_of("[expect]\nmtu = 9000\nrail = []\n"),
              (Lines{"t.toml:3: expect.rail: unknown key; did you mean \"rails\"? Valid keys: mtu, "
                     "port_rate_gbps, roce_active_mtu, rails, ignore_devices, interfaces"}));
    EXPECT_EQ(errors_of("[thresholds]\ncnp = 5\n"),
              (Lines{"t.toml:2: thresholds.cnp: unknown key; valid keys: symbol_error_per_hour, "
                     "local_ack_timeout_per_second, cnp_per_second, ecn_marked_per_second, "
                     "pause_frames_per_second, pre_fec_ber, flap_transitions, flap_window, counter_window"}));
    EXPECT_EQ(errors_of("[rules.mtu_low]\nfor_duration = \"1s\"\n"),
              (Lines{"t.toml:2: rules.mtu_low.for_duration: unknown key; valid keys: enabled, for, "
                     "clear_after, severity"}));
    EXPECT_EQ(errors_of("[daemon.tls]\ncert = \"x\"\n"),
              (Lines{"t.toml:1: daemon.tls: unknown key; valid keys: listen, interval, state_dir, "
                     "sysfs_root, procfs_root, lldpd_socket, log_level, http_threads, http_timeout, history_limit, "
                     "web_config_file"}));
}

TEST(ConfigErrors, WrongType) {
    EXPECT_EQ(errors_of("[expect]\nmtu = \"9000\"\n"),
              (Lines{"t.toml:2: expect.mtu: expected an integer, got a string"}));
    EXPECT_EQ(errors_of("[expect]\nmtu = 9000.0\n"),
              (Lines{"t.toml:2: expect.mtu: expected an integer, got a floating-point number"}));
    EXPECT_EQ(errors_of("[expect]\nport_rate_gbps = \"100G\"\n"),
              (Lines{"t.toml:2: expect.port_rate_gbps: expected a number, got a string"}));
    EXPECT_EQ(errors_of("[expect]\nrails = \"rocep1s0f0\"\n"),
              (Lines{"t.toml:2: expect.rails: expected an array of names, got a string"}));
    EXPECT_EQ(errors_of("[expect]\nrails = [\n  \"rocep1s0f0\",\n  1,\n]\n"),
              (Lines{"t.toml:4: expect.rails[1]: expected a string, got an integer"}));
    EXPECT_EQ(errors_of("[daemon]\nlisten = 9879\n"),
              (Lines{"t.toml:2: daemon.listen: expected a string, got an integer"}));
    EXPECT_EQ(errors_of("[daemon]\ninterval = 5\n"),
              (Lines{"t.toml:2: daemon.interval: expected a duration string such as \"5s\", got an integer"}));
    EXPECT_EQ(errors_of("[daemon]\ninterval = 00:00:05\n"),
              (Lines{"t.toml:2: daemon.interval: expected a duration string such as \"5s\", got a time"}));
    EXPECT_EQ(errors_of("[rules.port_down]\nenabled = \"no\"\n"),
              (Lines{"t.toml:2: rules.port_down.enabled: expected a boolean (true or false), got a string"}));
    EXPECT_EQ(errors_of("[rules.port_down]\nseverity = 2\n"),
              (Lines{"t.toml:2: rules.port_down.severity: expected a string, got an integer"}));
    EXPECT_EQ(errors_of("[daemon]\nstate_dir = { path = \"/x\" }\n"),
              (Lines{"t.toml:2: daemon.state_dir: expected a string, got a table"}));
}

TEST(ConfigErrors, OutOfRange) {
    EXPECT_EQ(errors_of("[expect]\nmtu = 67\n"), (Lines{"t.toml:2: expect.mtu: 67 is out of range 68..65535"}));
    EXPECT_EQ(errors_of("[expect]\nmtu = 65536\n"), (Lines{"t.toml:2: expect.mtu: 65536 is out of range 68..65535"}));
    EXPECT_TRUE(errors_of("[expect]\nmtu = 68\n").empty());
    EXPECT_TRUE(errors_of("[expect]\nmtu = 65535\n").empty());
    EXPECT_EQ(errors_of("[daemon]\ninterval = \"99ms\"\n"),
              (Lines{"t.toml:2: daemon.interval: 99ms is below the minimum 100ms"}));
    EXPECT_TRUE(errors_of("[daemon]\ninterval = \"100ms\"\n").empty());
    EXPECT_EQ(errors_of("[daemon]\nhttp_threads = 0\n"),
              (Lines{"t.toml:2: daemon.http_threads: 0 is out of range 1..64"}));
    EXPECT_EQ(errors_of("[daemon]\nhttp_threads = 65\n"),
              (Lines{"t.toml:2: daemon.http_threads: 65 is out of range 1..64"}));
    EXPECT_TRUE(errors_of("[daemon]\nhttp_threads = 64\n").empty());
    EXPECT_EQ(errors_of("[daemon]\nhttp_timeout = \"10ms\"\n"),
              (Lines{"t.toml:2: daemon.http_timeout: 10ms is below the minimum 100ms"}));
    EXPECT_EQ(errors_of("[daemon]\nhistory_limit = -1\n"),
              (Lines{"t.toml:2: daemon.history_limit: -1 is out of range 0..1000000"}));
    EXPECT_EQ(errors_of("[daemon]\nlisten = \":65536\"\n"),
              (Lines{
                  "t.toml:2: daemon.listen: \":65536\" is not a listen address: port 65536 is out of range 1..65535"}));
    EXPECT_EQ(errors_of("[daemon]\nlisten = \":0\"\n"),
              (Lines{"t.toml:2: daemon.listen: \":0\" is not a listen address: port 0 is out of range 1..65535"}));
    EXPECT_EQ(errors_of("[thresholds]\ncnp_per_second = -1\n"),
              (Lines{"t.toml:2: thresholds.cnp_per_second: -1 is out of range (must be >= 0)"}));
    EXPECT_EQ(errors_of("[thresholds]\nlocal_ack_timeout_per_second = -0.5\n"),
              (Lines{"t.toml:2: thresholds.local_ack_timeout_per_second: -0.5 is out of range (must be >= 0)"}));
    EXPECT_EQ(errors_of("[thresholds]\necn_marked_per_second = nan\n"),
              (Lines{"t.toml:2: thresholds.ecn_marked_per_second: nan is not a finite number"}));
    EXPECT_TRUE(errors_of("[thresholds]\nsymbol_error_per_hour = 0\n").empty()) << "0 = any error counts";
    EXPECT_TRUE(errors_of("[thresholds]\ncnp_per_second = 9223372036854775807\n").empty())
        << "an integer no double holds exactly is still a number";
    EXPECT_EQ(errors_of("[thresholds]\nflap_transitions = 0\n"),
              (Lines{"t.toml:2: thresholds.flap_transitions: 0 is out of range 1..4294967295"}));
    EXPECT_EQ(errors_of("[thresholds]\nflap_window = \"500ms\"\n"),
              (Lines{"t.toml:2: thresholds.flap_window: 500ms is below the minimum 1s"}));
    EXPECT_EQ(errors_of("[expect]\nport_rate_gbps = 0\n"),
              (Lines{"t.toml:2: expect.port_rate_gbps: 0 is out of range (must be > 0)"}));
    EXPECT_EQ(errors_of("[expect]\nroce_active_mtu = 1500\n"),
              (Lines{"t.toml:2: expect.roce_active_mtu: 1500 is not a RoCE MTU (256, 512, 1024, 2048, 4096)"}));
}

TEST(ConfigErrors, BadDuration) {
    for (const char* bad : {"5 s", "5", "1.5s", "-1m", "1d", "30m1h", "0m"}) {
        EXPECT_EQ(errors_of("[thresholds]\ncounter_window = \"" + std::string(bad) + "\"\n"),
                  (Lines{"t.toml:2: thresholds.counter_window: \"" + std::string(bad) +
                         "\" is not a duration (write e.g. \"500ms\", \"5s\", \"1m\", \"1h30m\"; zero is \"0s\")"}));
    }
    EXPECT_EQ(errors_of("[rules.congestion]\nfor = \"soon\"\n"),
              (Lines{"t.toml:2: rules.congestion.for: \"soon\" is not a duration (write e.g. \"500ms\", \"5s\", "
                     "\"1m\", \"1h30m\"; zero is \"0s\")"}));
}

// A long bad value is quoted in part (a 900 KB log_level was printed whole), and a cut through
// a UTF-8 character does not throw.
TEST(ConfigErrors, LongValuesAreQuotedInPart) {
    EXPECT_EQ(errors_of("[daemon]\nlog_level = \"" + std::string(900000, 'x') + "\"\n"),
              (Lines{"t.toml:2: daemon.log_level: \"" + std::string(256, 'x') +
                     "\"... (900000 bytes) is not a log level (trace, debug, info, warn, error, critical, off)"}));
    const auto cut = errors_of("[daemon]\nlog_level = \"" + std::string(255, 'x') + "\u00e9\u00e9\"\n");
    ASSERT_EQ(cut.size(), 1u);
    EXPECT_NE(cut[0].find("... (259 bytes) is not a log level"), std::string::npos) << cut[0];
}

// "2562048h" fits a Duration in milliseconds but overflows steady_clock's nanoseconds once
// added to now(): every duration key has an upper bound, named in the error.
TEST(ConfigErrors, EveryDurationHasAMaximum) {
    const std::pair<std::string, std::string> keys[] = {
        {"daemon", "interval"},           {"daemon", "http_timeout"},     {"thresholds", "flap_window"},
        {"thresholds", "counter_window"}, {"rules.port_down", "for"},     {"rules.port_down", "clear_after"},
        {"probes", "latency_threshold"},  {"probes.tcp_lat", "interval"}, {"probes.tcp_lat", "jitter"},
        {"probes.tcp_lat", "timeout"},    {"probes.tcp_bw", "duration"},  {"probes.rdma_lat", "interval"},
    };
    for (const auto& [table, key] : keys) {
        for (const char* huge : {"2562048h", "9999999999h"}) {
            auto errs = errors_of("[" + table + "]\n" + key + " = \"" + huge + "\"\n");
            ASSERT_EQ(errs.size(), 1u) << table << "." << key << " = " << huge;
            EXPECT_TRUE(errs[0].starts_with("t.toml:2: " + table + "." + key + ": ")) << errs[0];
            EXPECT_NE(errs[0].find("is above the maximum"), std::string::npos) << errs[0];
        }
    }
    // The bounds themselves, and one step over them.
    EXPECT_TRUE(errors_of("[daemon]\ninterval = \"1h\"\nhttp_timeout = \"5m\"\n").empty());
    EXPECT_EQ(errors_of("[daemon]\ninterval = \"61m\"\n"),
              (Lines{"t.toml:2: daemon.interval: 1h1m is above the maximum 1h"}));
    EXPECT_EQ(errors_of("[rules.congestion]\nfor = \"169h\"\n"),
              (Lines{"t.toml:2: rules.congestion.for: 169h is above the maximum 168h"}));
    EXPECT_EQ(errors_of("[probes.tcp_lat]\ninterval = \"24h\"\ntimeout = \"6m\"\n"),
              (Lines{"t.toml:3: probes.tcp_lat.timeout: 6m is above the maximum 5m"}));
}

// toml++ recurses once per key part: a few thousand overflow the stack. The file is refused
// before it reaches the parser, with the line that nests too deep.
TEST(ConfigErrors, DeepNestingIsAnErrorNotACrash) {
    std::string parts;
    for (int i = 0; i < 100000; ++i) parts += "a.";  // 200 KB: crashed toml++ at 8 MiB of stack
    parts += "z";
    auto deep_header = errors_of("[daemon]\ninterval = \"5s\"\n[" + parts + "]\nx = 1\n");
    ASSERT_EQ(deep_header.size(), 1u);
    EXPECT_TRUE(deep_header[0].starts_with("t.toml:3: more than 64 dotted key parts")) << deep_header[0];
    auto deep_key = errors_of("# a comment\n" + parts + " = 1\n");
    ASSERT_EQ(deep_key.size(), 1u);
    EXPECT_TRUE(deep_key[0].starts_with("t.toml:2: more than 64 dotted key parts")) << deep_key[0];
    auto deep_array = errors_of("x = " + std::string(20000, '[') + std::string(20000, ']') + "\n");
    ASSERT_EQ(deep_array.size(), 1u);
    EXPECT_TRUE(deep_array[0].starts_with("t.toml:1: arrays or inline tables nested deeper than 32")) << deep_array[0];
    auto deep_inline = errors_of("x = " + std::string(20000, '{'));
    ASSERT_EQ(deep_inline.size(), 1u);
    // Dots and brackets inside strings and comments are not nesting: the file is judged as usual.
    std::string dots(200, '.');
    EXPECT_EQ(errors_of("# " + dots + "[[[[{{{{\n[daemon] # " + dots + "\nstate_dir = \"/tmp/" + dots +
                        "\"\nsysfs_root = '/x" + dots + "'\nprocfs_root = \"\"\"\n" + dots + "\n\\\"\"\"\"\n"),
              (Lines{}));
}

TEST(ConfigErrors, BadLatencyThreshold) {
    for (const char* bad : {"0us", "20", "1.5ms", "20 us", "2m", "61s", "us"}) {
        EXPECT_EQ(errors_of("[probes.rdma_lat]\nlatency_threshold = \"" + std::string(bad) + "\"\n"),
                  (Lines{"t.toml:2: probes.rdma_lat.latency_threshold: \"" + std::string(bad) +
                         "\" is not a latency threshold (whole \"us\", \"ms\" or \"s\" above zero, at most 60s: "
                         "e.g. \"20us\", \"2ms\")"}));
    }
}

TEST(ConfigValues, LatencyThresholdSpellings) {
    EXPECT_EQ(parse_latency("20us"), LatencyLimit{20});
    EXPECT_EQ(parse_latency("1500us"), LatencyLimit{1500});
    EXPECT_EQ(parse_latency("2ms"), LatencyLimit{2000});
    EXPECT_EQ(parse_latency("1s"), LatencyLimit{1'000'000});
    EXPECT_EQ(format_latency(LatencyLimit{20}), "20us");
    EXPECT_EQ(format_latency(LatencyLimit{1500}), "1500us");
    EXPECT_EQ(format_latency(LatencyLimit{2000}), "2ms");
    EXPECT_EQ(format_latency(LatencyLimit{3'000'000}), "3s");
}

TEST(ConfigErrors, BadListenAddress) {
    for (const char* good : {"0.0.0.0:9879", ":9879", "[::]:9879", "[::1]:1", "localhost:8080", "127.0.0.1:65535"})
        EXPECT_TRUE(errors_of("[daemon]\nlisten = \"" + std::string(good) + "\"\n").empty()) << good;
    EXPECT_EQ(errors_of("[daemon]\nlisten = \"9879\"\n"),
              (Lines{"t.toml:2: daemon.listen: \"9879\" is not a listen address: expected \"host:port\", "
                     "\"[v6]:port\" or \":port\""}));
    EXPECT_EQ(errors_of("[daemon]\nlisten = \"::1:9879\"\n"),
              (Lines{"t.toml:2: daemon.listen: \"::1:9879\" is not a listen address: an IPv6 address needs "
                     "brackets: \"[address]:port\""}));
    EXPECT_EQ(errors_of("[daemon]\nlisten = \"[fe80::zz]:80\"\n"),
              (Lines{"t.toml:2: daemon.listen: \"[fe80::zz]:80\" is not a listen address: \"fe80::zz\" is not "
                     "an IPv6 address"}));
    EXPECT_EQ(errors_of("[daemon]\nlisten = \"256.0.0.1:80\"\n"),
              (Lines{"t.toml:2: daemon.listen: \"256.0.0.1:80\" is not a listen address: \"256.0.0.1\" is not "
                     "a host name or IPv4 address"}));
    EXPECT_EQ(errors_of("[daemon]\nlisten = \"host:http\"\n"),
              (Lines{"t.toml:2: daemon.listen: \"host:http\" is not a listen address: \"http\" is not a port number"}));
}

TEST(ConfigErrors, BadLogLevel) {
    for (const char* good : {"trace", "debug", "info", "warn", "error", "critical", "off"})
        EXPECT_TRUE(errors_of("[daemon]\nlog_level = \"" + std::string(good) + "\"\n").empty()) << good;
    EXPECT_EQ(errors_of("[daemon]\nlog_level = \"warning\"\n"),
              (Lines{"t.toml:2: daemon.log_level: \"warning\" is not a log level (trace, debug, info, warn, "
                     "error, critical, off)"}));
}

TEST(ConfigErrors, UnknownRuleIdListsTheValidOnes) {
    const std::string valid = kRuleIds;
    EXPECT_EQ(errors_of("[rules.mtu_lo]\nenabled = false\n"),
              (Lines{"t.toml:1: rules.mtu_lo: unknown rule id; did you mean \"mtu_low\"? Valid rule ids: " + valid}));
    EXPECT_EQ(errors_of("[rules.everything]\nenabled = false\n"),
              (Lines{"t.toml:1: rules.everything: unknown rule id; valid rule ids: " + valid}));
    for (const auto& id : all_rule_ids()) EXPECT_TRUE(errors_of("[rules." + id + "]\nenabled = false\n").empty()) << id;
}

TEST(ConfigErrors, BadSeverity) {
    EXPECT_EQ(errors_of("[rules.peermem_missing]\nseverity = \"fatal\"\n"),
              (Lines{
                  "t.toml:2: rules.peermem_missing.severity: \"fatal\" is not a severity (info, warning, critical)"}));
    for (const char* good : {"info", "warning", "critical"})
        EXPECT_TRUE(errors_of("[rules.port_down]\nseverity = \"" + std::string(good) + "\"\n").empty()) << good;
}

TEST(ConfigErrors, BadNamesAndEmptyPaths) {
    EXPECT_EQ(errors_of("[expect]\nignore_devices = [\"../../etc\", \"\", \"ok\", \"a b\"]\n"),
              (Lines{"t.toml:2: expect.ignore_devices[0]: \"../../etc\" is not a device or interface name",
                     "t.toml:2: expect.ignore_devices[1]: \"\" is not a device or interface name",
                     "t.toml:2: expect.ignore_devices[3]: \"a b\" is not a device or interface name"}));
    EXPECT_EQ(errors_of("[daemon]\nsysfs_root = \"\"\n"), (Lines{"t.toml:2: daemon.sysfs_root: must not be empty"}));
}

TEST(ConfigErrors, AllReportedAtOnceInFileOrder) {
    auto errors = errors_of(R"([thresholds]
flap_transitions = -3
cnp_per_second = "many"

[daemon]
listen = "nowhere"
log_level = "loud"
interval = "1x"

[rules.port_down]
severity = "urgent"

[rules.port_up]

[extras]
)");
    EXPECT_EQ(errors, (Lines{
                          "t.toml:2: thresholds.flap_transitions: -3 is out of range 1..4294967295",
                          "t.toml:3: thresholds.cnp_per_second: expected a number, got a string",
                          "t.toml:6: daemon.listen: \"nowhere\" is not a listen address: expected \"host:port\", "
                          "\"[v6]:port\" or \":port\"",
                          "t.toml:7: daemon.log_level: \"loud\" is not a log level (trace, debug, info, warn, "
                          "error, critical, off)",
                          "t.toml:8: daemon.interval: \"1x\" is not a duration (write e.g. \"500ms\", \"5s\", "
                          "\"1m\", \"1h30m\"; zero is \"0s\")",
                          "t.toml:11: rules.port_down.severity: \"urgent\" is not a severity (info, warning, critical)",
                          "t.toml:13: rules.port_up: unknown rule id; valid rule ids: " + kRuleIds,
                          "t.toml:15: extras: unknown table; valid tables: daemon, expect, metrics, thresholds, rules, "
                          "probes, cluster, peers, alertmanager",
                      }));
}

// ---------------------------------------------------------------- files

TEST(ConfigFile, UnreadableFileIsOneErrorNamingIt) {
    std::string missing = rocewatch::testing::fixtures_dir() + "/config/does-not-exist.toml";
    auto r = load_config_file(missing);
    EXPECT_FALSE(r.config);
    EXPECT_EQ(errors_of(r), (Lines{missing + ": cannot read: No such file or directory"}));
    EXPECT_EQ(errors_of(load_config_file(rocewatch::testing::fixtures_dir())),
              (Lines{rocewatch::testing::fixtures_dir() + ": cannot read: Is a directory"}));
    EXPECT_EQ(errors_of(load_config_file("/dev/zero")), (Lines{"/dev/zero: larger than 1 MiB; not a config file"}));
}

// A FIFO nobody writes to was a daemon (or --check-config) waiting forever in open(); the pipe
// of `--config <(...)` and a FIFO that is written to load as a file does.
TEST(ConfigFile, FifoWithoutAWriterIsAnErrorAndPipesStillLoad) {
    const auto dir = std::filesystem::temp_directory_path() / ("rw-fifo-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string fifo = (dir / "rocewatch.toml").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = load_config_file(fifo, std::chrono::milliseconds(300));
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_FALSE(r.config);
    EXPECT_EQ(errors_of(r), (Lines{fifo + ": a FIFO nothing was written to within 300 ms"}));
    EXPECT_LT(took, std::chrono::seconds(5));

    // A writer that comes: its config is read to the end.
    std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::ofstream(fifo) << "[daemon]\nlog_level = \"debug\"\n";
    });
    r = load_config_file(fifo, std::chrono::seconds(5));
    writer.join();
    ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : errors_of(r)[0]);
    EXPECT_EQ(r.config->daemon.log_level, "debug");

    // A writer that writes half and stalls, its end still open (`<(cat f; sleep inf)`).
    std::thread staller([&] {
        std::ofstream f(fifo);
        f << "[daemon]\n" << std::flush;
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
    });
    r = load_config_file(fifo, std::chrono::milliseconds(300));
    staller.join();
    EXPECT_FALSE(r.config);
    EXPECT_EQ(errors_of(r), (Lines{fifo + ": not a file, and it did not come to its end within 300 ms"}));

    // An anonymous pipe named through /proc/self/fd, as bash's <(...) hands it over.
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    const std::string text = "[daemon]\nlog_level = \"warn\"\n";
    ASSERT_EQ(::write(p[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(p[1]);
    r = load_config_file("/proc/self/fd/" + std::to_string(p[0]));
    ::close(p[0]);
    ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : errors_of(r)[0]);
    EXPECT_EQ(r.config->daemon.log_level, "warn");
    std::filesystem::remove_all(dir);
}

TEST(ConfigFile, ErrorsNameTheFile) {
    auto errors = errors_of(load_config_file(rocewatch::testing::fixtures_dir() + "/config/bad-types.toml"));
    ASSERT_FALSE(errors.empty());
    EXPECT_TRUE(errors[0].starts_with(rocewatch::testing::fixtures_dir() + "/config/bad-types.toml:3: ")) << errors[0];
}

TEST(ConfigFile, ExampleConfigsParseCleanly) {
    auto minimal = load_config_file(source_root() + "/config/minimal.toml");
    ASSERT_TRUE(minimal.config) << errors_of(minimal)[0];
    EXPECT_EQ(effective(*minimal.config), effective(default_config()));

    auto example = load_config_file(source_root() + "/config/rocewatch.toml");
    ASSERT_TRUE(example.config) << errors_of(example)[0];
    EXPECT_EQ(example.config->source, source_root() + "/config/rocewatch.toml");
    // The example shows every key at its default, except what it says about the DGX Spark pair.
    Config spark = default_config();
    spark.expect.port_rate_gbps = 100;
    spark.expect.rails = {"rocep1s0f0", "rocep1s0f1"};
    spark.expect.ignore_devices = {"roceP2p1s0f0"};
    spark.rules["peermem_missing"].enabled = false;  // no GPUDirect RDMA on unified memory
    // no token_file: under the shipped unit the token is the systemd credential
    spark.probes.enabled = {"tcp_lat",           "tcp_bw",      "rdma_write_lat", "rdma_write_bw",
                            "rdma_multirail_bw", "ucx_put_lat", "ucx_put_bw"};
    spark.peers = {PeerConfig{
        .name = "spark-b",
        .address = "spark-b:9879",
        .rails = {{"rail0", "enp1s0f0np0", "192.168.100.11", "192.168.100.12", "rocep1s0f0", "rocep1s0f0"},
                  {"rail1", "enp1s0f1np1", "192.168.101.11", "192.168.101.12", "rocep1s0f1", "rocep1s0f1"}}}};
    EXPECT_EQ(effective(*example.config), effective(spark));
}

TEST(ConfigFile, BadSyntaxFixture) {
    auto errors = fixture_errors("bad-syntax.toml");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_TRUE(errors[0].starts_with("bad-syntax.toml:4: ")) << errors[0];
}

TEST(ConfigFile, UnknownKeyFixture) {
    EXPECT_EQ(fixture_errors("unknown-key.toml"),
              (Lines{
                  "unknown-key.toml:2: listen: unknown key; settings belong in a table: daemon, expect, metrics, "
                  "thresholds, rules, probes, cluster, peers, alertmanager",
                  "unknown-key.toml:5: daemon.intervall: unknown key; did you mean \"interval\"? Valid keys: listen, "
                  "interval, state_dir, sysfs_root, procfs_root, lldpd_socket, log_level, http_threads, http_timeout, "
                  "history_limit, "
                  "web_config_file",
                  "unknown-key.toml:9: expect.rail: unknown key; did you mean \"rails\"? Valid keys: mtu, "
                  "port_rate_gbps, roce_active_mtu, rails, ignore_devices, interfaces",
                  "unknown-key.toml:11: alerts: unknown table; valid tables: daemon, expect, metrics, thresholds, "
                  "rules, probes, cluster, peers, alertmanager",
              }));
}

TEST(ConfigFile, BadTypesFixture) {
    EXPECT_EQ(fixture_errors("bad-types.toml"),
              (Lines{
                  "bad-types.toml:3: daemon.interval: expected a duration string such as \"5s\", got an integer",
                  "bad-types.toml:4: daemon.http_threads: expected an integer, got a string",
                  "bad-types.toml:7: expect.mtu: expected an integer, got a floating-point number",
                  "bad-types.toml:8: expect.rails: expected an array of names, got a string",
                  "bad-types.toml:9: expect.ignore_devices[1]: expected a string, got an integer",
                  "bad-types.toml:12: thresholds.cnp_per_second: expected a number, got a string",
                  "bad-types.toml:15: rules.mtu_low.enabled: expected a boolean (true or false), got a string",
              }));
}

TEST(ConfigFile, OutOfRangeFixture) {
    EXPECT_EQ(fixture_errors("out-of-range.toml"),
              (Lines{
                  "out-of-range.toml:3: daemon.listen: \"0.0.0.0:98790\" is not a listen address: port 98790 is "
                  "out of range 1..65535",
                  "out-of-range.toml:4: daemon.interval: 50ms is below the minimum 100ms",
                  "out-of-range.toml:5: daemon.http_threads: 0 is out of range 1..64",
                  "out-of-range.toml:6: daemon.history_limit: -1 is out of range 0..1000000",
                  "out-of-range.toml:9: expect.mtu: 67 is out of range 68..65535",
                  "out-of-range.toml:10: expect.roce_active_mtu: 1500 is not a RoCE MTU (256, 512, 1024, 2048, 4096)",
                  "out-of-range.toml:11: expect.port_rate_gbps: 0 is out of range (must be > 0)",
                  "out-of-range.toml:14: thresholds.cnp_per_second: -1 is out of range (must be >= 0)",
                  "out-of-range.toml:15: thresholds.symbol_error_per_hour: -0.5 is out of range (must be >= 0)",
                  "out-of-range.toml:16: thresholds.flap_transitions: 0 is out of range 1..4294967295",
              }));
}

TEST(ConfigFile, BadValuesFixture) {
    auto errors = fixture_errors("bad-values.toml");
    ASSERT_EQ(errors.size(), 7u);
    EXPECT_EQ(errors[0], "bad-values.toml:3: daemon.listen: \"localhost\" is not a listen address: expected "
                         "\"host:port\", \"[v6]:port\" or \":port\"");
    EXPECT_TRUE(errors[1].starts_with("bad-values.toml:4: daemon.interval: \"5 seconds\" is not a duration"));
    EXPECT_TRUE(errors[2].starts_with("bad-values.toml:5: daemon.log_level: \"verbose\" is not a log level"));
    EXPECT_TRUE(errors[3].starts_with("bad-values.toml:8: thresholds.flap_window: \"1h1h\" is not a duration"));
    EXPECT_TRUE(errors[4].starts_with("bad-values.toml:10: rules.mtu_lo: unknown rule id; did you mean \"mtu_low\"?"));
    EXPECT_EQ(errors[5],
              "bad-values.toml:14: rules.port_down.severity: \"fatal\" is not a severity (info, warning, critical)");
    EXPECT_TRUE(errors[6].starts_with("bad-values.toml:15: rules.port_down.clear_after: \"-1m\" is not a duration"));
}

// [metrics] netdev filters: a regex that does not compile is an error naming file, line and
// key, never a surprise at the first scrape.
TEST(ConfigMetrics, NetdevFilters) {
    auto r = parse_config("[metrics]\nnetdev_include = \"^(en|ib)\"\nnetdev_exclude = \"^(veth|cali)\"\n", "t.toml");
    ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
    EXPECT_EQ(r.config->metrics.netdev_include, "^(en|ib)");
    EXPECT_EQ(r.config->metrics.netdev_exclude, "^(veth|cali)");
    EXPECT_EQ(parse_config("", "t.toml").config->metrics.netdev_exclude, "") << "the default excludes nothing";
    const auto bad = errors_of("[metrics]\n\nnetdev_exclude = \"^(veth\"\n");
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_EQ(bad[0].rfind("t.toml:3: metrics.netdev_exclude: \"^(veth\" is not a regular expression", 0), 0u)
        << bad[0];
    EXPECT_EQ(errors_of("[metrics]\nnetdev_include = 5\n"),
              (Lines{"t.toml:2: metrics.netdev_include: expected a string, got an integer"}));
    // 20,000 nested groups overflowed std::regex's recursive compiler (a crash, on a reload
    // too): past 512 bytes a pattern is refused before it is compiled.
    const std::string deep = std::string(20000, '(') + "a" + std::string(20000, ')');
    EXPECT_EQ(errors_of("[metrics]\nnetdev_include = \"" + deep + "\"\n"),
              (Lines{"t.toml:2: metrics.netdev_include: a regular expression of 40001 bytes; at most 512"}));
    // A huge count unrolls into as many NFA states: refused, however it is written.
    EXPECT_EQ(errors_of("[metrics]\nnetdev_include = \"a{99000}\"\n"),
              (Lines{"t.toml:2: metrics.netdev_include: \"a{99000}\" repeats something 99000 times; at most 64 (a "
                     "netdev name is at most 15 bytes)"}));
    EXPECT_EQ(errors_of("[metrics]\nnetdev_include = \"(ab){1,300}\"\n").size(), 1u) << "the upper bound too";
    for (const char* fine : {"^en[a-z]{2,4}[0-9]{1,3}$", "[{]999", "\\\\{999\\\\}", "(a{64}){2}"})
        EXPECT_TRUE(parse_config(std::string("[metrics]\nnetdev_include = \"") + fine + "\"\n", "t.toml").config)
            << fine << ": a brace that is not a count, or a count within the cap";
    const std::string wide = "^(" + std::string(250, 'a') + "|" + std::string(250, 'b') + ")$";
    EXPECT_TRUE(parse_config("[metrics]\nnetdev_exclude = \"" + wide + "\"\n", "t.toml").config)
        << "a long pattern within the cap is taken";
}

// --lldpd-socket lays its path over the file's ("" turns lldpd off); a path no Unix socket can
// have is an error naming the flag, as the key's is in a file.
TEST(ConfigFlags, LldpdSocketOverridesAndIsHeldToASocketPath) {
    auto off = load_config(std::nullopt, ConfigOverrides{.lldpd_socket = ""});
    ASSERT_TRUE(off.config);
    EXPECT_EQ(off.config->daemon.lldpd_socket, "");
    auto other = load_config(std::nullopt, ConfigOverrides{.lldpd_socket = "/run/lldpd/other.socket"});
    ASSERT_TRUE(other.config);
    EXPECT_EQ(other.config->daemon.lldpd_socket, "/run/lldpd/other.socket");
    const std::string long_path = "/run/" + std::string(103, 'x');  // 108 bytes
    auto bad = load_config(std::nullopt, ConfigOverrides{.lldpd_socket = long_path});
    EXPECT_FALSE(bad.config);
    ASSERT_EQ(bad.errors.size(), 1u);
    EXPECT_EQ(bad.errors[0].key, "--lldpd-socket");
    EXPECT_EQ(errors_of("[daemon]\nlldpd_socket = \"" + long_path + "\"\n"),
              (Lines{"t.toml:2: daemon.lldpd_socket: \"" + long_path +
                     "\" is longer than a Unix socket path can be (107 bytes)"}));
}

// A reload keeps what the daemon took at start, so the config it serves is the one in effect,
// and names what waits for a restart (the config view said the file's data port while the old
// one still served).
TEST(ConfigLoader, AReloadKeepsWhatIsTakenAtStartAndNamesIt) {
    Config running = default_config();
    running.probes.token_file = "/etc/rocewatch/token";
    Config next = running;
    next.probes.data_port = 19889;
    next.probes.token_file = "/etc/rocewatch/token2";
    next.daemon.state_dir = "/srv/rocewatch";
    next.daemon.interval = std::chrono::seconds(7);  // applies at once
    next.daemon.http_threads = 8;
    next.daemon.http_timeout = std::chrono::minutes(1);
    next.probes.data_listen = "";
    keep_start_only(next, running);
    EXPECT_EQ(next.probes.data_listen, std::nullopt);
    EXPECT_EQ(next.daemon.http_threads, running.daemon.http_threads);
    EXPECT_EQ(next.daemon.http_timeout, running.daemon.http_timeout);
    EXPECT_EQ(next.probes.data_port, running.probes.data_port);
    EXPECT_EQ(next.probes.token_file, "/etc/rocewatch/token");
    EXPECT_EQ(next.daemon.state_dir, running.daemon.state_dir);
    EXPECT_EQ(next.daemon.interval, std::chrono::seconds(7));
    ASSERT_EQ(next.restart_pending.size(), 6u);
    EXPECT_EQ(next.restart_pending[0],
              "daemon.state_dir: \"/srv/rocewatch\" in the file, \"/var/lib/rocewatch\" running");
    EXPECT_EQ(next.restart_pending[1], "daemon.http_threads: 8 in the file, 4 running");
    EXPECT_EQ(next.restart_pending[2], "daemon.http_timeout: \"1m\" in the file, \"5s\" running");
    EXPECT_EQ(next.restart_pending[3], "probes.data_port: 19889 in the file, 9880 running");
    EXPECT_EQ(next.restart_pending[4], "probes.data_listen: \"\" in the file, unset running");
    // The file put back as it was: nothing waits.
    Config again = running;
    keep_start_only(again, running);
    EXPECT_TRUE(again.restart_pending.empty());
}
