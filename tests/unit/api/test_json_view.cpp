// JSON views: field names, null for unknown values, counts and lookups on a sample node.
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>

#include "api/json_view.hpp"
#include "api/metrics.hpp"
#include "api/probe_view.hpp"
#include "api/text_format.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/probe.hpp"
#include "sample_snapshot.hpp"

using namespace rocewatch;
using namespace rocewatch::api;
using nlohmann::json;

TEST(JsonView, Rfc3339) {
    EXPECT_EQ(format_rfc3339(api_sample::sample_time()), "2025-03-01T12:00:00.000Z");
    EXPECT_EQ(format_rfc3339(api_sample::sample_time() + std::chrono::milliseconds(250)), "2025-03-01T12:00:00.250Z");
    EXPECT_EQ(format_rfc3339(TimePoint{}), "") << "the epoch means never";
}

TEST(JsonView, StatusCountsAndHealth) {
    const auto s = api_sample::sample_snapshot();
    const json j = status_json(s, api_sample::sample_time() + std::chrono::milliseconds(1500));
    EXPECT_EQ(j["health"], "critical");
    EXPECT_EQ(j["hostname"], "spark-a");
    EXPECT_EQ(j["version"], "0.1.0");
    EXPECT_EQ(j["generation"], 42);
    EXPECT_EQ(j["collected_at"], "2025-03-01T12:00:00.000Z");
    EXPECT_DOUBLE_EQ(j["collection_age_seconds"].get<double>(), 1.5);
    const auto& c = j["counts"];
    EXPECT_EQ(c["devices"], 3);
    EXPECT_EQ(c["ports"], 3);
    EXPECT_EQ(c["ports_up"], 3);
    EXPECT_EQ(c["links"], 7);
    EXPECT_EQ(c["links_up"], 6);
    EXPECT_EQ(c["bonds"], 1);
    EXPECT_EQ(c["alerts"]["total"], 4);
    EXPECT_EQ(c["alerts"]["by_severity"], json({{"info", 1}, {"warning", 2}, {"critical", 1}}));
    EXPECT_EQ(c["alerts"]["by_state"], json({{"pending", 1}, {"firing", 3}}));
    const auto& d = j["daemon"];
    EXPECT_EQ(d["ready"], true);
    EXPECT_EQ(d["config_source"], "/etc/rocewatch/rocewatch.toml");
    EXPECT_EQ(d["config_last_reload_ok"], false);
    EXPECT_EQ(d["config_last_errors"], json({"rules.mtu_lo: unknown rule"}));
    EXPECT_EQ(d["started_at"], "2025-03-01T11:50:00.000Z");
    EXPECT_DOUBLE_EQ(d["uptime_seconds"].get<double>(), 601.5);
    EXPECT_EQ(j["host"]["ucx_version"], "1.16.0");
    EXPECT_EQ(j["host"]["nvidia_peermem_loaded"], false);
    EXPECT_EQ(j["netlink"]["resyncs"], 1);
    ASSERT_EQ(j["collectors"].size(), 4u);
    EXPECT_EQ(j["collectors"][1]["last_error"], nullptr);
    EXPECT_EQ(j["collectors"][3]["success"], false);
}

TEST(JsonView, StatusOfEmptySnapshotHasNulls) {
    const json j = status_json(Snapshot{}, api_sample::sample_time());
    EXPECT_EQ(j["health"], "healthy");
    EXPECT_EQ(j["collected_at"], nullptr);
    EXPECT_EQ(j["collection_age_seconds"], nullptr);
    EXPECT_EQ(j["daemon"]["uptime_seconds"], nullptr);
    EXPECT_EQ(j["counts"]["alerts"]["by_severity"]["critical"], 0);
}

TEST(JsonView, DevicesAndMissingValues) {
    const auto s = api_sample::sample_snapshot();
    const json j = devices_json(s);
    EXPECT_EQ(j["generation"], 42);
    ASSERT_EQ(j["devices"].size(), 3u);
    const auto& rail = j["devices"][0];
    EXPECT_EQ(rail["name"], "rocep1s0f0");
    EXPECT_EQ(rail["fw_ver"], "28.45.1020");
    const auto& port = rail["ports"][0];
    EXPECT_EQ(port["port"], 1);
    EXPECT_EQ(port["state"], 4);
    EXPECT_EQ(port["up"], true);
    EXPECT_EQ(port["rate_bytes_per_second"], 100e9 / 8) << "bytes per second, as /metrics has it";
    EXPECT_FALSE(port.contains("rate_gbps"));
    EXPECT_EQ(port["active_mtu"], 1024);
    EXPECT_EQ(port["roce_v2_gid"], json({{"index", 3}, {"address", "192.168.100.11"}}));
    EXPECT_EQ(port["gids"].size(), 4u);
    EXPECT_EQ(port["gids"][3]["type"], "RoCE v2");
    EXPECT_EQ(port["counters"]["port_xmit_data"], 1522500000u);
    EXPECT_EQ(port["hw_counters"]["np_cnp_sent"], 12);
    EXPECT_EQ(port["xmit_bytes"], 6090000000u);

    const auto& p2p = j["devices"][2]["ports"][0];
    EXPECT_EQ(p2p["roce_v2_gid"], nullptr);
    EXPECT_EQ(p2p["rcv_bytes"], nullptr) << "unreadable counter is null, never 0";
    EXPECT_FALSE(p2p["counters"].contains("port_rcv_data"));
    EXPECT_EQ(p2p["max_mtu"], nullptr);
}

