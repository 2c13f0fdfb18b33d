// An optional value held on the heap, for what only a few of many objects have.
#pragma once

#include <memory>
#include <optional>
#include <utility>

namespace rocewatch {

// std::optional's interface, as far as the code here uses it, with the value in a heap block
// of its own: an empty Boxed is one pointer, where an empty std::optional<T> is as large as a
// T. Copies are deep. A Link held the transceiver, ethtool's link view and the LLDP
// neighbour inline, 1.2 KB of its 2 KB, in every link of every copy (the netlink watcher's
// view, each snapshot's), though only RoCE netdevs ever have them (issue 14, heaptrack at
// 128 NICs).
template <class T>
class Boxed {
public:
    Boxed() = default;
    Boxed(std::nullopt_t) {}  // implicit, as std::optional's
    Boxed(T v) : p_(std::make_unique<T>(std::move(v))) {}
    Boxed(std::optional<T> v) {
        if (v) p_ = std::make_unique<T>(std::move(*v));
    }
    Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
    Boxed(Boxed&&) noexcept = default;
    Boxed& operator=(const Boxed& o) {
        if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
        return *this;
    }
    Boxed& operator=(Boxed&&) noexcept = default;
    ~Boxed() = default;

    [[nodiscard]] bool has_value() const { return p_ != nullptr; }
    explicit operator bool() const { return has_value(); }
    [[nodiscard]] T& operator*() { return *p_; }
    [[nodiscard]] const T& operator*() const { return *p_; }
    [[nodiscard]] T* operator->() { return p_.get(); }
    [[nodiscard]] const T* operator->() const { return p_.get(); }
    void reset() { p_.reset(); }
    template <class... Args>
    T& emplace(Args&&... args) {
        p_ = std::make_unique<T>(std::forward<Args>(args)...);
        return *p_;
    }

private:
    std::unique_ptr<T> p_;
};

}  // namespace rocewatch
