// The cluster inventory: a Prometheus file_sd JSON file, parsed (pure, bounded) and searched for this node.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/cluster.hpp"

namespace rocewatch {

// Bounds that keep a hostile or mistaken file from costing more than a real cluster would:
// 2,000 nodes take about 60 KiB and 2,000 targets.
inline constexpr size_t kMaxInventoryBytes = 4 * 1024 * 1024;
inline constexpr size_t kMaxInventoryTargets = 10000;
inline constexpr size_t kMaxInventoryLabels = 64;        // per group
inline constexpr size_t kMaxInventoryLabelBytes = 1024;  // a label's name or value
inline constexpr size_t kMaxInventoryTargetBytes = 255;  // one target
inline constexpr int kMaxInventoryDepth = 8;             // file_sd nests 3 deep
inline constexpr uint16_t kDefaultInventoryPort = 9879;  // a target without a port

struct InventoryParse {
    std::optional<Inventory> inventory;
    std::string error;  // why it was refused, when inventory is unset
};

// Parses file_sd JSON: [{"targets": ["host:port", ...], "labels": {"name": "value"}}, ...].
// Never throws; a file that breaks any bound or shape is refused whole, with the reason.
// A target listed twice keeps its first group's labels and adds a warning.
InventoryParse parse_inventory(std::string_view text);

// Reads and parses the file: refused when it is not a regular file or is over the size bound.
InventoryParse read_inventory(const std::filesystem::path& path);

// "host:port", "[v6]:port" or "host" (port kDefaultInventoryPort); false with `why` otherwise.
bool split_target(std::string_view target, std::string& host, uint16_t& port, std::string& why);

// Which entry this node is: an entry whose host is one of `local_addresses` or names this
// host (`hostname`, compared with and without its domain), and whose port is `listen_port`.
// An address beats a name; two entries that fit equally well are no match (the reason names
// them), as is none at all.
SelfMatch find_self(const Inventory& inv, const std::string& hostname, const std::vector<std::string>& local_addresses,
                    uint16_t listen_port);

// The k entries after `self` in the ring of entries (sorted order, wrapping), never self and
// never one twice; fewer when the inventory is smaller.
std::vector<size_t> ring_successors(size_t n_entries, size_t self, size_t k);

// The m entries `self` probes in rotation round `round` (Pingmesh's idea, bounded): distances
// beyond the k ring successors, the same distances on every node in a round, moving on by m
// each round. So a node is probed by exactly m rotating probers at a time, and every ordered
// pair of entries has been probed after ceil((n - 1 - k) / m) rounds. Never self, never a ring
// successor, never one twice; fewer when the inventory has fewer entries beyond the ring.
std::vector<size_t> rotating_peers(size_t n_entries, size_t self, size_t k, size_t m, uint64_t round);

}  // namespace rocewatch
