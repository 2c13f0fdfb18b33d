// A map from names to values kept in one sorted vector (FlatMap), and one that copies share
// until one of them is changed (SharedMap, copy on write). The names are held once for the
// process (CounterNames).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocewatch {

// The names counters are kept under, each held once for the whole process. Every port of a
// model names the same counters (53 on mlx5), and its counters, rates, window increases and
// trend series each held a std::string copy of every name: 40 bytes an entry and a heap
// block for names past 15 characters, 1.4 MiB of the daemon's anonymous memory at 128 NICs
// (issue 14). An interned name is a string_view into this table, or its 4-byte id (what the
// maps hold, as CounterName), and is never freed: the names come from sysfs listings, a
// driver's fixed vocabulary, and the one reader of them stops taking new names at kMax (see
// has_room).
class CounterNames {
public:
    // Far above any driver's vocabulary (mlx5 ~80 names, bnxt_re ~100, all drivers < 1,000).
    static constexpr std::size_t kMax = 4096;
    // The table's copy of name, added where it is not there yet. Thread-safe.
    static std::string_view intern(std::string_view name);
    // A held name as a number, 4 bytes where a view takes 16: what the sysfs file cache keys
    // its kept files and listings by (one entry per counter file of every port). Ids are
    // handed out in the order names are first interned. id() interns like intern(); name() is
    // lock-free, for any id id() returned (to this thread or, through a lock, to another).
    using Id = std::uint32_t;
    static Id id(std::string_view name);
    static std::string_view name(Id id) { return by_id_[id / kChunk].load(std::memory_order_acquire)[id % kChunk]; }
    // Whether name is held or there is room for it: a reader of names from outside asks
    // this first and drops (and counts) a name it says no to.
    static bool has_room(std::string_view name);
    static std::size_t size();

    static constexpr std::size_t kChunk = 256;
    static constexpr std::size_t kChunks = 256;  // 65,536 names, 16 times kMax

private:
    friend struct CounterNamesTable;  // the table of held names (shared_map.cpp) fills by_id_
    // The views by id, in chunks of kChunk that never move: name() reads them with no lock
    // (inline, as every walk of a FlatMap reads its names through it).
    static inline std::array<std::atomic<std::string_view*>, kChunks> by_id_{};
};

// A held counter name as its 4-byte id: what a FlatMap keys its entries by. It reads as the
// string_view it names (converts, compares and orders as one), so code that walks a map sees
// names; an entry of a map of 8-byte values is 16 bytes where a view made it 24, in every
// counter, rate, window increase and trend series of every port (issue 14).
class CounterName {
public:
    explicit CounterName(std::string_view name) : id_(CounterNames::id(name)) {}
    [[nodiscard]] std::string_view view() const { return CounterNames::name(id_); }
    operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor): reads as a name
    [[nodiscard]] std::string str() const { return std::string(view()); }

    friend bool operator==(CounterName a, CounterName b) { return a.id_ == b.id_; }
    friend bool operator==(CounterName a, std::string_view b) { return a.view() == b; }
    friend auto operator<=>(CounterName a, CounterName b) { return a.view() <=> b.view(); }
    friend auto operator<=>(CounterName a, std::string_view b) { return a.view() <=> b; }

private:
    CounterNames::Id id_;
};
static_assert(sizeof(std::pair<CounterName, std::uint64_t>) == 16, "a counter's entry: its name's id and value");

// Names to values in one vector sorted by name: what a port's counters are. They are written
// once, in name order (the sysfs listing is sorted), then read whole or looked up: a std::map
// spent a node per counter on that, built, walked and freed every read (issue 14).
// Names are held (CounterNames) as they are added, each entry keyed by its CounterName;
// lookups add nothing. The interface is std::map's, as far as the code here uses it, with
// CounterName for the key type (a brace list gives names as string_views: init_type).
template <class V>
class FlatMap {
public:
    using value_type = std::pair<CounterName, V>;
    using init_type = std::pair<std::string_view, V>;  // what a brace list of names and values gives
    using storage = std::vector<value_type>;
    using iterator = typename storage::iterator;
    using const_iterator = typename storage::const_iterator;

