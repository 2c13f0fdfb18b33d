// Alertmanager payloads and the book of what is due: labels, annotations, times, resends.
#include <gtest/gtest.h>

#include "daemon/alertmanager/payload.hpp"
#include "util/http_url.hpp"

using namespace rocewatch;
using namespace rocewatch::alertmanager;
using namespace std::chrono_literals;

namespace {

const TimePoint t0 = TimePoint{} + std::chrono::milliseconds(1'764'109'800'123);  // 2025-11-25T22:30:00.123Z

Alert firing_alert(std::string rule = "mtu_low", std::string object = "enp1s0f0np0") {
    return Alert{.rule = std::move(rule),
                 .object = std::move(object),
                 .severity = Severity::critical,
                 .state = AlertState::firing,
                 .summary = "enp1s0f0np0 has MTU 1500, expected 9000",
                 .action = "ip link set enp1s0f0np0 mtu 9000",
                 .details = {{"expected_mtu", "9000"}, {"actual_mtu", "1500"}},
                 .since = t0 - 10s,
                 .first_seen = t0 - 20s,
                 .last_seen = t0};
}

BookSettings settings() {
    return {.node = "spark-a",
            .generator_base = "http://spark-a:9879",
            .resend_interval = 1min,
            .resolved_retention = 15min};
}

}  // namespace

TEST(Payload, LabelsAreTheAlertsIdentity) {
    EXPECT_EQ(alert_labels(firing_alert(), "spark-a"), (std::map<std::string, std::string>{
                                                           {"alertname", "rocewatch_mtu_low"},
                                                           {"rule", "mtu_low"},
                                                           {"object", "enp1s0f0np0"},
                                                           {"severity", "critical"},
                                                           {"scope", "node"},
                                                           {"node", "spark-a"},
                                                       }));
    EXPECT_FALSE(alert_labels(firing_alert(), "").contains("node")) << "an empty label is no label";
    auto peer = firing_alert("peer_unreachable", "spark-b");
    peer.scope = Scope::peer;
    EXPECT_EQ(alert_labels(peer, "spark-a").at("scope"), "peer");
}

TEST(Payload, AnnotationsCarrySummaryActionAndDetails) {
    auto a = alert_annotations(firing_alert());
    EXPECT_EQ(a["summary"], "enp1s0f0np0 has MTU 1500, expected 9000");
    EXPECT_EQ(a["action"], "ip link set enp1s0f0np0 mtu 9000");
    EXPECT_EQ(a["details"], "actual_mtu=1500, expected_mtu=9000");
    Alert bare = firing_alert();
    bare.details.clear();
    EXPECT_FALSE(alert_annotations(bare).contains("details"));
}

TEST(Payload, Rfc3339InUtcWithMilliseconds) {
    EXPECT_EQ(rfc3339(t0), "2025-11-25T22:30:00.123Z");
    EXPECT_EQ(rfc3339(TimePoint{}), "1970-01-01T00:00:00.000Z");
}

TEST(Payload, GeneratorUrlPointsAtTheRestApi) {
    AlertmanagerConfig c;
    EXPECT_EQ(generator_base(c, "0.0.0.0:9879", "spark-a"), "http://spark-a:9879");
    EXPECT_EQ(generator_base(c, ":9900", "spark-a"), "http://spark-a:9900");
    EXPECT_EQ(generator_base(c, "10.0.0.5:9879", "spark-a"), "http://10.0.0.5:9879");
    EXPECT_EQ(generator_base(c, "[fd00::5]:9879", "spark-a"), "http://[fd00::5]:9879");
    c.external_url = "https://spark-a.example/rocewatch/";
    EXPECT_EQ(generator_base(c, "0.0.0.0:9879", "spark-a"), "https://spark-a.example/rocewatch");
    EXPECT_EQ(generator_url("http://h:1", firing_alert("port_down", "rocep1s0f0/1")),
              "http://h:1/api/v1/alerts?rule=port_down&object=rocep1s0f0%2F1");
}

TEST(Payload, JsonIsWhatAlertmanagerTakes) {
    OutgoingAlert a{.labels = {{"alertname", "x"}},
                    .annotations = {{"summary", "s"}},
                    .starts_at = t0,
                    .ends_at = t0 + 4min,
                    .generator_url = "http://h:1/"};
    auto j = payload_json({a});
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["labels"]["alertname"], "x");
    EXPECT_EQ(j[0]["annotations"]["summary"], "s");
    EXPECT_EQ(j[0]["startsAt"], "2025-11-25T22:30:00.123Z");
    EXPECT_EQ(j[0]["endsAt"], "2025-11-25T22:34:00.123Z");
    EXPECT_EQ(j[0]["generatorURL"], "http://h:1/");
    EXPECT_EQ(payload_json({}).dump(), "[]");
}

TEST(AlertBook, PendingIsNeverSent) {
    AlertBook book;
    Alert a = firing_alert();
    a.state = AlertState::pending;
    EXPECT_TRUE(book.step({a}, settings(), t0).empty());
    EXPECT_EQ(book.size(), 0u);
}

