// The text format writer against prometheus-cpp's TextSerializer, byte for byte.
#include "api/text_format.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <cstring>
#include <random>
#include <sstream>

#include <prometheus/text_serializer.h>

namespace {

namespace api = rocewatch::api;

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string reference(const std::vector<MetricFamily>& fams) {
    std::ostringstream out;
    prometheus::TextSerializer{}.Serialize(out, fams);
    return out.str();
}

// Values where %.16g, shortest round trip and fixed notation part ways, and the specials.
const std::vector<double> kEdgeValues = {0.0,
                                         -0.0,
                                         1,
                                         0.1,
                                         1.0 / 3,
                                         0.5,
                                         100,
                                         12500000000,
                                         1e15,
                                         999999999999999,
                                         -999999999999999,
                                         9999999999999998,
                                         -9999999999999998,
                                         4503599627370495.5,
                                         1e16,
                                         1e17,
                                         1e20,
                                         1e21,
                                         9007199254740993.0,
                                         18446744073709551615.0,
                                         123456789.123456789,
                                         1e-4,
                                         1e-5,
                                         2.5e-5,
                                         1e-7,
                                         0.000123456789012345678,
                                         -42.25,
                                         std::numeric_limits<double>::denorm_min(),
                                         std::numeric_limits<double>::max(),
                                         std::numeric_limits<double>::lowest(),
                                         std::nan(""),
                                         std::numeric_limits<double>::infinity(),
                                         -std::numeric_limits<double>::infinity()};

ClientMetric with_labels(std::vector<ClientMetric::Label> labels) {
    ClientMetric m;
    m.label = std::move(labels);
    return m;
}

TEST(TextFormat, CountersAndGaugesMatchTheSerializerAtEveryEdgeValue) {
    MetricFamily c{.name = "rw_c_total", .help = "A counter.", .type = MetricType::Counter, .metric = {}};
    MetricFamily g{.name = "rw_g", .help = "", .type = MetricType::Gauge, .metric = {}};
    MetricFamily u{.name = "rw_u", .help = "Untyped \\ with \"quotes\"", .type = MetricType::Untyped, .metric = {}};
    for (double v : kEdgeValues) {
        auto m = with_labels({{"device", "mlx5_0"}, {"port", "1"}});
        m.counter.value = v;
        c.metric.push_back(m);
        auto n = with_labels({});
        n.gauge.value = v;
        g.metric.push_back(n);
        auto w = with_labels({{"a", "x"}});
        w.untyped.value = v;
        w.timestamp_ms = -5;
        u.metric.push_back(w);
    }
    const std::vector<MetricFamily> fams = {c, g, u};
    EXPECT_EQ(api::text_format(fams), reference(fams));
}

TEST(TextFormat, LabelValuesAreEscapedAsTheSerializerDoes) {
    MetricFamily g{.name = "rw_info", .help = "h", .type = MetricType::Gauge, .metric = {}};
    for (const char* v : {"", "plain", "back\\slash", "\"quoted\"", "new\nline", "\\\"\n", "end\\", "\n", "a\\\\b",
                          "utf8 \xc3\xa9", "tab\there"}) {
        auto m = with_labels({{"v", v}, {"w", v}});
        m.gauge.value = 1;
        g.metric.push_back(m);
    }
    const std::vector<MetricFamily> fams = {g};
    EXPECT_EQ(api::text_format(fams), reference(fams));
}

TEST(TextFormat, SummariesAndHistogramsMatchTheSerializer) {
    MetricFamily s{.name = "rw_latency_seconds", .help = "s", .type = MetricType::Summary, .metric = {}};
    auto m = with_labels({{"peer", "b"}});
    m.summary.sample_count = 1000;
    m.summary.sample_sum = 0.0123;
    m.summary.quantile = {{0.5, 2.5e-6}, {0.99, 1e-5}, {1, std::nan("")}};
    s.metric.push_back(m);
    auto bare = with_labels({});
    bare.summary.sample_count = 0;
    s.metric.push_back(bare);

    MetricFamily h{.name = "rw_h", .help = "h", .type = MetricType::Histogram, .metric = {}};
    auto a = with_labels({{"x", "1"}});
    a.histogram.sample_count = 7;
    a.histogram.sample_sum = 3.25;
    a.histogram.bucket = {{1, 0.001}, {5, 0.01}};
    a.timestamp_ms = 1700000000123;
    h.metric.push_back(a);
    auto b = with_labels({});  // ends at +Inf itself: no second +Inf bucket
    b.histogram.sample_count = 2;
    b.histogram.bucket = {{1, 0.5}, {2, std::numeric_limits<double>::infinity()}};
    h.metric.push_back(b);
    const std::vector<MetricFamily> fams = {s, h};
    EXPECT_EQ(api::text_format(fams), reference(fams));
}

// Random values across the whole double range and counters as they come from uint64.
TEST(TextFormat, RandomValuesMatchTheSerializer) {
    std::mt19937_64 rng(14);
    MetricFamily c{.name = "rw_x_total", .help = "x", .type = MetricType::Counter, .metric = {}};
    for (int i = 0; i < 20000; ++i) {
        auto m = with_labels({{"i", std::to_string(i)}});
        const uint64_t bits = rng();
        switch (i % 3) {
            case 0: m.counter.value = static_cast<double>(bits >> (bits % 64)); break;
            case 1:
                m.counter.value = std::ldexp(static_cast<double>(bits % 1000000007), static_cast<int>(bits % 120) - 60);
                break;
            default: {
                double d = 0;
                static_assert(sizeof d == sizeof bits);
                std::memcpy(&d, &bits, sizeof d);
                m.counter.value = d;
            }
        }
        c.metric.push_back(m);
    }
    const std::vector<MetricFamily> fams = {c};
    EXPECT_EQ(api::text_format(fams), reference(fams));
}

TEST(TextFormat, AppendsAfterWhatIsThere) {
    MetricFamily g{.name = "rw_g", .help = "g", .type = MetricType::Gauge, .metric = {with_labels({})}};
    std::string out = "before\n";
    api::append_text_format(out, {g});
    EXPECT_EQ(out, "before\n# HELP rw_g g\n# TYPE rw_g gauge\nrw_g 0\n");
}

}  // namespace