    FlatMap() = default;
    FlatMap(std::initializer_list<init_type> values) {
        for (const auto& [k, v] : values) insert_or_assign(k, v);
    }
    explicit FlatMap(const std::map<std::string, V>& m) {
        items_.reserve(m.size());
        for (const auto& [k, v] : m) items_.emplace_back(CounterName(k), v);
    }

    [[nodiscard]] const_iterator begin() const { return items_.begin(); }
    [[nodiscard]] const_iterator end() const { return items_.end(); }
    [[nodiscard]] iterator begin() { return items_.begin(); }
    [[nodiscard]] iterator end() { return items_.end(); }
    [[nodiscard]] std::size_t size() const { return items_.size(); }
    [[nodiscard]] bool empty() const { return items_.empty(); }
    void reserve(std::size_t n) { items_.reserve(n); }
    void clear() { items_.clear(); }

    [[nodiscard]] const_iterator find(std::string_view k) const {
        const auto it = lower(k);
        return it != items_.end() && it->first == k ? it : items_.end();
    }
    [[nodiscard]] iterator find(std::string_view k) {
        const auto it = lower(k);
        return it != items_.end() && it->first == k ? it : items_.end();
    }
    [[nodiscard]] bool contains(std::string_view k) const { return find(k) != end(); }
    [[nodiscard]] std::size_t count(std::string_view k) const { return contains(k) ? 1 : 0; }
    [[nodiscard]] const V& at(std::string_view k) const {
        const auto it = find(k);
        if (it == end()) throw std::out_of_range("FlatMap::at: no " + std::string(k));
        return it->second;
    }

    // Inserts k with a default value where it is absent.
    V& operator[](std::string_view k) {
        auto it = lower(k);
        if (it == items_.end() || it->first != k) it = items_.emplace(it, CounterName(k), V{});
        return it->second;
    }
    // Appends when k sorts after every name held (the sysfs listing's order): no search.
    void insert_or_assign(std::string_view k, V v) {
        if (items_.empty() || items_.back().first < k)
            items_.emplace_back(CounterName(k), std::move(v));
        else
            (*this)[k] = std::move(v);
    }
    // Appends k, which must sort after every name held (checked: out of order throws).
    void append(std::string_view k, V v) {
        if (!items_.empty() && !(items_.back().first < k))
            throw std::logic_error("FlatMap::append: " + std::string(k) + " does not sort after " +
                                   items_.back().first.str());
        items_.emplace_back(CounterName(k), std::move(v));
    }
    std::pair<iterator, bool> emplace(std::string_view k, V v) {
        auto it = lower(k);
        if (it != items_.end() && it->first == k) return {it, false};
        return {items_.emplace(it, CounterName(k), std::move(v)), true};
    }
    std::size_t erase(std::string_view k) {
        const auto it = find(k);
        if (it == items_.end()) return 0;
        items_.erase(it);
        return 1;
    }

    friend bool operator==(const FlatMap& a, const FlatMap& b) { return a.items_ == b.items_; }

private:
    [[nodiscard]] const_iterator lower(std::string_view k) const {
        return std::lower_bound(items_.begin(), items_.end(), k,
                                [](const value_type& e, std::string_view key) { return e.first < key; });
    }
    [[nodiscard]] iterator lower(std::string_view k) {
        return std::lower_bound(items_.begin(), items_.end(), k,
                                [](const value_type& e, std::string_view key) { return e.first < key; });
    }
    storage items_;
};

