// Prometheus text exposition format 0.0.4, written straight into a string.
#include "api/text_format.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>

namespace rocewatch::api {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

void append_value(std::string& out, uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

void append_value(std::string& out, int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

void append_value(std::string& out, double v) {
    // A whole number under 1e16 has at most 16 digits, which %.16g prints as they are: every
    // counter short of 10^16, and most gauges. to_chars of an integer is several times faster
    // than of a double with a precision. -0 is not one: %.16g prints its sign.
    if (v > -1e16 && v < 1e16 && v == std::trunc(v) && !(v == 0 && std::signbit(v))) {
        append_value(out, static_cast<int64_t>(v));
        return;
    }
    if (std::isnan(v)) {
        out += "Nan";
    } else if (std::isinf(v)) {
        out += v < 0 ? "-Inf" : "+Inf";
    } else {
        // printf's %.16g, which is what the ostream with precision 16 gave.
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 16);
        out.append(buf, r.ptr);
    }
}

// A label value between its quotes: \ and " get a backslash before them, a newline is \n.
// A plain loop: find_first_of with a set of three calls memchr on the set for every byte.
void append_escaped(std::string& out, std::string_view s) {
    std::size_t from = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c != '\\' && c != '"' && c != '\n') continue;
        out.append(s.substr(from, i - from));
        out += '\\';
        out += c == '\n' ? 'n' : c;
        from = i + 1;
    }
    out.append(s.substr(from));
}

// The name with its suffix, and its labels with one more where given (quantile, le).
template <typename Extra>
void append_head(std::string& out, const MetricFamily& f, const ClientMetric& m, std::string_view suffix = {},
                 std::string_view extra_name = {}, const Extra& extra_value = {}) {
    out += f.name;
    out += suffix;
    if (!m.label.empty() || !extra_name.empty()) {
        out += '{';
        bool first = true;
        for (const auto& l : m.label) {
            if (!first) out += ',';
            first = false;
            out += l.name;
            out += "=\"";
            append_escaped(out, l.value);
            out += '"';
        }
        if (!extra_name.empty()) {
            if (!first) out += ',';
            out += extra_name;
            out += "=\"";
            if constexpr (std::is_same_v<Extra, double>)
                append_value(out, extra_value);
            else
                append_escaped(out, extra_value);
            out += '"';
        }
        out += '}';
    }
    out += ' ';
}

void append_head(std::string& out, const MetricFamily& f, const ClientMetric& m, std::string_view suffix = {}) {
    append_head<std::string_view>(out, f, m, suffix);
}

void append_tail(std::string& out, const ClientMetric& m) {
    if (m.timestamp_ms != 0) {
        out += ' ';
        append_value(out, m.timestamp_ms);
    }
    out += '\n';
}

void append_sample(std::string& out, const MetricFamily& f, const ClientMetric& m, double v) {
    append_head(out, f, m);
    append_value(out, v);
    append_tail(out, m);
}

// The _count and _sum lines a summary and a histogram both start with.
void append_count_and_sum(std::string& out, const MetricFamily& f, const ClientMetric& m, uint64_t count, double sum) {
    append_head(out, f, m, "_count");
    append_value(out, count);
    append_tail(out, m);
    append_head(out, f, m, "_sum");
    append_value(out, sum);
    append_tail(out, m);
}

void append_summary(std::string& out, const MetricFamily& f, const ClientMetric& m) {
    const auto& s = m.summary;
    append_count_and_sum(out, f, m, s.sample_count, s.sample_sum);
    for (const auto& q : s.quantile) {
        append_head(out, f, m, {}, "quantile", q.quantile);
        append_value(out, q.value);
        append_tail(out, m);
    }
}

void append_histogram(std::string& out, const MetricFamily& f, const ClientMetric& m) {
    const auto& h = m.histogram;
    append_count_and_sum(out, f, m, h.sample_count, h.sample_sum);
    double last = -std::numeric_limits<double>::infinity();
    for (const auto& bucket : h.bucket) {
        append_head(out, f, m, "_bucket", "le", bucket.upper_bound);
        last = bucket.upper_bound;
        append_value(out, bucket.cumulative_count);
        append_tail(out, m);
    }
    if (last != std::numeric_limits<double>::infinity()) {
        append_head(out, f, m, "_bucket", "le", std::string_view("+Inf"));
        append_value(out, h.sample_count);
        append_tail(out, m);
    }
}

std::string_view type_name(MetricType t) {
    switch (t) {
        case MetricType::Counter: return "counter";
        case MetricType::Gauge: return "gauge";
        case MetricType::Summary: return "summary";
        case MetricType::Untyped: return "untyped";
        case MetricType::Histogram: return "histogram";
    }
    return "untyped";
}

}  // namespace

void append_family_header(std::string& out, std::string_view name, std::string_view help, MetricType type) {
    if (!help.empty()) {
        out += "# HELP ";
        out += name;
        out += ' ';
        out += help;
        out += '\n';
    }
    out += "# TYPE ";
    out += name;
    out += ' ';
    out += type_name(type);
    out += '\n';
}

void append_sample_line(std::string& out, std::string_view name, std::span<const LabelView> labels, double value) {
    out += name;
    if (!labels.empty()) {
        char sep = '{';
        for (const auto& [label, v] : labels) {
            out += sep;
            sep = ',';
            out += label;
            out += "=\"";
            append_escaped(out, v);
            out += '"';
        }
        out += '}';
    }
    out += ' ';
    append_value(out, value);
    out += '\n';
}

void append_text_format(std::string& out, const std::vector<MetricFamily>& families) {
    for (const auto& f : families) {
        append_family_header(out, f.name, f.help, f.type);
        for (const auto& m : f.metric) {
            switch (f.type) {
                case MetricType::Counter: append_sample(out, f, m, m.counter.value); break;
                case MetricType::Gauge: append_sample(out, f, m, m.gauge.value); break;
                case MetricType::Untyped: append_sample(out, f, m, m.untyped.value); break;
                case MetricType::Summary: append_summary(out, f, m); break;
                case MetricType::Histogram: append_histogram(out, f, m); break;
            }
        }
    }
}

std::string text_format(const std::vector<MetricFamily>& families) {
    std::string out;
    append_text_format(out, families);
    return out;
}

}  // namespace rocewatch::api
