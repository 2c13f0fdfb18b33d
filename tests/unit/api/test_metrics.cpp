// Metric families from snapshots, without HTTP; the rendered text must pass promtool.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "api/metrics.hpp"
#include "api/web_guard.hpp"
#include "api/text_format.hpp"
#include "daemon/model/config.hpp"
#include "sample_snapshot.hpp"
#include "test_env.hpp"

using namespace rocewatch;
using namespace rocewatch::api;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

using LabelMap = std::map<std::string, std::string>;

TimePoint sample_time_minus(int seconds) { return api_sample::sample_time() - std::chrono::seconds(seconds); }

const MetricFamily* family(const std::vector<MetricFamily>& fams, const std::string& name) {
    for (const auto& f : fams)
        if (f.name == name) return &f;
    return nullptr;
}

LabelMap labels_of(const prometheus::ClientMetric& m) {
    LabelMap out;
    for (const auto& l : m.label) out[l.name] = l.value;
    return out;
}

// Value of the sample whose labels include all of `want`; nullopt if none matches.
std::optional<double> value(const std::vector<MetricFamily>& fams, const std::string& name, const LabelMap& want = {}) {
    const auto* f = family(fams, name);
    if (!f) return std::nullopt;
    for (const auto& m : f->metric) {
        const auto have = labels_of(m);
        bool ok = true;
        for (const auto& [k, v] : want) {
            auto it = have.find(k);
            if (it == have.end() || it->second != v) ok = false;
        }
        if (ok) return f->type == MetricType::Counter ? m.counter.value : m.gauge.value;
    }
    return std::nullopt;
}

size_t samples(const std::vector<MetricFamily>& fams, const std::string& name) {
    const auto* f = family(fams, name);
    return f ? f->metric.size() : 0;
}

}  // namespace

TEST(Metrics, RdmaFamilies) {
    const auto fams = snapshot_to_families(api_sample::sample_snapshot());
    const LabelMap rail = {{"device", "rocep1s0f0"}, {"port", "1"}};
    EXPECT_EQ(value(fams, "rocewatch_rdma_device_info",
                    {{"device", "rocep1s0f0"},
                     {"driver", "mlx5_core"},
                     {"fw_ver", "28.45.1020"},
                     {"board_id", "NVD0000000087"}}),
              1.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_info",
                    {{"device", "rocep1s0f0"}, {"link_layer", "Ethernet"}, {"netdev", "enp1s0f0np0"}}),
              1.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_state", rail), 4.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_phys_state", rail), 5.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_up", rail), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_rate_bytes_per_second", rail), 12.5e9);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_active_mtu_bytes", rail), 1024.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_max_mtu_bytes", rail), 4096.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_data_transmitted_bytes_total", rail), 6.09e9);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_data_received_bytes_total", rail), 6.0896e9);
    // Rates are Prometheus' to compute (rate()); REST keeps the exporter's own.
    EXPECT_FALSE(family(fams, "rocewatch_rdma_port_transmit_bytes_per_second"));
    EXPECT_FALSE(family(fams, "rocewatch_rdma_port_receive_bytes_per_second"));
    // A well-known counter has its own family, named as node_exporter names it, and is not
    // repeated in the generic one.
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_link_downed_total", rail), 1.0);
    EXPECT_FALSE(value(fams, "rocewatch_rdma_port_counters_total", {{"counter", "link_downed"}}));
    EXPECT_FALSE(value(fams, "rocewatch_rdma_port_counters_total", {{"counter", "port_xmit_data"}}))
        << "4-byte words: only as bytes, in rocewatch_rdma_port_data_transmitted_bytes_total";
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_hw_counters_total",
                    {{"device", "rocep1s0f1"}, {"counter", "rp_cnp_handled"}}),
              40.0);
    EXPECT_FALSE(value(fams, "rocewatch_rdma_port_hw_counters_total", {{"counter", "lifespan"}}))
        << "a setting, not a counter";
    EXPECT_EQ(value(fams, "rocewatch_rdma_gid_info",
                    {{"device", "rocep1s0f0"},
                     {"index", "3"},
                     {"type", "RoCE v2"},
                     {"netdev", "enp1s0f0np0"},
                     {"gid", "0000:0000:0000:0000:0000:ffff:c0a8:640b"}}),
              1.0);
    EXPECT_EQ(samples(fams, "rocewatch_rdma_gid_info"), 12u);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_roce_v2_gid_index",
                    {{"device", "rocep1s0f0"}, {"port", "1"}, {"address", "192.168.100.11"}}),
              3.0);
    EXPECT_EQ(samples(fams, "rocewatch_rdma_port_roce_v2_gid_index"), 2u) << "the P2P port has none";

    // Missing is not zero: the P2P port's unreadable values are absent.
    const LabelMap p2p = {{"device", "roceP2p1s0f0"}};
    EXPECT_FALSE(value(fams, "rocewatch_rdma_port_data_received_bytes_total", p2p));
    EXPECT_FALSE(value(fams, "rocewatch_rdma_port_max_mtu_bytes", p2p));
    EXPECT_FALSE(
        value(fams, "rocewatch_rdma_port_counters_total", {{"device", "roceP2p1s0f0"}, {"counter", "port_rcv_data"}}));
    EXPECT_TRUE(value(fams, "rocewatch_rdma_port_data_transmitted_bytes_total", p2p));
}