// What a port's counters are kept in. A cycle that does not read the counter files (most
// cycles at 128 NICs, see DutyBudget) carries the last ones over into its snapshot: as
// std::maps that was a copy of every counter, rate and window increase, and as many frees
// when the snapshot went, each cycle (a tenth of the daemon's CPU at 128 NICs, issue 14).
// Copies of a SharedMap share one map instead; the first change to one of them gives it a
// map of its own.
//
// Reads are as on a const std::map. Changes (operator[], emplace, edit) are for the one thread
// that builds the snapshot holding the map, before it is published: a map is changed in place
// only when this SharedMap made it and no copy shares it now; otherwise it is copied first.
// A published snapshot is const, so a map reached through it is never changed.
template <class V>
class SharedMap {
public:
    using map_type = FlatMap<V>;
    using value_type = typename map_type::value_type;
    using init_type = typename map_type::init_type;
    using const_iterator = typename map_type::const_iterator;
    using iterator = const_iterator;

    SharedMap() = default;
    SharedMap(std::initializer_list<init_type> values) : map_(std::make_shared<map_type>(values)), own_(true) {}
    explicit SharedMap(map_type m) : map_(std::make_shared<map_type>(std::move(m))), own_(true) {}
    SharedMap(const SharedMap& o) : map_(o.map_) {}
    SharedMap(SharedMap&& o) noexcept : map_(std::move(o.map_)), own_(std::exchange(o.own_, false)) {}
    SharedMap& operator=(const SharedMap& o) {
        if (this != &o) {
            map_ = o.map_;
            own_ = false;
        }
        return *this;
    }
    SharedMap& operator=(SharedMap&& o) noexcept {
        map_ = std::move(o.map_);
        own_ = std::exchange(o.own_, false);
        return *this;
    }
    SharedMap& operator=(map_type m) { return *this = SharedMap(std::move(m)); }
    SharedMap& operator=(const std::map<std::string, V>& m) { return *this = SharedMap(map_type(m)); }
    SharedMap& operator=(std::initializer_list<init_type> values) { return *this = SharedMap(values); }
    ~SharedMap() = default;

    [[nodiscard]] const map_type& map() const { return map_ ? *map_ : empty_map(); }
    [[nodiscard]] const_iterator begin() const { return map().begin(); }
    [[nodiscard]] const_iterator end() const { return map().end(); }
    [[nodiscard]] const_iterator find(std::string_view k) const { return map().find(k); }
    [[nodiscard]] bool contains(std::string_view k) const { return map().contains(k); }
    [[nodiscard]] std::size_t count(std::string_view k) const { return map().count(k); }
    [[nodiscard]] const V& at(std::string_view k) const { return map().at(k); }
    [[nodiscard]] std::size_t size() const { return map_ ? map_->size() : 0; }
    [[nodiscard]] bool empty() const { return !map_ || map_->empty(); }
    // Whether the two share one map (or both have none): what carrying a snapshot over does.
    [[nodiscard]] bool shares_with(const SharedMap& o) const { return map_ == o.map_; }

    // The map to change: this SharedMap's own, copied first when it was shared.
    map_type& edit() {
        if (!own_ || map_.use_count() != 1) {
            map_ = map_ ? std::make_shared<map_type>(*map_) : std::make_shared<map_type>();
            own_ = true;
        }
        return *map_;
    }
    V& operator[](std::string_view k) { return edit()[k]; }
    template <class... Args>
    auto emplace(Args&&... args) {
        return edit().emplace(std::forward<Args>(args)...);
    }
    void clear() {
        map_.reset();
        own_ = false;
    }

    friend bool operator==(const SharedMap& a, const SharedMap& b) { return a.map() == b.map(); }
    friend bool operator==(const SharedMap& a, const std::map<std::string, V>& b) {
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
                   return x.first == y.first && x.second == y.second;
               });
    }

private:
    static const map_type& empty_map() {
        static const map_type empty;
        return empty;
    }
    std::shared_ptr<map_type> map_;
    bool own_ = false;  // map_ was made by this SharedMap (never by a copy of another)
};

}  // namespace rocewatch
