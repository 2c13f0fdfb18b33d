#include "daemon/model/shared_map.hpp"

#include <functional>
#include <mutex>
#include <unordered_set>

namespace rocewatch {

namespace {

struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Node-based: a held string never moves, so the views handed out stay valid (its characters
// too where they sit in the string itself, short-string optimised).
struct Table {
    std::mutex mu;
    std::unordered_set<std::string, NameHash, std::equal_to<>> names;
};

Table& table() {
    static Table* t = new Table;  // never destroyed: views may be read during exit
    return *t;
}

}  // namespace

std::string_view CounterNames::intern(std::string_view name) {
    Table& t = table();
    const std::lock_guard lock(t.mu);
    auto it = t.names.find(name);
    if (it == t.names.end()) it = t.names.emplace(name).first;
    return *it;
}

bool CounterNames::has_room(std::string_view name) {
    Table& t = table();
    const std::lock_guard lock(t.mu);
    return t.names.size() < kMax || t.names.contains(name);
}

std::size_t CounterNames::size() {
    Table& t = table();
    const std::lock_guard lock(t.mu);
    return t.names.size();
}

}  // namespace rocewatch
