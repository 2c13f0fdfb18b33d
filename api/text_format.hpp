// Prometheus text exposition format 0.0.4, written straight into a string.
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

namespace rocewatch::api {

// Appends `families` to `out` byte for byte as prometheus-cpp's TextSerializer (1.0.1, the
// Debian 12 library) writes them: values with 16 significant digits ("%.16g"), Nan, +Inf and
// -Inf; label values with \, " and newline escaped (\\, \", \n); HELP as given. The serializer
// went through std::ostream for every name, label and value and was two thirds of the cost of
// rendering /metrics at 128 NICs (issue 14); this is the same text from appends and to_chars.
void append_text_format(std::string& out, const std::vector<prometheus::MetricFamily>& families);

[[nodiscard]] std::string text_format(const std::vector<prometheus::MetricFamily>& families);

}  // namespace rocewatch::api
