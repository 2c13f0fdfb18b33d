// The cluster inventory and the peers with their matched rails, as JSON and metric families: pure functions.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>
#include <prometheus/metric_family.h>

#include "daemon/model/snapshot.hpp"

namespace rocewatch::api {

// The "cluster" object of /api/v1/status: the inventory file, its entries, which one is this
// node and why, and how the last load went; null when no inventory is configured.
nlohmann::json cluster_status_json(const Snapshot& s);

// GET /api/v1/peers: every peer (configured or from the inventory), its hello state, and its
// rails: configured ones as written, inventory ones matched from its hello with the reason.
nlohmann::json peers_json(const Snapshot& s);

// rocewatch_inventory_* families; none when no inventory is configured.
void add_cluster_families(std::vector<prometheus::MetricFamily>& out, const Snapshot& s);

}  // namespace rocewatch::api
