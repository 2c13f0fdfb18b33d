// A std::map<std::string, V> that copies share until one of them is changed (copy on write).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace rocewatch {

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
    using map_type = std::map<std::string, V>;
    using value_type = typename map_type::value_type;
    using const_iterator = typename map_type::const_iterator;
    using iterator = const_iterator;

    SharedMap() = default;
    SharedMap(std::initializer_list<value_type> values) : map_(std::make_shared<map_type>(values)), own_(true) {}
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
    SharedMap& operator=(std::initializer_list<value_type> values) { return *this = SharedMap(values); }
    ~SharedMap() = default;

    [[nodiscard]] const map_type& map() const { return map_ ? *map_ : empty_map(); }
    [[nodiscard]] const_iterator begin() const { return map().begin(); }
    [[nodiscard]] const_iterator end() const { return map().end(); }
    [[nodiscard]] const_iterator find(const std::string& k) const { return map().find(k); }
    [[nodiscard]] bool contains(const std::string& k) const { return map().contains(k); }
    [[nodiscard]] std::size_t count(const std::string& k) const { return map().count(k); }
    [[nodiscard]] const V& at(const std::string& k) const { return map().at(k); }
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
    V& operator[](const std::string& k) { return edit()[k]; }
    template <class... Args>
    auto emplace(Args&&... args) {
        return edit().emplace(std::forward<Args>(args)...);
    }
    void clear() {
        map_.reset();
        own_ = false;
    }

    friend bool operator==(const SharedMap& a, const SharedMap& b) { return a.map() == b.map(); }
    friend bool operator==(const SharedMap& a, const map_type& b) { return a.map() == b; }

private:
    static const map_type& empty_map() {
        static const map_type empty;
        return empty;
    }
    std::shared_ptr<map_type> map_;
    bool own_ = false;  // map_ was made by this SharedMap (never by a copy of another)
};

}  // namespace rocewatch
