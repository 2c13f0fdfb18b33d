// Alertmanager payloads and the book of what was sent: pure functions of alerts and time.
#include "daemon/alertmanager/payload.hpp"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <set>

#include "daemon/config/config_loader.hpp"
#include "util/host_port.hpp"

namespace rocewatch::alertmanager {

std::map<std::string, std::string> alert_labels(const Alert& a, const std::string& node) {
    std::map<std::string, std::string> labels = {
        {"alertname", "rocewatch_" + a.rule},
        {"rule", a.rule},
        {"object", a.object},
        {"severity", to_string(a.severity)},
        {"scope", to_string(a.scope)},
    };
    if (!node.empty()) labels["node"] = node;
    return labels;
}

std::map<std::string, std::string> alert_annotations(const Alert& a) {
    std::map<std::string, std::string> out = {{"summary", a.summary}, {"action", a.action}};
    std::string details;
    for (const auto& [k, v] : a.details) details += (details.empty() ? "" : ", ") + k + "=" + v;
    if (!details.empty()) out["details"] = std::move(details);
    return out;
}

std::string generator_base(const AlertmanagerConfig& c, const std::string& listen, const std::string& node) {
    if (!c.external_url.empty()) {
        std::string base = c.external_url;
        while (base.ends_with('/')) base.pop_back();
        return base;
    }
    auto a = parse_listen_address(listen);
    std::string host = a ? a->host : "";
    if (host.empty() || host == "0.0.0.0" || host == "::") host = node.empty() ? "localhost" : node;
    return "http://" + host_port(host, a ? a->port : 9879);
}

namespace {

std::string percent_encoded(const std::string& s) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char ch : s) {
        if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            out += static_cast<char>(ch);
        } else {
            out += '%';
            out += kHex[ch >> 4];
            out += kHex[ch & 15];
        }
    }
    return out;
}

}  // namespace

std::string generator_url(const std::string& base, const Alert& a) {
    return base + "/api/v1/alerts?rule=" + percent_encoded(a.rule) + "&object=" + percent_encoded(a.object);
}

std::string rfc3339(TimePoint t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms - static_cast<int64_t>(secs) * 1000));
    return out;
}

nlohmann::json payload_json(const std::vector<OutgoingAlert>& alerts) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : alerts)
        out.push_back({{"labels", a.labels},
                       {"annotations", a.annotations},
                       {"startsAt", rfc3339(a.starts_at)},
                       {"endsAt", rfc3339(a.ends_at)},
                       {"generatorURL", a.generator_url}});
    return out;
}

std::vector<OutgoingAlert> AlertBook::step(const std::vector<Alert>& alerts, const BookSettings& s, TimePoint now) {
    std::set<std::pair<std::string, std::string>> firing;
    for (const auto& a : alerts) {
        if (a.state != AlertState::firing) continue;
        auto key = std::pair{a.rule, a.object};
        firing.insert(key);
        auto it = entries_.find(key);
        if (it == entries_.end() || it->second.resolved_at) {
            entries_[key] = Entry{.alert = a,
                                  .resolved_at = std::nullopt,
                                  .last_sent = std::nullopt,
                                  .changed = true};  // new, or firing again after it resolved
            continue;
        }
        Entry& e = it->second;
        if (e.alert.severity != a.severity || e.alert.summary != a.summary || e.alert.action != a.action ||
            e.alert.details != a.details)
            e.changed = true;
        e.alert = a;
    }
    std::vector<OutgoingAlert> due;
    for (auto it = entries_.begin(); it != entries_.end();) {
        Entry& e = it->second;
        if (!e.resolved_at && !firing.contains(it->first)) {
            e.resolved_at = now;
            e.changed = true;
        }
        if (e.resolved_at && now - *e.resolved_at > s.resolved_retention) {
            it = entries_.erase(it);
            continue;
        }
        if (e.changed || !e.last_sent || now - *e.last_sent >= s.resend_interval) {
            due.push_back(outgoing(e, s, now));
            e.last_sent = now;
            e.changed = false;
        }
        ++it;
    }
    return due;
}

OutgoingAlert AlertBook::outgoing(const Entry& e, const BookSettings& s, TimePoint now) {
    return {.labels = alert_labels(e.alert, s.node),
            .annotations = alert_annotations(e.alert),
            .starts_at = e.alert.first_seen,
            .ends_at = e.resolved_at ? *e.resolved_at : now + 4 * s.resend_interval,
            .generator_url = generator_url(s.generator_base, e.alert),
            .only_to = nullptr};
}

std::vector<OutgoingAlert> AlertBook::all(const BookSettings& s, TimePoint now) const {
    std::vector<OutgoingAlert> out;
    for (const auto& [key, e] : entries_) out.push_back(outgoing(e, s, now));
    return out;
}

}  // namespace rocewatch::alertmanager
