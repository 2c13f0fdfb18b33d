// The cluster inventory as the daemon holds it: the entries, which one is this node, and how the last load went.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/snapshot.hpp"  // TimePoint

namespace rocewatch {

// One target of a Prometheus file_sd group, with the group's labels.
struct InventoryEntry {
    std::string target;  // as written: "node07:9879", "10.0.0.7:9879", "[fd00::7]:9879"
    std::string host;    // "node07", "10.0.0.7", "fd00::7" (no brackets)
    uint16_t port = 0;
    std::map<std::string, std::string> labels;
};

// A parsed inventory: entries sorted by target and unique (the ring's order).
struct Inventory {
    std::vector<InventoryEntry> entries;
    std::vector<std::string> warnings;  // e.g. a target listed twice (the first is kept)
};

// Which entry this node is, and why; `index` is unset when none (or more than one) fits.
struct SelfMatch {
    std::optional<size_t> index;
    std::string reason;  // "address 10.0.1.7 is on this node, port 9879 is ours" / why none
};

// The inventory state the daemon publishes: what is in force and how the last load went.
struct ClusterState {
    std::string path;            // [cluster] inventory; "" when none is configured
    bool last_load_ok = true;    // false when the last load was rejected (the previous is kept)
    std::string last_error;      // why it was rejected, "" when fine
    TimePoint loaded_at{};       // when the inventory in force was read
    TimePoint last_attempt{};    // when a load was last tried
    uint64_t loads = 0;          // loads tried, good or bad
    uint64_t load_failures = 0;  // loads rejected
    Inventory inventory;         // the one in force (empty before the first good load)
    SelfMatch self;
};

}  // namespace rocewatch