TEST(AlertBook, FiringIsSentOnceThenEveryResendInterval) {
    AlertBook book;
    auto s = settings();
    auto due = book.step({firing_alert()}, s, t0);
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].labels.at("alertname"), "rocewatch_mtu_low");
    EXPECT_EQ(due[0].starts_at, t0 - 20s) << "startsAt is when the condition was first seen";
    EXPECT_EQ(due[0].ends_at, t0 + 4min) << "firing: endsAt 4 x resend_interval ahead";
    EXPECT_EQ(due[0].generator_url, "http://spark-a:9879/api/v1/alerts?rule=mtu_low&object=enp1s0f0np0");
    EXPECT_TRUE(book.step({firing_alert()}, s, t0 + 59s).empty());
    due = book.step({firing_alert()}, s, t0 + 60s);
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].ends_at, t0 + 60s + 4min);
    EXPECT_EQ(due[0].starts_at, t0 - 20s) << "startsAt stays";
}

TEST(AlertBook, AChangedAlertIsSentAtOnce) {
    AlertBook book;
    auto s = settings();
    ASSERT_EQ(book.step({firing_alert()}, s, t0).size(), 1u);
    Alert changed = firing_alert();
    changed.details["actual_mtu"] = "1400";
    auto due = book.step({changed}, s, t0 + 1s);
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].annotations.at("details"), "actual_mtu=1400, expected_mtu=9000");
    EXPECT_TRUE(book.step({changed}, s, t0 + 2s).empty()) << "last_seen moving is no change";
}

TEST(AlertBook, ResolvedIsSentAtOnceThenResentUntilRetentionEnds) {
    AlertBook book;
    auto s = settings();
    ASSERT_EQ(book.step({firing_alert(), firing_alert("port_down", "rocep1s0f0/1")}, s, t0).size(), 2u);
    Alert pending_again = firing_alert();
    pending_again.state = AlertState::pending;  // not firing any more counts as resolved
    auto due = book.step({pending_again}, s, t0 + 5s);
    ASSERT_EQ(due.size(), 2u);
    for (const auto& a : due) EXPECT_EQ(a.ends_at, t0 + 5s) << a.labels.at("rule") << ": endsAt = resolution";
    EXPECT_TRUE(book.step({}, s, t0 + 10s).empty());
    due = book.step({}, s, t0 + 65s);
    ASSERT_EQ(due.size(), 2u) << "resolved alerts are resent for an Alertmanager that missed them";
    EXPECT_EQ(due[0].ends_at, t0 + 5s);
    EXPECT_EQ(book.step({}, s, t0 + 5s + 15min + 1s).size(), 0u);
    EXPECT_EQ(book.size(), 0u) << "forgotten after resolved_retention";
}

TEST(AlertBook, FiringAgainAfterResolvingIsANewAlert) {
    AlertBook book;
    auto s = settings();
    ASSERT_EQ(book.step({firing_alert()}, s, t0).size(), 1u);
    ASSERT_EQ(book.step({}, s, t0 + 5s).size(), 1u);
    Alert again = firing_alert();
    again.first_seen = t0 + 8s;
    auto due = book.step({again}, s, t0 + 10s);
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].starts_at, t0 + 8s);
    EXPECT_EQ(due[0].ends_at, t0 + 10s + 4min);
}

// A catch-up for a target that missed alerts: everything in the book, firing and resolved
// alike, and the book untouched, so the other targets' resends keep their time.
TEST(AlertBook, AllIsEverythingAndLeavesTheBookAsItWas) {
    AlertBook book;
    auto s = settings();
    ASSERT_EQ(book.step({firing_alert(), firing_alert("port_down", "x")}, s, t0).size(), 2u);
    ASSERT_EQ(book.step({firing_alert()}, s, t0 + 1s).size(), 1u);  // port_down resolved
    EXPECT_TRUE(book.step({firing_alert()}, s, t0 + 2s).empty());
    const auto all = book.all(s, t0 + 3s);
    ASSERT_EQ(all.size(), 2u) << "firing and resolved alike";
    EXPECT_EQ(all[0].only_to, nullptr);
    EXPECT_TRUE(book.step({firing_alert()}, s, t0 + 4s).empty()) << "nothing made due by it";
    EXPECT_EQ(book.step({firing_alert()}, s, t0 + s.resend_interval).size(), 1u) << "the resend on its time";
}

TEST(HttpUrl, ParsesWhatAlertmanagerUrlsLookLike) {
    std::string why;
    auto u = parse_http_url("http://am:9093", why);
    ASSERT_TRUE(u) << why;
    EXPECT_EQ(u->host, "am");
    EXPECT_EQ(u->port, 9093);
    EXPECT_EQ(u->path, "");
    u = parse_http_url("http://[::1]/alertmanager/", why);
    ASSERT_TRUE(u) << why;
    EXPECT_EQ(u->host, "::1");
    EXPECT_EQ(u->port, 80);
    EXPECT_EQ(u->path, "/alertmanager");
    EXPECT_FALSE(u->https);
    u = parse_http_url("https://am.example", why);
    ASSERT_TRUE(u) << why;
    EXPECT_TRUE(u->https);
    EXPECT_EQ(u->port, 443) << "https's own port";
    u = parse_http_url("https://10.0.0.9:9443/am", why);
    ASSERT_TRUE(u) << why;
    EXPECT_EQ(u->port, 9443);
    EXPECT_EQ(u->path, "/am");
    for (const char* bad :
         {"ftp://am:9093", "am:9093", "http://", "https://", "http://:9093", "http://am:", "http://am:99999",
          "http://u:p@am:9093", "https://u:p@am", "http://am:9093/?x=1", "http://[::1:9093"})
        EXPECT_FALSE(parse_http_url(bad, why)) << bad;
}