TEST(JsonView, OneDevice) {
    const auto s = api_sample::sample_snapshot();
    auto d = device_json(s, "rocep1s0f1");
    ASSERT_TRUE(d);
    EXPECT_EQ((*d)["name"], "rocep1s0f1");
    EXPECT_EQ((*d)["generation"], 42);
    EXPECT_FALSE(device_json(s, "mlx5_9"));
}

TEST(JsonView, InterfacesMapRdmaPortsAndGids) {
    const auto s = api_sample::sample_snapshot();
    const json j = interfaces_json(s);
    ASSERT_EQ(j["interfaces"].size(), 7u);
    const auto find = [&](const std::string& name) {
        for (const auto& i : j["interfaces"])
            if (i["name"] == name) return i;
        return json();
    };
    const auto e0 = find("enp1s0f0np0");
    EXPECT_EQ(e0["kind"], nullptr);
    EXPECT_EQ(e0["mtu"], 9000);
    EXPECT_EQ(e0["addresses"][0]["cidr"], "192.168.100.11/24");
    EXPECT_EQ(e0["addresses"][0]["family"], "inet");
    EXPECT_EQ(e0["addresses"][1]["family"], "inet6");
    ASSERT_EQ(e0["rdma"].size(), 1u);
    EXPECT_EQ(e0["rdma"][0]["device"], "rocep1s0f0");
    EXPECT_EQ(e0["rdma"][0]["roce_v2_gid_index"], 3);
    EXPECT_EQ(e0["gid_refs"].size(), 4u);

    // The bonding trap: the port names the physical netdev, the GIDs name the bond.
    const auto slave = find("enP2p1s0f0np0");
    EXPECT_EQ(slave["master"], "bond0");
    EXPECT_EQ(slave["rdma"].size(), 1u);
    EXPECT_EQ(slave["gid_refs"].size(), 0u);
    const auto bond = find("bond0");
    EXPECT_EQ(bond["is_bond"], true);
    EXPECT_EQ(bond["gid_refs"].size(), 4u);
    EXPECT_EQ(find("wlP9s9")["carrier_changes"], nullptr);
}

TEST(JsonView, Bonds) {
    const auto s = api_sample::sample_snapshot();
    const json j = bonds_json(s);
    ASSERT_EQ(j["bonds"].size(), 1u);
    const auto& b = j["bonds"][0];
    EXPECT_EQ(b["name"], "bond0");
    EXPECT_EQ(b["mode"], "balance-xor");
    EXPECT_EQ(b["xmit_hash_policy"], "layer3+4");
    EXPECT_EQ(b["miimon_seconds"], 0.1);
    EXPECT_EQ(b["active_slave"], nullptr);
    EXPECT_EQ(b["slaves_total"], 2);
    EXPECT_EQ(b["slaves_up"], 1);
    EXPECT_EQ(b["slaves"][1]["name"], "enP2p1s0f1np1");
    EXPECT_EQ(b["slaves"][1]["mii_status"], "down");
    EXPECT_EQ(b["slaves"][1]["state"], "backup");
    EXPECT_EQ(b["slaves"][1]["link_failure_count"], 3);
    EXPECT_EQ(b["slaves"][1]["link_failure_increase"], 1);
}

TEST(JsonView, BondWithUnknownSlave) {
    Snapshot s;
    Link b;
    b.name = "bond1";
    b.kind = "bond";
    b.bond = BondInfo{"active-backup", std::nullopt, "", "", {"gone0"}};
    s.links = {b};
    const json j = bonds_json(s);
    EXPECT_EQ(j["bonds"][0]["miimon_seconds"], nullptr);
    EXPECT_EQ(j["bonds"][0]["slaves_up"], 0);
    EXPECT_EQ(j["bonds"][0]["slaves"][0]["mii_status"], nullptr);
}

