// The alert state machine: findings over time become pending, firing and resolved alerts.
#include "daemon/rules/alerts.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>

#include "daemon/rules/rules.hpp"
#include "util/json_int.hpp"

namespace rocewatch {
namespace {

constexpr int kStateVersion = 1;

int64_t to_ms(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint from_ms(int64_t ms) { return TimePoint{std::chrono::milliseconds{ms}}; }

// An integer field of the state file within [-limit, limit]: a float (1e300) or a number
// past that has no int64_t, or no TimePoint in nanoseconds, and converting it would be
// undefined, so the file is refused as any other it does not understand.
int64_t integer_at(const nlohmann::json& j, const char* key, int64_t limit) {
    if (const auto i = json_int<int64_t>(j.at(key), -limit, limit)) return *i;
    throw std::runtime_error(std::string("'") + key + "' is not an integer within range");
}

// Milliseconds since the epoch: within about 285 years of it, which nanoseconds can hold.
TimePoint time_at(const nlohmann::json& j, const char* key) { return from_ms(integer_at(j, key, 9'000'000'000'000)); }

std::optional<AlertState> state_from_string(const std::string& s) {
    for (auto st : {AlertState::inactive, AlertState::pending, AlertState::firing, AlertState::resolved})
        if (s == to_string(st)) return st;
    return std::nullopt;
}

Severity severity_at(const nlohmann::json& j, const char* key) {
    auto sev = severity_from_string(j.at(key).get<std::string>());
    if (!sev) throw std::runtime_error(std::string("unknown severity in '") + key + "'");
    return *sev;
}

AlertState state_at(const nlohmann::json& j, const char* key) {
    auto st = state_from_string(j.at(key).get<std::string>());
    if (!st) throw std::runtime_error(std::string("unknown alert state in '") + key + "'");
    return *st;
}

// A state file written before alerts had a scope has none: the rule's own scope then.
Scope scope_at(const nlohmann::json& j) {
    if (!j.contains("scope")) return rule_scope(j.at("rule").get<std::string>());
    auto sc = scope_from_string(j.at("scope").get<std::string>());
    if (!sc) throw std::runtime_error("unknown alert scope in 'scope'");
    return *sc;
}

}  // namespace

AlertTracker::AlertTracker(size_t history_limit)
    : limit_(history_limit), history_(std::make_shared<const std::vector<AlertTransition>>()) {}

void AlertTracker::record(std::vector<AlertTransition>& out, const Alert& a, AlertState from, AlertState to,
                          TimePoint at) {
    out.push_back({.at = at,
                   .rule = a.rule,
                   .object = a.object,
                   .severity = a.severity,
                   .from = from,
                   .to = to,
                   .summary = a.summary,
                   .scope = a.scope});
}

void AlertTracker::update(const std::vector<Finding>& findings, const Config& c, TimePoint now) {
    limit_ = c.daemon.history_limit;
    std::vector<AlertTransition> fresh;
    std::set<Key> seen;

    for (const auto& f : findings) {
        Key key{f.rule, f.object};
        if (!seen.insert(key).second) continue;
        const RuleSettings rs = rule_settings(c, f.rule);
        auto it = alerts_.find(key);
        if (it == alerts_.end()) {
            Alert a{.rule = f.rule,
                    .object = f.object,
                    .severity = f.severity,
                    .state = AlertState::pending,
                    .scope = f.scope,
                    .summary = f.summary,
                    .action = f.action,
                    .details = f.details,
                    .since = now,
                    .first_seen = now,
                    .last_seen = now};
            if (rs.for_duration <= Duration::zero()) a.state = AlertState::firing;
            record(fresh, a, AlertState::inactive, a.state, now);
            alerts_.emplace(std::move(key), std::move(a));
            continue;
        }
        absent_since_.erase(key);
        Alert& a = it->second;
        const Severity before = a.severity;
        a.severity = f.severity;
        a.scope = f.scope;
        a.summary = f.summary;
        a.action = f.action;
        a.details = f.details;
        a.last_seen = now;
        if (a.state == AlertState::pending && now - a.first_seen >= rs.for_duration) {
            a.state = AlertState::firing;
            a.since = now;
            record(fresh, a, AlertState::pending, AlertState::firing, now);
        } else if (a.state == AlertState::firing && a.severity != before) {
            // An escalation (a bond losing its last slave) is news to whoever watches history.
            record(fresh, a, AlertState::firing, AlertState::firing, now);
        }
    }

    for (auto it = alerts_.begin(); it != alerts_.end();) {
        if (seen.count(it->first)) {
            ++it;
            continue;
        }
        const RuleSettings rs = rule_settings(c, it->first.first);
        const Alert& a = it->second;
        const TimePoint absent = absent_since_.try_emplace(it->first, now).first->second;
        if (rs.enabled && now - absent < rs.clear_after) {
            ++it;
            continue;
        }
        record(fresh, a, a.state, a.state == AlertState::firing ? AlertState::resolved : AlertState::inactive, now);
        absent_since_.erase(it->first);
        it = alerts_.erase(it);
    }
    last_ = fresh;
    append_history(std::move(fresh));
}

void AlertTracker::append_history(std::vector<AlertTransition> fresh) {
    if (fresh.empty() && history_->size() <= limit_) return;
    auto next = std::make_shared<std::vector<AlertTransition>>();
    const size_t total = history_->size() + fresh.size();
    const size_t drop = total > limit_ ? total - limit_ : 0;
    next->reserve(total - drop);
    size_t i = 0;
    for (const auto& t : *history_)
        if (i++ >= drop) next->push_back(t);
    for (auto& t : fresh)
        if (i++ >= drop) next->push_back(std::move(t));
    history_ = std::move(next);
}

std::vector<Alert> AlertTracker::active() const {
    std::vector<Alert> out;
    out.reserve(alerts_.size());
    for (const auto& [key, a] : alerts_) out.push_back(a);
    // alerts_ is ordered by (rule, object) already; a stable sort keeps that under severity.
    std::stable_sort(out.begin(), out.end(), [](const Alert& x, const Alert& y) { return x.severity > y.severity; });
    return out;
}

std::shared_ptr<const std::vector<AlertTransition>> AlertTracker::history() const { return history_; }

nlohmann::json AlertTracker::to_json() const {
    nlohmann::json alerts = nlohmann::json::array();
    for (const auto& [key, a] : alerts_)
        alerts.push_back({{"rule", a.rule},
                          {"object", a.object},
                          {"severity", to_string(a.severity)},
                          {"state", to_string(a.state)},
                          {"scope", to_string(a.scope)},
                          {"summary", a.summary},
                          {"action", a.action},
                          {"details", a.details},
                          {"since_ms", to_ms(a.since)},
                          {"first_seen_ms", to_ms(a.first_seen)},
                          {"last_seen_ms", to_ms(a.last_seen)}});
    nlohmann::json history = nlohmann::json::array();
    for (const auto& t : *history_)
        history.push_back({{"at_ms", to_ms(t.at)},
                           {"rule", t.rule},
                           {"object", t.object},
                           {"severity", to_string(t.severity)},
                           {"from", to_string(t.from)},
                           {"to", to_string(t.to)},
                           {"scope", to_string(t.scope)},
                           {"summary", t.summary}});
    return {{"version", kStateVersion}, {"alerts", std::move(alerts)}, {"history", std::move(history)}};
}

AlertTracker AlertTracker::from_json(const nlohmann::json& j, size_t limit) {
    AlertTracker out(limit);
    try {
        if (!j.is_object()) throw std::runtime_error("not a JSON object");
        const auto version = integer_at(j, "version", std::numeric_limits<int>::max());
        if (version != kStateVersion)
            throw std::runtime_error("state version " + std::to_string(version) + ", expected " +
                                     std::to_string(kStateVersion));
        if (!j.at("alerts").is_array() || !j.at("history").is_array())
            throw std::runtime_error("'alerts' and 'history' must be arrays");
        for (const auto& ja : j.at("alerts")) {
            Alert a{.rule = ja.at("rule").get<std::string>(),
                    .object = ja.at("object").get<std::string>(),
                    .severity = severity_at(ja, "severity"),
                    .state = state_at(ja, "state"),
                    .scope = scope_at(ja),
                    .summary = ja.value("summary", ""),
                    .action = ja.value("action", ""),
                    .details = ja.value("details", std::map<std::string, std::string>{}),
                    .since = time_at(ja, "since_ms"),
                    .first_seen = time_at(ja, "first_seen_ms"),
                    .last_seen = time_at(ja, "last_seen_ms")};
            if (a.state != AlertState::pending && a.state != AlertState::firing)
                throw std::runtime_error("alert " + a.rule + "/" + a.object + " is " + to_string(a.state) +
                                         ", only pending and firing alerts are kept");
            Key key{a.rule, a.object};
            out.alerts_.insert_or_assign(std::move(key), std::move(a));
        }
        std::vector<AlertTransition> history;
        for (const auto& jt : j.at("history"))
            history.push_back({.at = time_at(jt, "at_ms"),
                               .rule = jt.at("rule").get<std::string>(),
                               .object = jt.at("object").get<std::string>(),
                               .severity = severity_at(jt, "severity"),
                               .from = state_at(jt, "from"),
                               .to = state_at(jt, "to"),
                               .summary = jt.value("summary", ""),
                               .scope = scope_at(jt)});
        out.append_history(std::move(history));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("alert state: ") + e.what());
    }
    return out;
}

}  // namespace rocewatch
