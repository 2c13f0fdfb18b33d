// The pure rules: a snapshot and a config in, plain-words findings out.
#pragma once

#include <string>
#include <vector>

#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch {

// What the rules engine knows about one rule, for the API and the generated alert reference.
struct RuleInfo {
    std::string id;
    Severity default_severity = Severity::warning;
    // node: this node is at fault and its health says so; peer / path: a peer or the path to
    // it is, reported but not counted in this node's health (see overall_health).
    Scope scope = Scope::node;
    std::string description;
};

// The scope of a rule id; Scope::node for an id that is not a rule.
Scope rule_scope(const std::string& id);

// Every rule, in evaluation order: the one list of rules, which the config's [rules.<id>]
// validation and the docs' alert reference are derived from.
const std::vector<RuleInfo>& rule_catalog();

// The ids of rule_catalog(), in the same order.
const std::vector<std::string>& all_rule_ids();

// Judges one snapshot. Pure: no I/O, no clock, no state; the trend fields (rates,
// window_increase, transitions_in_window, link_failure_increase) must already be filled
// by TrendTracker. Disabled rules produce nothing; a configured severity replaces the
// rule's own for all its findings.
//
// Judged RDMA devices: config.expect.rails when non-empty (a rail that is missing is
// itself a port_down finding), else every device; minus expect.ignore_devices.
// Objects are stable keys for the alert state machine:
//   "rocep1s0f0/1"                  an RDMA port
//   "rocep1s0f0/1:symbol_error"     one error counter of a port (error_counters)
//   "rocep1s0f1"                    an expected rail that is missing (port_down)
//   "enp1s0f0np0", "bond0"          a netdev or a bond
//   "nvidia_peermem"                the host's GPUDirect RDMA module
std::vector<Finding> evaluate_rules(const Snapshot& s, const Config& c);

}  // namespace rocewatch
