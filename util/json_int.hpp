// Whole numbers a peer or a file sends in JSON, checked before they become a C++ integer.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

namespace rocewatch {

// The value as an `Int` when it is a JSON integer within [lo, hi] (by default all of `Int`);
// nullopt for a float, an integer out of range, or anything that is not a number. nlohmann's
// get<int>() would cast a double out of range (2e120 from a fuzzer: undefined behaviour) or
// wrap a large integer silently (a data_port of 70000 becoming 4464). Templated on the JSON
// type so util stays free of it.
template <class Int, class Json>
std::optional<Int> json_int(const Json& v, Int lo = std::numeric_limits<Int>::min(),
                            Int hi = std::numeric_limits<Int>::max()) {
    static_assert(std::numeric_limits<Int>::is_integer);
    if (!v.is_number_integer()) return std::nullopt;
    if (v.is_number_unsigned()) {
        const auto u = v.template get<uint64_t>();
        if (std::cmp_less(u, lo) || std::cmp_greater(u, hi)) return std::nullopt;
        return static_cast<Int>(u);
    }
    const auto i = v.template get<int64_t>();
    if (std::cmp_less(i, lo) || std::cmp_greater(i, hi)) return std::nullopt;
    return static_cast<Int>(i);
}

// `key` of an object as an `Int` within [lo, hi]: `fallback` when the key is absent, nullopt
// when it is present but not such an integer.
template <class Int, class Json>
std::optional<Int> json_int_or(const Json& obj, const char* key, Int fallback, Int lo = std::numeric_limits<Int>::min(),
                               Int hi = std::numeric_limits<Int>::max()) {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    return json_int<Int>(*it, lo, hi);
}

}  // namespace rocewatch