TEST(Metrics, LinkBondAlertHostSelfFamilies) {
    const auto fams = snapshot_to_families(api_sample::sample_snapshot());
    EXPECT_EQ(value(fams, "rocewatch_link_info", {{"netdev", "bond0"}, {"kind", "bond"}, {"master", ""}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_link_info", {{"netdev", "enP2p1s0f0np0"}, {"master", "bond0"}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_link_up", {{"netdev", "enP2p1s0f1np1"}}), 0.0);
    EXPECT_EQ(value(fams, "rocewatch_link_admin_up", {{"netdev", "enP2p1s0f1np1"}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_link_carrier", {{"netdev", "enp1s0f0np0"}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_link_carrier_changes_total", {{"netdev", "enP2p1s0f1np1"}}), 5.0);
    EXPECT_FALSE(value(fams, "rocewatch_link_carrier_changes_total", {{"netdev", "wlP9s9"}}));
    EXPECT_EQ(value(fams, "rocewatch_link_mtu_bytes", {{"netdev", "enp1s0f1np1"}}), 1500.0);

    EXPECT_EQ(value(fams, "rocewatch_bond_info",
                    {{"bond", "bond0"}, {"mode", "balance-xor"}, {"xmit_hash_policy", "layer3+4"}}),
              1.0);
    EXPECT_EQ(value(fams, "rocewatch_bond_slaves", {{"bond", "bond0"}}), 2.0);
    EXPECT_EQ(value(fams, "rocewatch_bond_slaves_up", {{"bond", "bond0"}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_bond_miimon_seconds", {{"bond", "bond0"}}), 0.1);
    EXPECT_EQ(value(fams, "rocewatch_bond_slave_mii_up", {{"bond", "bond0"}, {"netdev", "enP2p1s0f1np1"}}), 0.0);
    EXPECT_EQ(value(fams, "rocewatch_bond_slave_active", {{"bond", "bond0"}, {"netdev", "enP2p1s0f0np0"}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_bond_slave_link_failures_total", {{"netdev", "enP2p1s0f1np1"}}), 3.0);

    EXPECT_EQ(samples(fams, "rocewatch_alert_active"), 4u);
    EXPECT_EQ(value(fams, "rocewatch_alert_active",
                    {{"rule", "subnet_overlap"},
                     {"object", "wlP9s9"},
                     {"severity", "warning"},
                     {"state", "pending"},
                     {"scope", "node"}}),
              1.0);
    EXPECT_EQ(samples(fams, "rocewatch_alerts"), 6u) << "all severity x state combinations";
    EXPECT_EQ(value(fams, "rocewatch_alerts", {{"severity", "warning"}, {"state", "firing"}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_alerts", {{"severity", "critical"}, {"state", "pending"}}), 0.0);
    EXPECT_EQ(value(fams, "rocewatch_health_status"), 2.0);

    EXPECT_EQ(value(fams, "rocewatch_host_nvidia_gpu_present"), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_host_nvidia_peermem_loaded"), 0.0);
    EXPECT_EQ(value(fams, "rocewatch_ucx_info", {{"version", "1.16.0"}}), 1.0);

    EXPECT_EQ(value(fams, "rocewatch_collector_success", {{"collector", "host"}}), 0.0);
    EXPECT_EQ(value(fams, "rocewatch_collector_duration_seconds", {{"collector", "sysfs"}}), 0.012);
    EXPECT_EQ(value(fams, "rocewatch_collector_read_errors", {{"collector", "host"}}), 2.0);
    EXPECT_EQ(value(fams, "rocewatch_last_collection_timestamp_seconds"), 1740830400.0);
    EXPECT_EQ(value(fams, "rocewatch_snapshot_generation"), 42.0);
    EXPECT_EQ(value(fams, "rocewatch_netlink_events_total"), 17.0);
    EXPECT_EQ(value(fams, "rocewatch_netlink_resyncs_total"), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_config_last_reload_successful"), 0.0);
    EXPECT_EQ(value(fams, "rocewatch_config_last_reload_success_timestamp_seconds"), 1740830400.0 - 600);
    EXPECT_EQ(value(fams, "rocewatch_build_info", {{"version", "0.1.0"}}), 1.0);
}

TEST(Metrics, NamingConventions) {
    const auto fams = snapshot_to_families(api_sample::sample_snapshot());
    std::set<std::string> names;
    for (const auto& f : fams) {
        EXPECT_TRUE(names.insert(f.name).second) << "duplicate family " << f.name;
        EXPECT_EQ(f.name.rfind("rocewatch_", 0), 0u) << f.name;
        EXPECT_FALSE(f.help.empty()) << f.name;
        EXPECT_FALSE(f.metric.empty()) << "empty families are dropped: " << f.name;
        const bool total = f.name.size() > 6 && f.name.compare(f.name.size() - 6, 6, "_total") == 0;
        EXPECT_EQ(f.type == MetricType::Counter, total) << f.name << ": counters, and only counters, end in _total";
        if (f.name.size() > 5 && f.name.compare(f.name.size() - 5, 5, "_info") == 0) {
            for (const auto& m : f.metric) EXPECT_EQ(m.gauge.value, 1.0) << f.name;
        }
    }
}

// One label name per thing across all families: `netdev` for a network interface (the link
// families said `interface`, the RDMA ones `netdev`), `device` for an RDMA device.
TEST(Metrics, OneLabelNamePerThing) {
    const auto fams = snapshot_to_families(api_sample::sample_snapshot());
    size_t with_netdev = 0;
    for (const auto& f : fams)
        for (const auto& m : f.metric)
            for (const auto& l : m.label) {
                EXPECT_NE(l.name, "interface") << f.name;
                EXPECT_NE(l.name, "ifname") << f.name;
                EXPECT_NE(l.name, "rdma_device") << f.name;
                with_netdev += l.name == "netdev";
            }
    EXPECT_TRUE(value(fams, "rocewatch_link_up", {{"netdev", "enp1s0f0np0"}}));
    EXPECT_TRUE(value(fams, "rocewatch_rdma_port_info", {{"netdev", "enp1s0f0np0"}}));
    EXPECT_GT(with_netdev, 0u);
}

// [metrics] netdev_include / netdev_exclude, searched in the name as node_exporter's
// --collector.netclass.ignored-devices is: the link families leave the netdevs out, RDMA
// families (keyed by device) are untouched.
TEST(Metrics, NetdevFilterLeavesLinksOut) {
    auto s = api_sample::sample_snapshot();
    const size_t links = s.links.size();
    ASSERT_GE(links, 3u);
    auto cfg = std::make_shared<Config>();
    cfg->metrics.netdev_exclude = "^(bond|wl)";
    s.config = cfg;
    auto fams = snapshot_to_families(s);
    EXPECT_FALSE(value(fams, "rocewatch_link_up", {{"netdev", "bond0"}}));
    EXPECT_FALSE(value(fams, "rocewatch_link_up", {{"netdev", "wlP9s9"}}));
    EXPECT_TRUE(value(fams, "rocewatch_link_up", {{"netdev", "enp1s0f0np0"}}));
    EXPECT_EQ(samples(fams, "rocewatch_link_up"), links - 2);
    EXPECT_TRUE(value(fams, "rocewatch_rdma_port_info", {{"netdev", "enp1s0f0np0"}}));

    cfg->metrics.netdev_exclude.clear();
    cfg->metrics.netdev_include = "^enp1s0f[01]np[01]$";
    fams = snapshot_to_families(s);
    EXPECT_EQ(samples(fams, "rocewatch_link_up"), 2u);
    EXPECT_EQ(samples(fams, "rocewatch_link_info"), 2u);

    cfg->metrics.netdev_exclude = "f1";
    fams = snapshot_to_families(s);
    EXPECT_EQ(samples(fams, "rocewatch_link_up"), 1u) << "exclude wins over include";
    EXPECT_TRUE(value(fams, "rocewatch_link_up", {{"netdev", "enp1s0f0np0"}}));
}

TEST(Metrics, EmptySnapshotLeavesNoDeviceSeries) {
    const auto fams = snapshot_to_families(Snapshot{});
    EXPECT_FALSE(family(fams, "rocewatch_rdma_port_up"));
    EXPECT_FALSE(family(fams, "rocewatch_link_up"));
    EXPECT_FALSE(family(fams, "rocewatch_last_collection_timestamp_seconds"));
    EXPECT_FALSE(family(fams, "rocewatch_ucx_info"));
    EXPECT_EQ(value(fams, "rocewatch_health_status"), 0.0);
    EXPECT_EQ(samples(fams, "rocewatch_alerts"), 6u);
    EXPECT_TRUE(family(fams, "rocewatch_build_info"));
}

TEST(Metrics, HttpStatsFamilies) {
    HttpStats stats({"/healthz", "/metrics"});
    stats.count_request(stats.handler_index("/healthz"), 200);
    stats.count_request(stats.handler_index("/healthz"), 200);
    stats.count_request(stats.handler_index("/nope"), 404);
    stats.count_rejected(RejectReason::overload);
    const auto fams = http_families(stats);
    EXPECT_EQ(value(fams, "rocewatch_http_requests_total", {{"handler", "/healthz"}, {"code", "200"}}), 2.0);
    EXPECT_EQ(value(fams, "rocewatch_http_requests_total", {{"handler", "other"}, {"code", "404"}}), 1.0);
    EXPECT_EQ(samples(fams, "rocewatch_http_requests_total"), 2u) << "zero rows are not emitted";
    // A code without a slot of its own is counted all the same, in order among the others.
    stats.count_request(stats.handler_index("/healthz"), 418);
    stats.count_request(stats.handler_index("/healthz"), 418);
    stats.count_request(stats.handler_index("/healthz"), 503);
    const auto rows = stats.requests();
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[1].handler, "/healthz");
    EXPECT_EQ(rows[1].code, 418);
    EXPECT_EQ(rows[1].count, 2u);
    EXPECT_EQ(rows[2].code, 503);
    EXPECT_EQ(rows[3].handler, "other");
    EXPECT_EQ(value(fams, "rocewatch_http_rejected_total", {{"reason", "overload"}}), 1.0);
    EXPECT_EQ(value(fams, "rocewatch_http_rejected_total", {{"reason", "timeout"}}), 0.0);
    EXPECT_EQ(samples(fams, "rocewatch_http_rejected_total"), all_reject_reasons().size());
}

// Codes without a slot come in order among the slots' codes of their handler: before the first,
// between two, after the last, and for a handler with no other row.
TEST(Metrics, HttpRequestRowsInHandlerAndCodeOrder) {
    HttpStats stats({"/healthz", "/metrics"});
    const size_t healthz = stats.handler_index("/healthz"), metrics = stats.handler_index("/metrics");
    for (int code : {599, 200, 102, 418}) stats.count_request(healthz, code);
    stats.count_request(metrics, 299);
    std::vector<std::pair<std::string, int>> got;
    for (const auto& r : stats.requests()) got.emplace_back(r.handler, r.code);
    const std::vector<std::pair<std::string, int>> want = {
        {"/healthz", 102}, {"/healthz", 200}, {"/healthz", 418}, {"/healthz", 599}, {"/metrics", 299}};
    EXPECT_EQ(got, want);
}

TEST(Metrics, HttpTextIsTheFamiliesInTextFormat) {
    HttpStats stats({"/healthz", "/metrics"});
    stats.count_request(stats.handler_index("/metrics"), 200);
    stats.count_request(stats.handler_index("/nope"), 404);
    stats.count_request(stats.handler_index("/healthz"), 418);
    stats.count_rejected(RejectReason::overload);
    const WebReloadStatus web{.ok = false, .last_success = std::chrono::system_clock::now()};
    EXPECT_EQ(render_http_metrics(stats), text_format(http_families(stats)));
    EXPECT_EQ(render_http_metrics(stats, &web), text_format(http_families(stats, &web)));
}

TEST(Metrics, RenderedText) {
    HttpStats stats({"/metrics"});
    stats.count_request(0, 200);
    const std::string text = render_metrics(api_sample::sample_snapshot(), stats);
    EXPECT_NE(text.find("# HELP rocewatch_rdma_port_up "), std::string::npos);
    EXPECT_NE(text.find("# TYPE rocewatch_rdma_port_data_transmitted_bytes_total counter"), std::string::npos);
    EXPECT_NE(text.find("rocewatch_rdma_port_up{device=\"rocep1s0f0\",port=\"1\"} 1"), std::string::npos);
    EXPECT_NE(text.find("rocewatch_http_requests_total{handler=\"/metrics\",code=\"200\"} 1"), std::string::npos);
}

// render_snapshot_metrics writes the text as the sections walk the snapshot, with no families
// in between: byte for byte what the families give in text format, escapes and names that are
// not UTF-8 included.
TEST(Metrics, RenderedTextIsTheFamiliesInTextFormat) {
    auto s = api_sample::sample_snapshot();
    EXPECT_EQ(render_snapshot_metrics(s), text_format(snapshot_to_families(s)));
    s.devices[0].board_id = "weird \"quoted\" \\ back\nslash";
    s.links[0].name = std::string("v\xff\xfe", 3);
    s.links[0].master = std::string("b\xc3", 2);
    s.devices[0].name = std::string("rxe\xed\xa0\x80", 6);
    s.devices[0].fw_ver = "\xe2\x82\xac ok";
    const std::string text = render_snapshot_metrics(s);
    EXPECT_EQ(text, text_format(snapshot_to_families(s)));
    EXPECT_NE(text.find(R"(rocewatch_link_up{netdev="v\\xff\\xfe"} )"), std::string::npos) << text;
    EXPECT_NE(text.find(R"(board_id="weird \"quoted\" \\ back\nslash")"), std::string::npos) << text;
    EXPECT_NE(text.find("fw_ver=\"\xe2\x82\xac ok\""), std::string::npos) << text;
}

// The pieces a render deflates one by one are the text in order, a family each with its
// header; the sizes one render leaves for the next (reserved up front) change nothing of what
// the next one writes, whether they fit it or not.
TEST(Metrics, RenderedPiecesAreTheTextAFamilyEach) {
    auto s = api_sample::sample_snapshot();
    RenderSizes sizes;
    const auto pieces = render_snapshot_pieces(s, &sizes);
    EXPECT_EQ(join_pieces(pieces), text_format(snapshot_to_families(s)));
    ASSERT_GT(pieces.size(), 10u);
    for (const auto& p : pieces) EXPECT_TRUE(p.starts_with("# HELP ") || p.starts_with("# TYPE ")) << p;
    EXPECT_GE(sizes.family_bytes.size(), pieces.size()) << "every family declared, those without a sample too";
    auto more = s;
    more.devices.push_back(more.devices.front());
    more.devices.back().name = "mlx5_9";
    EXPECT_EQ(join_pieces(render_snapshot_pieces(more, &sizes)), text_format(snapshot_to_families(more)));
    EXPECT_EQ(join_pieces(render_snapshot_pieces(s, &sizes)), text_format(snapshot_to_families(s)));
    RenderSizes wrong{.family_bytes = std::vector<std::size_t>(3, 1'000'000)};
    EXPECT_EQ(join_pieces(render_snapshot_pieces(s, &wrong)), text_format(snapshot_to_families(s)));
}

namespace {

// Writes `text` to a temp file and runs `promtool check metrics` on it; returns its exit
// status and output.
std::pair<int, std::string> promtool_check(const std::string& text) {
    char path[] = "/tmp/rocewatch-metrics-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return {-1, "mkstemp failed"};
    ::close(fd);
    { std::ofstream(path) << text; }
    const std::string cmd = "promtool check metrics < " + std::string(path) + " 2>&1";
    std::string out;
    int rc = -1;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[512];
        while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
        rc = ::pclose(p);
    }
    std::filesystem::remove(path);
    return {rc, out};
}

bool have_promtool() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

// promtool may be missing outside CI: the test skips, saying why. In CI that is a failure.
#define REQUIRE_PROMTOOL()                                                                            \
    do {                                                                                              \
        if (!have_promtool()) {                                                                       \
            if (rocewatch::testing::in_ci())                                                          \
                FAIL() << "promtool is missing (Debian package prometheus), and CI must run this";    \
            GTEST_SKIP() << "promtool not installed (Debian package prometheus); CI runs this check"; \
        }                                                                                             \
    } while (0)

}  // namespace

TEST(Metrics, PromtoolAcceptsRichSnapshot) {
    REQUIRE_PROMTOOL();
    auto s = api_sample::sample_snapshot();
    // Label values with every character the text format must escape.
    s.devices[0].board_id = "weird \"quoted\" \\ back\nslash";
    s.links[0].kind = "we\"ird";
    HttpStats stats({"/metrics", R"(/api/v1/devices/([^/]+))"});
    stats.count_request(0, 200);
    stats.count_request(1, 404);
    stats.count_rejected(RejectReason::timeout);
    const auto [rc, out] = promtool_check(render_metrics(s, stats));
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out.find("error"), std::string::npos) << out;
    // Lint findings (missing HELP, bad suffixes, non-base units) also fail the check.
    EXPECT_TRUE(out.empty()) << out;
}

// One name that is not UTF-8 (a veth called v\xff\xfe, an RDMA device) must not make the
// whole scrape unparseable: its bytes are escaped, every other series stays.
TEST(Metrics, InvalidUtf8InNamesIsEscapedAndPromtoolAccepts) {
    auto s = api_sample::sample_snapshot();
    s.links[0].name = std::string("v\xff\xfe", 3);
    s.links[0].master = std::string("b\xc3", 2);            // a sequence cut short
    s.devices[0].name = std::string("rxe\xed\xa0\x80", 6);  // a UTF-16 surrogate
    s.devices[0].fw_ver = "\xe2\x82\xac ok";                // valid UTF-8 stays as it is
    const auto fams = snapshot_to_families(s);
    EXPECT_TRUE(value(fams, "rocewatch_link_up", {{"netdev", "v\\xff\\xfe"}}));
    EXPECT_TRUE(value(fams, "rocewatch_link_info", {{"master", "b\\xc3"}}));
    EXPECT_TRUE(value(fams, "rocewatch_rdma_port_up", {{"device", "rxe\\xed\\xa0\\x80"}}));
    EXPECT_TRUE(value(fams, "rocewatch_rdma_device_info", {{"fw_ver", "\xe2\x82\xac ok"}}));
    REQUIRE_PROMTOOL();
    const auto [rc, out] = promtool_check(render_metrics(s, HttpStats({"/metrics"})));
    EXPECT_EQ(rc, 0) << out;
    EXPECT_TRUE(out.empty()) << out;
}

TEST(Metrics, SeriesDroppedAndCollectorAge) {
    auto s = api_sample::sample_snapshot();
    s.devices[0].ports[0].gids_dropped = 9000;
    s.devices[0].ports[0].counters_dropped = 12;
    s.collectors = {CollectorStatus{.name = "sysfs", .last_success = sample_time_minus(30)}};
    const auto fams = snapshot_to_families(s);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_series_dropped", {{"device", s.devices[0].name}, {"port", "1"}}), 9012);
    EXPECT_EQ(value(fams, "rocewatch_collector_last_success_timestamp_seconds", {{"collector", "sysfs"}}),
              std::chrono::duration<double>(sample_time_minus(30).time_since_epoch()).count());
}

// One definition of up (model/rdma_port): ACTIVE with phys_state 4 is not up, in the metric
// as in the rule and REST.
TEST(Metrics, PortUpNeedsActiveAndLinkUp) {
    auto s = api_sample::sample_snapshot();
    s.devices.at(0).ports.at(0).phys_state = 4;
    const auto fams = snapshot_to_families(s);
    const LabelMap port = {{"device", s.devices.at(0).name}, {"port", "1"}};
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_state", port), 4.0);
    EXPECT_EQ(value(fams, "rocewatch_rdma_port_up", port), 0.0);
}

// A transceiver module: its identity as an info series, monitors per lane in base units
// (watts, amperes), and the module's own levels beside them, so a Prometheus rule can compare
// them too; a module that could not be read exports nothing. promtool accepts the lot.
TEST(Metrics, ModuleFamiliesInBaseUnits) {
    auto s = api_sample::sample_snapshot();
    Transceiver t{.spec = "CMIS",
                  .identifier = 0x19,
                  .type = "OSFP",
                  .vendor = "NVIDIA",
                  .part_number = "MMA4Z00-NS",
                  .serial = "MT2401FT00042",
                  .diagnostics = true,
                  .temperature_c = 48.25,
                  .voltage_v = 3.28};
    t.lanes.assign(8, ModuleLane{.rx_power_mw = 1.1, .tx_power_mw = 1.2, .tx_bias_ma = 8.0});
    t.lanes[5].rx_power_mw = 0.05;
    t.rx_power_thresholds = {.high_alarm = 4.0, .low_alarm = 0.08, .high_warning = 3.2, .low_warning = 0.1};
    t.temperature_thresholds = {.high_alarm = 80, .high_warning = 75};
    ASSERT_GE(s.links.size(), 2u);
    s.links[0].module = t;
    s.links[1].module = Transceiver{.error = EOPNOTSUPP};
    // The standard groups' FCS and symbol errors, from ethtool netlink, as counters.
    s.links[0].phy = PhyLink{.standard_stats = {{"eth-mac/FrameCheckSequenceErrors", 42},
                                                {"eth-phy/SymbolErrorDuringCarrier", 17},
                                                {"eth-mac/FramesReceivedOK", 1000}}};
    // The switch and port lldpd hears, as an info series to join on netdev.
    s.links[1].lldp = LldpNeighbor{.chassis_id = "0c:42:a1:00:00:01",
                                   .port_id = "0c:42:a1:00:00:0d",
                                   .port_id_subtype = "mac",
                                   .port_description = "swp13"};
    const auto fams = snapshot_to_families(s);
    EXPECT_EQ(value(fams, "rocewatch_link_lldp_neighbor_info",
                    {{"netdev", s.links[1].name}, {"switch", "0c:42:a1:00:00:01"}, {"switch_port", "swp13"}}),
              1.0);
    EXPECT_EQ(samples(fams, "rocewatch_link_lldp_neighbor_info"), 1u);
    EXPECT_EQ(value(fams, "rocewatch_link_fcs_errors_total", {{"netdev", s.links[0].name}}), 42.0);
    EXPECT_EQ(value(fams, "rocewatch_link_symbol_errors_total", {{"netdev", s.links[0].name}}), 17.0);
    EXPECT_EQ(samples(fams, "rocewatch_link_fcs_errors_total"), 1u);
    const std::string n = s.links[0].name;
    EXPECT_EQ(value(fams, "rocewatch_module_info", {{"netdev", n}, {"type", "OSFP"}, {"serial", "MT2401FT00042"}}),
              1.0);
    EXPECT_EQ(samples(fams, "rocewatch_module_info"), 1u) << "the unreadable module exports nothing";
    EXPECT_EQ(value(fams, "rocewatch_module_temperature_celsius", {{"netdev", n}}), 48.25);
    EXPECT_EQ(samples(fams, "rocewatch_module_rx_power_watts"), 8u);
    EXPECT_NEAR(*value(fams, "rocewatch_module_rx_power_watts", {{"netdev", n}, {"lane", "6"}}), 0.05e-3, 1e-12);
    EXPECT_NEAR(*value(fams, "rocewatch_module_tx_bias_amperes", {{"netdev", n}, {"lane", "1"}}), 8e-3, 1e-12);
    EXPECT_NEAR(*value(fams, "rocewatch_module_threshold",
                       {{"netdev", n}, {"quantity", "rx_power"}, {"level", "low_warning"}}),
                0.1e-3, 1e-12);
    EXPECT_EQ(value(fams, "rocewatch_module_threshold",
                    {{"netdev", n}, {"quantity", "temperature"}, {"level", "high_alarm"}}),
              80.0);
    EXPECT_FALSE(value(fams, "rocewatch_module_threshold", {{"quantity", "temperature"}, {"level", "low_alarm"}}))
        << "a level the module does not store is not exported";
    REQUIRE_PROMTOOL();
    HttpStats stats({"/metrics"});
    const auto [rc, out] = promtool_check(render_metrics(s, stats));
    EXPECT_EQ(rc, 0) << out;
    EXPECT_TRUE(out.empty()) << out;
}
