#include "daemon/model/shared_map.hpp"

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace rocewatch {

namespace {

struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

constexpr std::size_t kChunk = CounterNames::kChunk;

}  // namespace

// Node-based: a held string never moves, so the views handed out stay valid (its characters
// too where they sit in the string itself, short-string optimised). Each name's id indexes
// the views by id (CounterNames::by_id_), in chunks that never move either, so that name(id)
// takes no lock.
struct CounterNamesTable {
    std::mutex mu;
    std::unordered_map<std::string, CounterNames::Id, NameHash, std::equal_to<>> names;

    // The held entry for name, added where it is not there yet. With mu held.
    const std::pair<const std::string, CounterNames::Id>& held(std::string_view name) {
        if (auto it = names.find(name); it != names.end()) return *it;
        const std::size_t id = names.size();
        if (id >= kChunk * CounterNames::kChunks) throw std::length_error("CounterNames: more than 65,536 names");
        auto& e = *names.emplace(name, static_cast<CounterNames::Id>(id)).first;
        std::string_view* chunk = CounterNames::by_id_[id / kChunk].load(std::memory_order_relaxed);
        if (chunk == nullptr) {
            chunk = new std::string_view[kChunk];  // never freed, as the table
            CounterNames::by_id_[id / kChunk].store(chunk, std::memory_order_release);
        }
        chunk[id % kChunk] = e.first;
        return e;
    }
};

namespace {

CounterNamesTable& table() {
    static CounterNamesTable* t = new CounterNamesTable;  // never destroyed: views may be read during exit
    return *t;
}

}  // namespace

std::string_view CounterNames::intern(std::string_view name) {
    CounterNamesTable& t = table();
    const std::lock_guard lock(t.mu);
    return t.held(name).first;
}

CounterNames::Id CounterNames::id(std::string_view name) {
    CounterNamesTable& t = table();
    const std::lock_guard lock(t.mu);
    return t.held(name).second;
}

bool CounterNames::has_room(std::string_view name) {
    CounterNamesTable& t = table();
    const std::lock_guard lock(t.mu);
    return t.names.size() < kMax || t.names.contains(name);
}

std::size_t CounterNames::size() {
    CounterNamesTable& t = table();
    const std::lock_guard lock(t.mu);
    return t.names.size();
}

}  // namespace rocewatch
