// The cluster inventory: a Prometheus file_sd JSON file, parsed (pure, bounded) and searched for this node.
#include "daemon/cluster/inventory.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace rocewatch {
namespace {

// JSON nesting deeper than file_sd ever needs, found before the parser sees it.
bool too_deep(std::string_view text) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxInventoryDepth) return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

// Prometheus' label name rule: [a-zA-Z_][a-zA-Z0-9_]*.
bool valid_label_name(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::ranges::all_of(s, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string short_name(const std::string& s) { return s.substr(0, s.find('.')); }

bool is_ip_literal(const std::string& s) {
    return s.find(':') != std::string::npos ||
           std::ranges::all_of(s, [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

}  // namespace

bool split_target(std::string_view target, std::string& host, uint16_t& port, std::string& why) {
    if (target.empty() || target.size() > kMaxInventoryTargetBytes) {
        why = target.empty() ? "empty target" : "target longer than " + std::to_string(kMaxInventoryTargetBytes);
        return false;
    }
    for (char c : target)
        if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '@' || static_cast<unsigned char>(c) >= 0x7f) {
            why = "target has a character a host:port cannot";
            return false;
        }
    std::string_view port_text;
    if (target.front() == '[') {
        auto close = target.find(']');
        if (close == std::string_view::npos || close == 1) {
            why = "unclosed or empty [ ]";
            return false;
        }
        host = std::string(target.substr(1, close - 1));
        auto rest = target.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') {
                why = "text after ]";
                return false;
            }
            port_text = rest.substr(1);
            if (port_text.empty()) {
                why = "empty port";
                return false;
            }
        }
    } else {
        auto colon = target.rfind(':');
        if (colon != std::string_view::npos && target.find(':') != colon) {
            why = "an IPv6 address needs [ ] around it";
            return false;
        }
        host = std::string(target.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = target.substr(colon + 1);
            if (port_text.empty()) {
                why = "empty port";
                return false;
            }
        }
        if (host.empty()) {
            why = "empty host";
            return false;
        }
    }
    if (port_text.empty()) {
        port = kDefaultInventoryPort;
        return true;
    }
    if (port_text.size() > 5 || !std::ranges::all_of(port_text, [](char c) { return c >= '0' && c <= '9'; })) {
        why = "port is not a number";
        return false;
    }
    const unsigned long p = std::stoul(std::string(port_text));
    if (p == 0 || p > 65535) {
        why = "port out of range 1..65535";
        return false;
    }
    port = static_cast<uint16_t>(p);
    return true;
}

InventoryParse parse_inventory(std::string_view text) {
    InventoryParse out;
    auto refuse = [&](std::string why) {
        out.error = std::move(why);
        return out;
    };
    if (text.size() > kMaxInventoryBytes)
        return refuse("inventory is " + std::to_string(text.size()) + " bytes, over the limit of " +
                      std::to_string(kMaxInventoryBytes));
    if (too_deep(text)) return refuse("JSON nested deeper than " + std::to_string(kMaxInventoryDepth));
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return refuse("not valid JSON");
    if (!j.is_array()) return refuse("expected a JSON array of groups ({\"targets\": [...], \"labels\": {...}})");

    Inventory inv;
    std::map<std::string, size_t> seen;  // target -> group it was first in
    size_t targets = 0;
    for (size_t g = 0; g < j.size(); ++g) {
        const auto& group = j[g];
        const std::string where = "group " + std::to_string(g + 1);
        if (!group.is_object()) return refuse(where + ": expected an object");
        for (const auto& [k, v] : group.items())
            if (k != "targets" && k != "labels") return refuse(where + ": unknown key \"" + k.substr(0, 64) + "\"");
        auto t = group.find("targets");
        if (t == group.end() || !t->is_array()) return refuse(where + ": \"targets\" must be an array of strings");
        std::map<std::string, std::string> labels;
        if (auto l = group.find("labels"); l != group.end()) {
            if (!l->is_object()) return refuse(where + ": \"labels\" must be an object of strings");
            if (l->size() > kMaxInventoryLabels)
                return refuse(where + ": more than " + std::to_string(kMaxInventoryLabels) + " labels");
            for (const auto& [name, value] : l->items()) {
                if (!value.is_string()) return refuse(where + ": label values must be strings");
                const auto& v = value.get_ref<const std::string&>();
                if (name.size() > kMaxInventoryLabelBytes || v.size() > kMaxInventoryLabelBytes)
                    return refuse(where + ": a label name or value over " + std::to_string(kMaxInventoryLabelBytes) +
                                  " bytes");
                if (!valid_label_name(name))
                    return refuse(where + ": \"" + name.substr(0, 64) + "\" is not a Prometheus label name");
                labels[name] = v;
            }
        }
        for (const auto& target : *t) {
            if (!target.is_string()) return refuse(where + ": targets must be strings");
            if (++targets > kMaxInventoryTargets)
                return refuse("more than " + std::to_string(kMaxInventoryTargets) + " targets");
            InventoryEntry e;
            e.target = target.get<std::string>();
            std::string why;
            if (!split_target(e.target, e.host, e.port, why))
                return refuse(where + ": target \"" + e.target.substr(0, 64) + "\": " + why);
            e.host = lower(e.host);
            auto [it, fresh] = seen.emplace(e.target, g + 1);
            if (!fresh) {
                if (inv.warnings.size() < 10)
                    inv.warnings.push_back("target " + e.target + " is listed in group " + std::to_string(it->second) +
                                           " and again in group " + std::to_string(g + 1) + "; the first is used");
                continue;
            }
            e.labels = labels;
            inv.entries.push_back(std::move(e));
        }
    }
    std::ranges::sort(inv.entries, {}, &InventoryEntry::target);
    out.inventory = std::move(inv);
    return out;
}

InventoryParse read_inventory(const std::filesystem::path& path) {
    InventoryParse out;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        out.error = path.string() + ": cannot be read: " + std::strerror(errno);
        return out;
    }
    if (!S_ISREG(st.st_mode)) {
        out.error = path.string() + ": not a regular file";
        return out;
    }
    if (static_cast<uint64_t>(st.st_size) > kMaxInventoryBytes) {
        out.error = path.string() + ": " + std::to_string(st.st_size) + " bytes, over the limit of " +
                    std::to_string(kMaxInventoryBytes);
        return out;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        out.error = path.string() + ": cannot be opened: " + std::strerror(errno);
        return out;
    }
    // Bounded even if the file grew between stat and read.
    std::string text(kMaxInventoryBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    out = parse_inventory(text);
    if (!out.inventory) out.error = path.string() + ": " + out.error;
    return out;
}

SelfMatch find_self(const Inventory& inv, const std::string& hostname, const std::vector<std::string>& local_addresses,
                    uint16_t listen_port) {
    SelfMatch m;
    const std::set<std::string> addrs(local_addresses.begin(), local_addresses.end());
    const std::string host = lower(hostname);
    std::vector<size_t> by_address, by_name;
    for (size_t i = 0; i < inv.entries.size(); ++i) {
        const auto& e = inv.entries[i];
        if (e.port != listen_port) continue;
        if (addrs.count(e.host))
            by_address.push_back(i);
        else if (!host.empty() && !is_ip_literal(e.host) && (e.host == host || short_name(e.host) == short_name(host)))
            by_name.push_back(i);
    }
    auto pick = [&](const std::vector<size_t>& hits, const std::string& what) {
        if (hits.size() == 1) {
            m.index = hits.front();
            m.reason = what + " " + inv.entries[hits.front()].host + " is this node's and port " +
                       std::to_string(listen_port) + " is ours";
            return true;
        }
        if (hits.size() > 1) {
            std::string names;
            for (size_t i = 0; i < hits.size() && i < 4; ++i) names += (i ? ", " : "") + inv.entries[hits[i]].target;
            m.reason = "ambiguous: " + std::to_string(hits.size()) + " entries fit this node by " + what + " (" +
                       names + ")";
            return true;
        }
        return false;
    };
    if (pick(by_address, "address") || pick(by_name, "name")) return m;
    m.reason = "no entry has this node's name (" + (hostname.empty() ? std::string("unknown") : hostname) +
               ") or one of its " + std::to_string(addrs.size()) + " addresses with port " +
               std::to_string(listen_port);
    return m;
}

std::vector<size_t> ring_successors(size_t n_entries, size_t self, size_t k) {
    std::vector<size_t> out;
    if (n_entries == 0 || self >= n_entries) return out;
    for (size_t step = 1; step < n_entries && out.size() < k; ++step) out.push_back((self + step) % n_entries);
    return out;
}

std::vector<size_t> rotating_peers(size_t n_entries, size_t self, size_t k, size_t m, uint64_t round) {
    std::vector<size_t> out;
    if (n_entries == 0 || self >= n_entries || n_entries <= k + 1) return out;
    const size_t others = n_entries - 1 - k;  // the distances k+1 .. n-1 that the ring leaves
    m = std::min(m, others);
    // Round r takes the next m distances after round r-1's: every node the same ones, so that
    // each node is probed by exactly m others in a round (a distance is a permutation of the
    // ring), and every ordered pair has come round after ceil(others / m) rounds.
    const uint64_t first = (round % others) * m % others;
    for (size_t j = 0; j < m; ++j) {
        const size_t distance = k + 1 + static_cast<size_t>((first + j) % others);
        out.push_back((self + distance) % n_entries);
    }
    return out;
}

}  // namespace rocewatch
