// Pure views of a Snapshot as the JSON documents the REST API serves.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "daemon/model/snapshot.hpp"

namespace rocewatch::api {

// RFC 3339 in UTC with milliseconds ("2025-03-01T12:00:00.250Z"); the epoch, which the
// model uses for "never", gives "" so callers can turn it into null.
std::string format_rfc3339(TimePoint t);

// The version of the documents' schema, in every /api/v1 document as "api_version". 2: numbers
// as numbers, times as *_at RFC 3339 UTC strings, rates in bytes per second with the unit in
// the key (CHANGELOG.md lists each rename).
inline constexpr int kApiVersion = 2;

// j with "api_version" set: what every /api/v1 document carries.
nlohmann::json versioned(nlohmann::json j);

// Filters of GET /api/v1/alerts: each set one must match; unset ones match all.
struct AlertFilter {
    std::optional<Severity> severity;
    std::optional<AlertState> state;
    std::optional<Scope> scope;
    std::optional<std::string> rule;
    std::optional<std::string> object;
};

// Field names are snake_case and stable: scripts parse these documents. Values the
// snapshot does not know (unset optionals, unset times) are null, never 0 or "".

// Overall health, counts, collection time and age, daemon status. `now` is passed in
// (not read from a clock) so the view stays a pure function tests can pin.
nlohmann::json status_json(const Snapshot& s, TimePoint now);

nlohmann::json devices_json(const Snapshot& s);
// nullopt when no device has that name (the handler answers 404).
std::optional<nlohmann::json> device_json(const Snapshot& s, const std::string& name);

// Links with addresses, which RDMA device/port is bound to each, and which GIDs name it.
nlohmann::json interfaces_json(const Snapshot& s);

// Bonds with their slaves' MII status, state and failure counts.
nlohmann::json bonds_json(const Snapshot& s);

// Active (pending and firing) alerts.
nlohmann::json alerts_json(const Snapshot& s, const AlertFilter& filter = {});

// An alert's details as JSON: a figure (what the rules wrote as a decimal number) becomes a
// JSON number, text (names, durations, lists) stays a string.
nlohmann::json details_json(const std::map<std::string, std::string>& details);

// Alert transitions, oldest first; `limit` keeps only the newest N.
nlohmann::json history_json(const Snapshot& s, std::optional<std::size_t> limit = std::nullopt);

// The error body every non-2xx answer carries: {"error": message, "status": status}.
nlohmann::json error_json(int status, const std::string& message);

// Serialises for the wire, indented for curl users. Netdev and RDMA device names and sysfs
// strings are bytes, not text: invalid UTF-8 in any string or key is written as \xNN
// (see escape_invalid_utf8), the same as /metrics shows it, never thrown on or dropped.
std::string dump_json(const nlohmann::json& j);

// Valid UTF-8 unchanged; otherwise every byte that is not part of a valid sequence becomes
// the four characters \xNN, so the name "v\xff\xfe" reads as `ip link` would escape it.
std::string escape_invalid_utf8(std::string_view s);

}  // namespace rocewatch::api