TEST(JsonView, AlertsAndHistory) {
    const auto s = api_sample::sample_snapshot();
    const json a = alerts_json(s);
    EXPECT_EQ(a["health"], "critical");
    ASSERT_EQ(a["alerts"].size(), 4u);
    const auto& first = a["alerts"][0];
    EXPECT_EQ(first["rule"], "bond_slave_down");
    EXPECT_EQ(first["severity"], "critical");
    EXPECT_EQ(first["state"], "firing");
    EXPECT_EQ(first["state_changed_at"], "2025-03-01T11:59:30.000Z");
    EXPECT_FALSE(first.contains("since")) << "API version 2: every time key ends in _at";
    EXPECT_TRUE(first["details"]["observed"].is_number_integer()) << "a figure is a number, not a string";
    EXPECT_EQ(first["details"]["observed"], 1);
    EXPECT_EQ(a["api_version"], 2);
    EXPECT_EQ(first["action"], "see the runbook");

    const json h = history_json(s);
    EXPECT_EQ(h["total"], 3);
    ASSERT_EQ(h["history"].size(), 3u);
    EXPECT_EQ(h["history"][0]["from"], "inactive");
    EXPECT_TRUE(h["history"][0]["changed_at"].is_string());
    EXPECT_FALSE(h["history"][0].contains("at"));
    EXPECT_EQ(h["history"][0]["to"], "pending");
    EXPECT_EQ(h["history"][2]["to"], "resolved");
    const json last = history_json(s, 1);
    ASSERT_EQ(last["history"].size(), 1u);
    EXPECT_EQ(last["history"][0]["rule"], "port_down") << "limit keeps the newest";
    EXPECT_EQ(history_json(Snapshot{})["history"].size(), 0u);
}

// Figures in details are JSON numbers; names, durations and rate text stay strings.
TEST(JsonView, DetailsFiguresAreNumbers) {
    const json d = details_json({{"actual_mtu", "1500"},
                                 {"per_second", "2.50"},
                                 {"increase", "-3"},
                                 {"window", "5m"},
                                 {"rate", "100 Gb/sec (4X EDR)"},
                                 {"counter", "symbol_error"},
                                 {"guid", "0x1234"},
                                 {"padded", "007"},
                                 {"empty", ""}});
    EXPECT_EQ(d["actual_mtu"], 1500);
    EXPECT_TRUE(d["actual_mtu"].is_number_integer());
    EXPECT_EQ(d["per_second"], 2.5);
    EXPECT_EQ(d["increase"], -3);
    EXPECT_EQ(d["window"], "5m");
    EXPECT_EQ(d["rate"], "100 Gb/sec (4X EDR)");
    EXPECT_EQ(d["counter"], "symbol_error");
    EXPECT_EQ(d["guid"], "0x1234");
    EXPECT_EQ(d["padded"], "007") << "a leading zero is a name, not a number";
    EXPECT_EQ(d["empty"], "");
}

TEST(JsonView, AlertFiltersSelectAndCombine) {
    const auto s = api_sample::sample_snapshot();
    const auto count = [&](AlertFilter f) { return alerts_json(s, f)["alerts"].size(); };
    size_t critical = 0, firing = 0, both = 0;
    for (const auto& a : s.alerts) {
        critical += a.severity == Severity::critical;
        firing += a.state == AlertState::firing;
        both += a.severity == Severity::critical && a.state == AlertState::firing;
    }
    ASSERT_GT(critical, 0u);
    ASSERT_LT(critical, s.alerts.size()) << "the sample must hold alerts the filter drops";
    EXPECT_EQ(count({.severity = Severity::critical}), critical);
    EXPECT_EQ(count({.state = AlertState::firing}), firing);
    EXPECT_EQ(count({.severity = Severity::critical, .state = AlertState::firing}), both);
    EXPECT_EQ(count({.rule = s.alerts[0].rule, .object = s.alerts[0].object}), 1u);
    EXPECT_EQ(count({.rule = "no_such_rule"}), 0u);
    // Held in a local: a range-for over a member of a temporary would read freed memory.
    const auto only_critical = alerts_json(s, {.severity = Severity::critical});
    for (const auto& a : only_critical["alerts"]) EXPECT_EQ(a["severity"], "critical");
}

