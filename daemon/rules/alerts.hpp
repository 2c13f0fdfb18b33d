// The alert state machine: findings over time become pending, firing and resolved alerts.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// Keyed by (rule, object). Per rule, RuleSettings gives for_duration and clear_after:
//
//   new finding                      -> pending       (history: inactive -> pending)
//     ... or, with for_duration 0,   -> firing        (history: inactive -> firing)
//   pending, present for >= for      -> firing        (history: pending -> firing)
//   not seen for >= clear_after      -> firing: resolved and removed (firing -> resolved)
//                                       pending: dropped             (pending -> inactive)
//   seen again inside clear_after    -> unchanged: no flapping alerts, and a pending alert
//                                       keeps its first_seen so a flickering finding still
//                                       fires once for_duration has passed
//   firing, severity changes         -> stays firing  (history: firing -> firing, new severity)
//   rule disabled in the config      -> removed at once, recorded as above
//
// "Not seen" is measured from last_seen, so after a restart an alert whose finding is gone
// resolves on the first update past clear_after. Severity, summary, action and details
// always follow the latest finding. Findings are expected unique per key; a repeated key
// in one update is ignored after its first occurrence. Time is passed in, never read.
class AlertTracker {
public:
    explicit AlertTracker(size_t history_limit = 1000);

    void update(const std::vector<Finding>& findings, const Config& c, TimePoint now);

    // Pending and firing alerts: severity (critical first), then rule, then object.
    [[nodiscard]] std::vector<Alert> active() const;
    // Transitions, oldest first, at most c.daemon.history_limit (of the last update).
    // The vector is immutable; a later update makes a new one.
    [[nodiscard]] std::shared_ptr<const std::vector<AlertTransition>> history() const;
    // The transitions the last update made, oldest first (for the log).
    [[nodiscard]] const std::vector<AlertTransition>& last_transitions() const { return last_; }

    // Persistence. Times are milliseconds since the Unix epoch. from_json throws
    // std::runtime_error on a document it does not understand (wrong version or shape).
    [[nodiscard]] nlohmann::json to_json() const;
    static AlertTracker from_json(const nlohmann::json& j, size_t limit);

private:
    using Key = std::pair<std::string, std::string>;  // rule, object

    void record(std::vector<AlertTransition>& out, const Alert& a, AlertState from, AlertState to, TimePoint at);
    void append_history(std::vector<AlertTransition> fresh);

    size_t limit_;
    std::map<Key, Alert> alerts_;
    // When each alert's finding was first observed missing. Absence is counted from there,
    // not from last_seen: between two collections nothing is known, and a condition that
    // lasted until the fix must get its full clear_after after the fix.
    std::map<Key, TimePoint> absent_since_;
    std::shared_ptr<const std::vector<AlertTransition>> history_;
    std::vector<AlertTransition> last_;
};

}  // namespace rocewatch
