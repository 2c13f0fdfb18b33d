// What the daemon tells Alertmanager: labels, annotations and times of each alert, and which
// alerts are due to be sent. Pure: time is passed in, nothing is sent from here.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"

namespace rocewatch::alertmanager {

// One alert as Alertmanager's POST /api/v2/alerts takes it.
struct OutgoingAlert {
    std::map<std::string, std::string> labels;
    std::map<std::string, std::string> annotations;
    TimePoint starts_at{};
    TimePoint ends_at{};
    std::string generator_url;
    // A catch-up: only for these targets (their urls), which missed alerts while they failed;
    // null: for every target. Not sent.
    std::shared_ptr<const std::set<std::string>> only_to;
};

// The one place an alert's identity in Alertmanager is made: alertname ("rocewatch_<rule>", so
// that a shared Alertmanager never mixes them with other sources' alerts of the same name),
// rule, object, severity, node. Alertmanager tells alerts apart by these labels, so they must
// stay the same while the alert lives; summary, action and details are annotations.
std::map<std::string, std::string> alert_labels(const Alert& a, const std::string& node);

// summary, action and details ("key=value" pairs, sorted by key, comma-separated).
std::map<std::string, std::string> alert_annotations(const Alert& a);

// "http://<host>:<port>" where generatorURL points: external_url when set, else the listen
// address, with the node's name in place of a wildcard host (0.0.0.0, ::, empty).
std::string generator_base(const AlertmanagerConfig& c, const std::string& listen, const std::string& node);

// <base>/api/v1/alerts?rule=<rule>&object=<object>, percent-encoded.
std::string generator_url(const std::string& base, const Alert& a);

// RFC 3339 in UTC with milliseconds, as Alertmanager's API reads it.
std::string rfc3339(TimePoint t);

// The request body: a JSON array of alerts.
nlohmann::json payload_json(const std::vector<OutgoingAlert>& alerts);

struct BookSettings {
    std::string node;
    std::string generator_base;
    Duration resend_interval{std::chrono::minutes(1)};
    // How long a resolved alert is sent again (every resend_interval), so an Alertmanager that
    // was away when it resolved still learns of it; Prometheus keeps them 15 minutes too.
    Duration resolved_retention{std::chrono::minutes(15)};
};

// What has been sent, and so what is due. A firing alert is due when first seen, when its
// severity, summary, action or details change, and every resend_interval; firing alerts end
// at now + 4 x resend_interval, so Alertmanager resolves them by itself if the daemon goes
// away. An alert that stops firing (resolved, removed, or gone from the snapshot) is due at
// once with endsAt = the time it was noticed, then every resend_interval for
// resolved_retention. Pending alerts are never sent.
class AlertBook {
public:
    [[nodiscard]] std::vector<OutgoingAlert> step(const std::vector<Alert>& alerts, const BookSettings& s,
                                                  TimePoint now);
    // Everything in the book as it would go now, the book unchanged: a catch-up for targets
    // that missed alerts, which must not put off the others' resends.
    [[nodiscard]] std::vector<OutgoingAlert> all(const BookSettings& s, TimePoint now) const;
    [[nodiscard]] size_t size() const { return entries_.size(); }

private:
    struct Entry {
        Alert alert;
        std::optional<TimePoint> resolved_at;
        std::optional<TimePoint> last_sent;
        bool changed = true;
    };
    static OutgoingAlert outgoing(const Entry& e, const BookSettings& s, TimePoint now);
    std::map<std::pair<std::string, std::string>, Entry> entries_;
};

}  // namespace rocewatch::alertmanager
