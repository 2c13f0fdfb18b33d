// Fields of the endpoint data a peer sends (RDMA and UCX): present, of the right type and
// within bounds, or an invalid_argument that names the key.
#pragma once

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "util/json_int.hpp"

namespace rocewatch {

// `key` of `j`; throws "key: missing" when it is absent.
const nlohmann::json& json_field(const nlohmann::json& j, const char* key);

// A string of at most `max_len` bytes.
std::string string_field(const nlohmann::json& j, const char* key, size_t max_len);

// A JSON integer within [lo, hi]: floats, strings, booleans and values out of range are refused.
template <class Int>
Int int_field(const nlohmann::json& j, const char* key, Int lo = std::numeric_limits<Int>::min(),
              Int hi = std::numeric_limits<Int>::max()) {
    const auto& v = json_field(j, key);
    if (!v.is_number_integer()) throw std::invalid_argument(std::string(key) + ": not an integer");
    const auto i = json_int<Int>(v, lo, hi);
    if (!i) throw std::invalid_argument(std::string(key) + ": out of range");
    return *i;
}

}  // namespace rocewatch