// The same escape as /metrics, in strings and keys (counter names are keys), and the
// document stays valid UTF-8 JSON.
TEST(JsonView, InvalidUtf8IsEscapedLikeMetrics) {
    Snapshot s;
    Link l;
    l.name = std::string("v\xff\xfe", 3);
    s.links = {l};
    RdmaDevice d;
    d.name = std::string("r\xc0\xaf", 3);  // an overlong '/'
    RdmaPort p;
    p.hw_counters[std::string("c\x80", 2)] = 1;
    d.ports = {p};
    s.devices = {d};
    const json ifs = json::parse(dump_json(interfaces_json(s)));
    EXPECT_EQ(ifs["interfaces"][0]["name"], "v\\xff\\xfe");
    const json devs = json::parse(dump_json(devices_json(s)));
    EXPECT_EQ(devs["devices"][0]["name"], "r\\xc0\\xaf");
    EXPECT_EQ(devs["devices"][0]["ports"][0]["hw_counters"]["c\\x80"], 1);
    EXPECT_EQ(escape_invalid_utf8("\xe2\x82\xac"), "\xe2\x82\xac") << "valid UTF-8 is left alone";
    EXPECT_EQ(escape_invalid_utf8("\xe2\x82"), "\\xe2\\x82");
    EXPECT_EQ(escape_invalid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80") << "past U+10FFFF";
}

TEST(JsonView, StatusListsEveryReadErrorAndTheDataAge) {
    Snapshot s;
    CollectorStatus c{.name = "sysfs", .success = false, .read_errors = 7, .last_error = "/s/g: x"};
    for (char n = 'a'; n <= 'g'; ++n) c.errors.push_back(std::string("/s/") + n + ": Is a directory");
    const TimePoint t = TimePoint{} + std::chrono::hours(24 * 365 * 50);
    c.last_success = t;
    c.ignored = {"/s/class/infiniband/mlx5_9: a symlink to nothing (the device was removed)"};
    s.collectors = {c};
    const json j = status_json(s, t + std::chrono::seconds(42));
    const auto& sysfs = j["collectors"][0];
    EXPECT_EQ(sysfs["ignored"], json::array({c.ignored[0]}));
    EXPECT_EQ(sysfs["errors"].size(), 7u);
    EXPECT_EQ(sysfs["errors"][0], "/s/a: Is a directory");
    EXPECT_EQ(sysfs["data_age_seconds"], 42.0);
    EXPECT_EQ(sysfs["last_success_at"], format_rfc3339(t));
}

TEST(JsonView, DumpSurvivesInvalidUtf8) {
    Snapshot s;
    Link l;
    l.name = std::string("eth\xff\xfe", 5);
    s.links = {l};
    std::string out;
    EXPECT_NO_THROW(out = dump_json(interfaces_json(s)));
    EXPECT_NE(out.find("eth"), std::string::npos);
    EXPECT_EQ(error_json(404, "nope"), json({{"error", "nope"}, {"status", 404}}));
}

// ---------------------------------------------------------------- probe views

namespace {

rocewatch::Snapshot probe_snapshot() {
    using namespace rocewatch;
    Snapshot s;
    auto book = std::make_shared<ProbeBook>();
    book->enabled = true;
    ProbeResult r;
    r.kind = ProbeKind::tcp_lat;
    r.peer = "spark-b";
    r.rail = "rail0";
    r.success = true;
    r.duration_seconds = 0.02;
    r.latency = LatencyStats{.samples = 100, .used = 98, .typical = 2e-5, .mean = 2.1e-5, .p99 = 4e-5, .p99_9 = 5e-5};
    for (int i = 0; i < 25; ++i) book->add(r);
    ProbeResult bw = r;
    bw.kind = ProbeKind::tcp_bw;
    bw.latency.reset();
    bw.bandwidth_bits_per_second = 8e9;
    book->add(bw);
    s.probes = book;
    return s;
}

// A failed (or not run) probe to spark-b.
rocewatch::ProbeResult failed_probe(rocewatch::ProbeKind kind, std::string rail, std::string reason) {
    rocewatch::ProbeResult r;
    r.peer = "spark-b";
    r.rail = std::move(rail);
    r.kind = kind;
    r.reason = std::move(reason);
    return r;
}

}  // namespace

TEST(ProbeView, StatusSaysWhetherProbingIsOn) {
    auto s = probe_snapshot();
    EXPECT_EQ(rocewatch::api::status_json(s, rocewatch::TimePoint{})["probes"]["enabled"], true);
    auto off = std::make_shared<rocewatch::ProbeBook>();
    off->disabled_reason = "no [probes] token_file configured";
    s.probes = off;
    auto j = rocewatch::api::status_json(s, rocewatch::TimePoint{});
    EXPECT_EQ(j["probes"]["enabled"], false);
    EXPECT_EQ(j["probes"]["disabled_reason"], "no [probes] token_file configured");
}

TEST(ProbeView, LatestAndBoundedHistory) {
    auto j = rocewatch::api::probes_json(probe_snapshot());
    EXPECT_EQ(j["enabled"], true);
    ASSERT_EQ(j["probes"].size(), 2u);
    for (const auto& p : j["probes"]) {
        if (p["kind"] != "tcp_lat") continue;
        EXPECT_EQ(p["history"].size(), rocewatch::ProbeBook::kHistoryLimit);
        EXPECT_EQ(p["latest"]["latency_seconds"]["p99"], 4e-5);
    }
}

TEST(ProbeView, MetricFamiliesPerPeerRailKind) {
    auto text = rocewatch::api::render_snapshot_metrics(probe_snapshot());
    EXPECT_EQ(text, rocewatch::api::text_format(rocewatch::api::snapshot_to_families(probe_snapshot())));
    EXPECT_NE(text.find("rocewatch_probe_success{peer=\"spark-b\",rail=\"rail0\",kind=\"tcp_lat\"} 1"),
              std::string::npos)
        << text;
    EXPECT_NE(
        text.find(
            "rocewatch_probe_latency_seconds{peer=\"spark-b\",rail=\"rail0\",kind=\"tcp_lat\",quantile=\"0.99\"}"),
        std::string::npos);
    EXPECT_NE(
        text.find(
            "rocewatch_probe_bandwidth_bytes_per_second{peer=\"spark-b\",rail=\"rail0\",kind=\"tcp_bw\"} 1000000000"),
        std::string::npos);
}

// _count and _sum of the latency summary add up every sample of every run (what rate()
// needs), while the quantiles stay the latest run's; failed and skipped runs add nothing.
TEST(ProbeView, LatencySummaryCountAndSumAreCumulative) {
    using namespace rocewatch;
    const auto summary_of = [](const Snapshot& s) {
        for (const auto& f : api::snapshot_to_families(s))
            if (f.name == "rocewatch_probe_latency_seconds") return f.metric.at(0).summary;
        ADD_FAILURE() << "no rocewatch_probe_latency_seconds";
        return prometheus::ClientMetric::Summary{};
    };
    Snapshot s;
    auto book = std::make_shared<ProbeBook>();
    ProbeResult r;
    r.kind = ProbeKind::tcp_lat;
    r.peer = "spark-b";
    r.rail = "rail0";
    r.success = true;
    r.latency = LatencyStats{.samples = 100, .used = 98, .typical = 2e-5, .mean = 2e-5, .p99 = 4e-5};
    book->add(r);
    s.probes = std::make_shared<ProbeBook>(*book);
    const auto first = summary_of(s);
    EXPECT_EQ(first.sample_count, 98u);
    EXPECT_NEAR(first.sample_sum, 98 * 2e-5, 1e-12);

    ProbeResult failed = failed_probe(ProbeKind::tcp_lat, "rail0", "timeout");
    book->add(failed);
    r.latency = LatencyStats{.samples = 50, .used = 48, .typical = 1e-5, .mean = 1e-5, .p99 = 3e-5};
    book->add(r);
    s.probes = std::make_shared<ProbeBook>(*book);
    const auto second = summary_of(s);
    EXPECT_EQ(second.sample_count, 98u + 48u);
    EXPECT_NEAR(second.sample_sum, 98 * 2e-5 + 48 * 1e-5, 1e-12);
    EXPECT_GE(second.sample_count, first.sample_count);
    EXPECT_GE(second.sample_sum, first.sample_sum);
    // The quantiles are the latest run's, under the same quantile label values as before.
    ASSERT_EQ(second.quantile.size(), 3u);
    EXPECT_EQ(second.quantile[0].quantile, 0.5);
    EXPECT_EQ(second.quantile[0].value, 1e-5);
    EXPECT_EQ(second.quantile[1].quantile, 0.99);
    EXPECT_EQ(second.quantile[1].value, 3e-5);

    // Past the history limit the totals keep counting: nothing falls out of them.
    for (size_t i = 0; i < ProbeBook::kHistoryLimit + 5; ++i) book->add(r);
    s.probes = std::make_shared<ProbeBook>(*book);
    EXPECT_EQ(summary_of(s).sample_count, 98u + 48u * (ProbeBook::kHistoryLimit + 6));
}

TEST(ProbeView, FailureReasonsAndUcxLanesAsInfoSeries) {
    using namespace rocewatch;
    auto s = probe_snapshot();
    auto book = std::make_shared<ProbeBook>(*s.probes);
    book->add(failed_probe(ProbeKind::rdma_write_lat, "rail1", "gid_mismatch"));
    ProbeResult ucx;
    ucx.peer = "spark-b";
    ucx.kind = ProbeKind::ucx_put_bw;
    ucx.success = true;
    ucx.bandwidth_bits_per_second = 1e11;
    ucx.bytes_per_rail = {{"rail0", 25'000'000'000}, {"rail1", 0}};
    ucx.info = {{"local_ucx_version", "1.13.1"},
                {"remote_ucx_version", "1.16.0"},
                {"ucx_lanes", "rc_mlx5/rocep1s0f0:1"}};
    book->add(ucx);
    s.probes = book;
    auto text = api::render_snapshot_metrics(s);
    EXPECT_NE(text.find("rocewatch_probe_failure_info{peer=\"spark-b\",rail=\"rail1\",kind=\"rdma_write_lat\","
                        "reason=\"gid_mismatch\"} 1"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("rocewatch_probe_ucx_info{peer=\"spark-b\",kind=\"ucx_put_bw\",local_version=\"1.13.1\","
                        "remote_version=\"1.16.0\",lanes=\"rc_mlx5/rocep1s0f0:1\"} 1"),
              std::string::npos);
    EXPECT_NE(text.find("rocewatch_probe_bytes_per_rail{peer=\"spark-b\",rail=\"rail1\",kind=\"ucx_put_bw\"} 0"),
              std::string::npos)
        << "an idle rail is a 0, not a missing series";
    size_t failures = 0;
    for (size_t at = text.find("\nrocewatch_probe_failure_info{"); at != std::string::npos;
         at = text.find("\nrocewatch_probe_failure_info{", at + 1))
        ++failures;
    EXPECT_EQ(failures, 1u) << "only failed probes carry a failure series";
}

// The peer refused the latest bandwidth probe as busy: /metrics keeps the last real run's
// figures (and its timestamp shows their age); /api/v1/probes shows both.
TEST(ProbeView, AProbeThatDidNotRunLeavesTheLastRunsFigures) {
    using namespace rocewatch;
    auto s = probe_snapshot();
    auto book = std::make_shared<ProbeBook>(*s.probes);
    book->add(failed_probe(ProbeKind::tcp_bw, "rail0", kReasonPeerBusy));
    s.probes = book;
    auto text = api::render_snapshot_metrics(s);
    EXPECT_NE(text.find("rocewatch_probe_success{peer=\"spark-b\",rail=\"rail0\",kind=\"tcp_bw\"} 1"),
              std::string::npos)
        << text;
    EXPECT_NE(
        text.find(
            "rocewatch_probe_bandwidth_bytes_per_second{peer=\"spark-b\",rail=\"rail0\",kind=\"tcp_bw\"} 1000000000"),
        std::string::npos);
    EXPECT_EQ(text.find("reason=\"peer_busy\""), std::string::npos);
    auto j = api::probes_json(s);
    bool seen = false;
    for (const auto& p : j["probes"]) {
        if (p["kind"] == "tcp_bw") {
            seen = true;
            EXPECT_EQ(p["latest"]["reason"], "peer_busy");
            EXPECT_EQ(p["last_run"]["success"], true);
            EXPECT_EQ(p["last_run"]["bandwidth_bytes_per_second"], 1e9);
        } else {
            EXPECT_FALSE(p.contains("last_run")) << "only where the latest did not run";
        }
    }
    EXPECT_TRUE(seen);
}

TEST(ProbeView, HelloRoundTripsAndBearerIsExact) {
    using namespace rocewatch;
    Snapshot s;
    s.version = "0.1.0";
    s.host.ucx_version = "1.16.0";
    s.links.push_back(Link{.ifindex = 2, .name = "enp1s0f0np0", .mtu = 9000});
    s.links.back().addresses.push_back({.family = 2, .address = "10.1.0.2", .prefixlen = 24, .scope = "global"});
    RdmaPort port{.port = 1, .netdev = "enp1s0f0np0"};
    port.gids.push_back({.index = 3, .gid = "::ffff:10.1.0.2", .type = "RoCE v2", .netdev = "enp1s0f0np0"});
    s.devices.push_back(RdmaDevice{.name = "rocep1s0f0", .ports = {port}});
    auto h = api::hello_from_json(api::hello_json(s, 9880));
    EXPECT_EQ(h.data_port, 9880);
    EXPECT_EQ(h.protocol_version, static_cast<uint32_t>(api::kPeerProtocolVersion));
    EXPECT_EQ(h.ucx_version, "1.16.0");
    EXPECT_EQ(h.interfaces.at("enp1s0f0np0").mtu, 9000u);
    EXPECT_EQ(h.interfaces.at("enp1s0f0np0").gid_types, std::vector<std::string>{"RoCE v2"});
    EXPECT_EQ(h.address_interface.at("10.1.0.2"), "enp1s0f0np0");
    EXPECT_EQ(h.interfaces.at("enp1s0f0np0").prefixes, (std::vector<PeerPrefix>{{"10.1.0.2", 24}}));
    EXPECT_EQ(h.interfaces.at("enp1s0f0np0").rdma_device, "rocep1s0f0");
    EXPECT_TRUE(h.rails.empty()) << "a snapshot without a config lists no rails";
    auto with_rails = s;
    auto cfg = std::make_shared<Config>();
    cfg->expect.rails = {"rocep1s0f0"};
    with_rails.config = cfg;
    auto hr = api::hello_from_json(api::hello_json(with_rails, 9880));
    ASSERT_EQ(hr.rails.size(), 1u);
    EXPECT_EQ(hr.rails[0].device, "rocep1s0f0");
    EXPECT_EQ(hr.rails[0].netdev, "enp1s0f0np0");
    // The fields added after protocol 1: a peer that sends them malformed is one that did not.
    auto odd = api::hello_json(with_rails, 9880);
    odd["rails"] = "r0";
    odd["interfaces"]["enp1s0f0np0"]["prefixes"] = {{{"address", "10.1.0.2"}, {"prefixlen", -1}}, 7};
    odd["interfaces"]["enp1s0f0np0"]["mac"] = 5;
    auto ho = api::hello_from_json(odd);
    EXPECT_TRUE(ho.rails.empty());
    EXPECT_TRUE(ho.interfaces.at("enp1s0f0np0").prefixes.empty());
    EXPECT_EQ(ho.interfaces.at("enp1s0f0np0").mac, "");

    // A hello's numbers are whole and in range, or the hello is refused (never a wrapped port).
    auto j = api::hello_json(s, 9880);
    for (const char* key : {"data_port", "protocol_version"})
        for (const nlohmann::json& bad :
             {nlohmann::json(70000), nlohmann::json(1e10), nlohmann::json(-1), nlohmann::json(1.5)}) {
            auto k = j;
            if (std::string(key) == "protocol_version" && bad == nlohmann::json(70000)) continue;  // fits in 32 bits
            k[key] = bad;
            EXPECT_THROW(api::hello_from_json(k), std::exception) << key << " " << bad.dump();
        }
    // What a peer says reaches alert summaries, the log and the API: a name, version or GID
    // type holding a control character (a forged log line) or past 255 bytes refuses the hello.
    const auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
        auto k = j;
        edit(k);
        EXPECT_THROW(api::hello_from_json(k), std::invalid_argument) << k.dump();
    };
    refused([](nlohmann::json& k) { k["interfaces"]["enp1s0f0np0"]["gid_types"] = {"RoCE v2\n[critical] FORGED"}; });
    refused([](nlohmann::json& k) { k["ucx_version"] = "1.16\033[2J"; });
    refused([](nlohmann::json& k) { k["version"] = std::string(300, 'v'); });
    refused([](nlohmann::json& k) { k["interfaces"]["eth\r0"] = nlohmann::json::object(); });
    refused([](nlohmann::json& k) { k["interfaces"]["enp1s0f0np0"]["addresses"] = {"10.1.0.2\n"}; });
    EXPECT_NO_THROW(api::hello_from_json(j));
    // The lossless set-up (issue 12): sent where known, absent where not.
    EXPECT_FALSE(h.interfaces.at("enp1s0f0np0").pfc_enabled);
    EXPECT_FALSE(h.interfaces.at("enp1s0f0np0").roce_priority);
    auto lossless = s;
    lossless.links[0].dcb = DcbState{
        .ieee = {.pfc_enabled = 0x08, .apps = {{.selector = 5, .protocol = 26, .priority = 3}}}};
    lossless.devices[0].ports[0].rdma_cm_default_tos = 106;
    lossless.devices[0].ports[0].ecn_np_enabled = 0x08;
    const auto hl = api::hello_from_json(api::hello_json(lossless, 9880)).interfaces.at("enp1s0f0np0");
    EXPECT_EQ(hl.pfc_enabled, uint8_t{0x08});
    EXPECT_EQ(hl.roce_priority, 3);
    EXPECT_EQ(hl.ecn_np_enabled, uint8_t{0x08});
    EXPECT_FALSE(hl.ecn_rp_enabled);
    auto odd_prio = api::hello_json(lossless, 9880);
    odd_prio["interfaces"]["enp1s0f0np0"]["roce_priority"] = 9;
    odd_prio["interfaces"]["enp1s0f0np0"]["pfc_enabled"] = 256;
    const auto ho2 = api::hello_from_json(odd_prio).interfaces.at("enp1s0f0np0");
    EXPECT_FALSE(ho2.roce_priority) << "no such priority";
    EXPECT_FALSE(ho2.pfc_enabled) << "not a bitmap of eight priorities";

    auto odd_mtu = j;
    odd_mtu["interfaces"]["enp1s0f0np0"]["mtu"] = 1.5e62;
    EXPECT_FALSE(api::hello_from_json(odd_mtu).interfaces.at("enp1s0f0np0").mtu.has_value());

    EXPECT_TRUE(api::bearer_matches("Bearer abc", "abc"));
    EXPECT_FALSE(api::bearer_matches("Bearer abd", "abc"));
    EXPECT_FALSE(api::bearer_matches("Bearer abcd", "abc"));
    EXPECT_FALSE(api::bearer_matches("abc", "abc"));
    EXPECT_FALSE(api::bearer_matches("Bearer ", "")) << "no token configured: nothing matches";
}

TEST(JsonView, PortsUpCountsActiveAndLinkUpOnly) {
    auto s = api_sample::sample_snapshot();
    s.devices.at(0).ports.at(0).phys_state = 4;  // ACTIVE, training: not up
    const json j = status_json(s, api_sample::sample_time());
    EXPECT_EQ(j["counts"]["ports_up"], 2);
    const json d = devices_json(s);
    EXPECT_EQ(d["devices"][0]["ports"][0]["up"], false);
    EXPECT_EQ(d["devices"][0]["ports"][0]["nic_family"], "roce");
}

// The module in /api/v1/interfaces: identity, lanes numbered from 1 as ethtool -m numbers them,
// the levels by quantity; an unreadable module says why; a netdev not asked has null.
TEST(JsonView, InterfaceLldpNeighbour) {
    auto s = api_sample::sample_snapshot();
    s.links[0].lldp = LldpNeighbor{.protocol = "LLDP",
                                   .system_name = "leaf-07",
                                   .chassis_id = "0c:42:a1:00:00:01",
                                   .chassis_id_subtype = "mac",
                                   .port_id = "Ethernet12",
                                   .port_id_subtype = "ifname",
                                   .max_frame_size = 9216};
    const json j = json::parse(dump_json(interfaces_json(s)));
    const auto& n = j["interfaces"][0]["lldp"];
    EXPECT_EQ(n["switch"], "leaf-07");
    EXPECT_EQ(n["switch_port"], "Ethernet12");
    EXPECT_EQ(n["chassis_id"], "0c:42:a1:00:00:01");
    EXPECT_EQ(n["max_frame_size"], 9216);
    EXPECT_EQ(n["vlan_id"], nullptr);
    EXPECT_EQ(n["port_description"], nullptr);
    EXPECT_EQ(n["neighbours"], 1);
    EXPECT_EQ(j["interfaces"][1]["lldp"], nullptr);
}

TEST(JsonView, InterfaceModule) {
    auto s = api_sample::sample_snapshot();
    Transceiver t{.spec = "SFF-8636",
                  .identifier = 0x11,
                  .type = "QSFP28",
                  .vendor = "NVIDIA",
                  .part_number = "MMA1B00-C100D",
                  .serial = "MT2233FT01234",
                  .diagnostics = true,
                  .temperature_c = 35.5};
    t.lanes.assign(4, ModuleLane{.rx_power_mw = 0.8, .tx_bias_ma = 7.5});
    t.rx_power_thresholds = {.low_alarm = 0.0363, .low_warning = 0.0724};
    s.links[0].module = t;
    s.links[1].module = Transceiver{.error = EOPNOTSUPP};
    const json j = json::parse(dump_json(interfaces_json(s)));
    const auto& m = j["interfaces"][0]["module"];
    EXPECT_EQ(m["type"], "QSFP28");
    EXPECT_EQ(m["spec"], "SFF-8636");
    EXPECT_EQ(m["serial"], "MT2233FT01234");
    EXPECT_EQ(m["rx_power_type"], "average");
    EXPECT_EQ(m["temperature_celsius"], 35.5);
    ASSERT_EQ(m["lanes"].size(), 4u);
    EXPECT_EQ(m["lanes"][3]["lane"], 4);
    EXPECT_EQ(m["lanes"][3]["rx_power_mw"], 0.8);
    EXPECT_EQ(m["lanes"][3]["tx_power_mw"], nullptr);
    EXPECT_EQ(m["thresholds"]["rx_power_mw"]["low_warning"], 0.0724);
    EXPECT_EQ(m["thresholds"]["rx_power_mw"]["high_alarm"], nullptr);
    EXPECT_EQ(j["interfaces"][1]["module"]["error"], std::generic_category().message(EOPNOTSUPP));
    EXPECT_EQ(j["interfaces"][2]["module"], nullptr);
}
