// Prometheus text exposition format 0.0.4, written straight into a string.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

namespace rocewatch::api {

// Appends `families` to `out` byte for byte as prometheus-cpp's TextSerializer (1.0.1, the
// Debian 12 library) writes them: values with 16 significant digits ("%.16g"), Nan, +Inf and
// -Inf; label values with \, " and newline escaped (\\, \", \n); HELP as given. The serializer
// went through std::ostream for every name, label and value and was two thirds of the cost of
// rendering /metrics at 128 NICs (issue 14); this is the same text from appends and to_chars.
void append_text_format(std::string& out, const std::vector<prometheus::MetricFamily>& families);

// The two parts append_text_format writes a family as, for a caller that writes samples as it
// walks its own data, with no MetricFamily in between: the # HELP and # TYPE lines, and one
// `name{label="value",...} value` line of a counter, gauge or untyped sample (no timestamp).
// Label values are escaped as above; making them valid UTF-8 is the caller's part.
using LabelView = std::pair<std::string_view, std::string_view>;
void append_family_header(std::string& out, std::string_view name, std::string_view help, prometheus::MetricType type);
void append_sample_line(std::string& out, std::string_view name, std::span<const LabelView> labels, double value);

[[nodiscard]] std::string text_format(const std::vector<prometheus::MetricFamily>& families);

}  // namespace rocewatch::api
