// The JSON answers every route shares: a body with its status, 401, and 503 before the first snapshot.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/http_message.hpp"
#include "api/json_view.hpp"
#include "api/server.hpp"

namespace rocewatch::api {

inline void send_json(Response& res, int status, const nlohmann::json& j) {
    res.status = status;
    res.set_content(dump_json(j), "application/json");
}

inline void send_unauthorized(Response& res) {
    res.set_header("WWW-Authenticate", "Bearer, Basic realm=\"rocewatch\"");
    send_json(res, 401,
              error_json(401, "missing or wrong credentials: the peer token as a bearer token, or as the "
                              "password of basic auth"));
}

// The latest snapshot, or nullptr after answering 503 with Retry-After: clients (and peers
// asking for our hello) come back once the first collection has finished.
inline std::shared_ptr<const Snapshot> snapshot_or_503(const SnapshotSource& src, Response& res) {
    auto s = src.latest();
    if (!s) {
        res.set_header("Retry-After", "1");
        send_json(res, 503, error_json(503, "no snapshot yet: the first collection has not finished"));
    }
    return s;
}

// The first of `names` given more than once in the query, or "".
inline std::string repeated_param(const Request& req, std::initializer_list<std::string_view> names) {
    for (auto name : names)
        if (req.get_param_value_count(name) > 1) return std::string(name);
    return "";
}

// True when every query parameter is one the route knows, given once; otherwise answers 400
// naming the first unknown or repeated one and returns false. A filter that is not applied
// must not look applied, nor the second of two values (handlers read the first).
inline bool only_params(const Request& req, Response& res, std::initializer_list<std::string_view> known) {
    for (const auto& [name, value] : req.params) {
        (void)value;
        if (std::find(known.begin(), known.end(), name) != known.end()) {
            if (req.get_param_value_count(name) <= 1) continue;
            send_json(res, 400, error_json(400, name + " given more than once"));
            return false;
        }
        std::string allowed;
        for (auto k : known) allowed += (allowed.empty() ? "" : ", ") + std::string(k);
        send_json(res, 400,
                  error_json(400, "unknown query parameter \"" + name + "\" (this endpoint takes " +
                                      (allowed.empty() ? std::string("none") : allowed) + ")"));
        return false;
    }
    return true;
}

}  // namespace rocewatch::api
