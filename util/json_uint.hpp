// Whole numbers a peer sends in JSON, checked before they become a C++ unsigned type.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace rocewatch {

// The value as a `Uint` when it is a JSON integer within [0, max of Uint]; nullopt for a float,
// a negative or too large integer, or anything that is not a number. nlohmann's get<unsigned>()
// would cast a double out of range (undefined behaviour) or wrap a large integer silently
// (a data_port of 70000 becoming 4464). Templated on the JSON type so util stays free of it.
template <class Uint, class Json>
std::optional<Uint> json_uint(const Json& v) {
    static_assert(std::numeric_limits<Uint>::is_integer && !std::numeric_limits<Uint>::is_signed);
    if (!v.is_number_integer()) return std::nullopt;
    uint64_t u = 0;
    if (v.is_number_unsigned()) {
        u = v.template get<uint64_t>();
    } else {
        const auto i = v.template get<int64_t>();
        if (i < 0) return std::nullopt;
        u = static_cast<uint64_t>(i);
    }
    if (u > std::numeric_limits<Uint>::max()) return std::nullopt;
    return static_cast<Uint>(u);
}

// `key` of an object as a `Uint`: `fallback` when the key is absent, nullopt when it is present
// but not such an integer.
template <class Uint, class Json>
std::optional<Uint> json_uint_or(const Json& obj, const char* key, Uint fallback) {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    return json_uint<Uint>(*it);
}

}  // namespace rocewatch
