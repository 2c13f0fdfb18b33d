#include "probes/json_fields.hpp"

namespace rocewatch {

const nlohmann::json& json_field(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end()) throw std::invalid_argument(std::string(key) + ": missing");
    return *it;
}

std::string string_field(const nlohmann::json& j, const char* key, size_t max_len) {
    const auto& v = json_field(j, key);
    if (!v.is_string()) throw std::invalid_argument(std::string(key) + ": not a string");
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > max_len) throw std::invalid_argument(std::string(key) + ": too long");
    return s;
}

}  // namespace rocewatch
