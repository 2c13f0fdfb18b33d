// The JSON answers every route shares: a body with its status, 401, and 503 before the first snapshot.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "api/json_view.hpp"
#include "api/server.hpp"

namespace rocewatch::api {

inline void send_json(httplib::Response& res, int status, const nlohmann::json& j) {
    res.status = status;
    res.set_content(dump_json(j), "application/json");
}

inline void send_unauthorized(httplib::Response& res) {
    res.set_header("WWW-Authenticate", "Bearer, Basic realm=\"rocewatch\"");
    send_json(res, 401,
              error_json(401, "missing or wrong credentials: the peer token as a bearer token, or as the "
                              "password of basic auth"));
}

// The latest snapshot, or nullptr after answering 503 with Retry-After: clients (and peers
// asking for our hello) come back once the first collection has finished.
inline std::shared_ptr<const Snapshot> snapshot_or_503(const SnapshotSource& src, httplib::Response& res) {
    auto s = src.latest();
    if (!s) {
        res.set_header("Retry-After", "1");
        send_json(res, 503, error_json(503, "no snapshot yet: the first collection has not finished"));
    }
    return s;
}

// How often `name` is given in the request's query, counted in the raw target (keys decoded
// by httplib's own decoder, as it decodes them for req.params): httplib keeps one of two
// identical `k=v` pairs, so its own count cannot tell `limit=1&limit=1` from `limit=1`.
inline size_t raw_param_count(const httplib::Request& req, std::string_view name) {
    const auto q = req.target.find('?');
    if (q == std::string::npos) return 0;
    const std::string_view query = std::string_view(req.target).substr(q + 1);
    size_t n = 0;
    for (size_t at = 0; at <= query.size();) {
        size_t end = query.find('&', at);
        if (end == std::string_view::npos) end = query.size();
        const std::string_view pair = query.substr(at, end - at);
        if (httplib::detail::decode_url(std::string(pair.substr(0, pair.find('='))), true) == name) ++n;
        at = end + 1;
    }
    return n;
}

// The first of `names` given more than once in the query, or "".
inline std::string repeated_param(const httplib::Request& req, std::initializer_list<std::string_view> names) {
    for (auto name : names)
        if (std::max(req.get_param_value_count(std::string(name)), raw_param_count(req, name)) > 1)
            return std::string(name);
    return "";
}

// True when every query parameter is one the route knows, given once; otherwise answers 400
// naming the first unknown or repeated one and returns false. A filter that is not applied
// must not look applied, nor the second of two values (httplib hands routes the first).
inline bool only_params(const httplib::Request& req, httplib::Response& res,
                        std::initializer_list<std::string_view> known) {
    for (const auto& [name, value] : req.params) {
        (void)value;
        if (std::find(known.begin(), known.end(), name) != known.end()) {
            if (std::max(req.get_param_value_count(name), raw_param_count(req, name)) <= 1) continue;
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
