// Logging that journald understands: syslog priorities on every line, structured fields
// (RULE=, OBJECT=, DEVICE=, FILE=) under systemd, and a once-per-key limiter.
#pragma once

#include <spdlog/common.h>
#include <spdlog/logger.h>

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "daemon/model/snapshot.hpp"

namespace rocewatch::logging {

// syslog(3) priorities, as journald stores them in PRIORITY= and reads them from a "<N>"
// line prefix on a stream (SyslogLevelPrefix=yes, the default).
enum Priority : int { kEmerg = 0, kAlert, kCrit, kErr, kWarning, kNotice, kInfo, kDebug };

[[nodiscard]] int priority_of(spdlog::level::level_enum level);

// How an alert transition is logged: level and priority follow what happened.
//   -> firing (new, or pending -> firing), or firing with a new severity:
//        critical: err, warning: warning, info: info
//   firing -> resolved: notice (info in spdlog's terms, PRIORITY=5 in the journal)
//   inactive -> pending, pending -> inactive: info
struct TransitionLog {
    spdlog::level::level_enum level = spdlog::level::info;
    int priority = kInfo;
};
[[nodiscard]] TransitionLog transition_log(const AlertTransition& t);
// "alert port_down rocep1s0f0/1 firing (critical, node): <summary>"
[[nodiscard]] std::string transition_message(const AlertTransition& t);
// The device an alert object names ("rocep1s0f0/1:symbol_error" -> "rocep1s0f0"); for an
// object that is not an RDMA port, the object up to its first '/' or ':'.
[[nodiscard]] std::string object_device(const std::string& object);

// Journal fields for every line this thread logs while the Fields lives (names upper-case,
// as journald wants), and optionally a priority that replaces the level's (spdlog has no
// "notice"). Nested Fields add to the outer ones; the journal sink reads them.
class Fields {
public:
    explicit Fields(std::vector<std::pair<std::string, std::string>> fields, int priority = -1);
    ~Fields();
    Fields(const Fields&) = delete;
    Fields& operator=(const Fields&) = delete;

private:
    std::size_t outer_size_;
    int outer_priority_;
};

// JOURNAL_STREAM is set and names our stderr (device:inode): systemd started us with the
// journal on stderr, as it does for a service.
[[nodiscard]] bool stderr_is_journal();

// The daemon's logger: under systemd the journal sink (native protocol: MESSAGE, PRIORITY,
// SYSLOG_IDENTIFIER and the Fields; a line the journal socket refuses goes to stderr with
// its "<N>" priority prefix), elsewhere stderr in colour as before.
[[nodiscard]] std::shared_ptr<spdlog::logger> make_logger(const std::string& name);
// The journal sink on its own, for tests: `socket_path` is journald's socket; "" sends every
// line the stderr way.
[[nodiscard]] spdlog::sink_ptr make_journal_sink(const std::string& identifier,
                                                 std::string socket_path = "/run/systemd/journal/socket");

// Lets each key through once, at most per_round new keys per round (a tree gone bad at
// once must not flood the journal) and max_keys over the process' life.
class OnceLimiter {
public:
    OnceLimiter(std::size_t per_round, std::size_t max_keys) : per_round_(per_round), max_keys_(max_keys) {}
    void new_round() { round_ = held_back_ = 0; }
    // true: log this key now. A key held back by the round cap is let through in a later round.
    [[nodiscard]] bool admit(const std::string& key);
    [[nodiscard]] std::size_t held_back() const { return held_back_; }  // this round

private:
    std::size_t per_round_, max_keys_;
    std::size_t round_ = 0, held_back_ = 0;
    std::unordered_set<std::string> seen_;
};

}  // namespace rocewatch::logging
