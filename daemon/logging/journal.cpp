// Logging that journald understands: priorities, structured fields, a once-per-key limiter.
#include "daemon/logging/journal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "daemon/logging/sd_protocol.hpp"
#include "util/log_safe.hpp"

namespace rocewatch::logging {
namespace {

thread_local std::vector<std::pair<std::string, std::string>> t_fields;
thread_local int t_priority = -1;

// MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and the thread's Fields in journald's native protocol;
// a line the socket refuses (no journald there, or an entry larger than a datagram) is
// written to stderr as "<N>message", which journald's stream reader takes the priority from.
class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
    JournalSink(std::string identifier, std::string socket_path)
        : identifier_(std::move(identifier)), socket_path_(std::move(socket_path)) {}

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        const int prio = t_priority >= 0 ? t_priority : priority_of(msg.level);
        const std::string_view text(msg.payload.data(), msg.payload.size());
        const std::string prio_text = std::to_string(prio);
        if (!socket_path_.empty()) {
            std::vector<JournalField> fields{{"MESSAGE", text},
                                             {"PRIORITY", prio_text},
                                             {"SYSLOG_IDENTIFIER", identifier_}};
            for (const auto& [k, v] : t_fields) fields.emplace_back(k, v);
            if (journal_send(socket_path_, fields)) return;
        }
        // One line per record: a newline inside the message would start a line without a prefix.
        std::string line = "<" + prio_text + ">";
        for (char c : text) line += c == '\n' ? ' ' : c;
        line += '\n';
        std::fwrite(line.data(), 1, line.size(), stderr);
    }
    void flush_() override { std::fflush(stderr); }

private:
    std::string identifier_;
    std::string socket_path_;
};

}  // namespace

int priority_of(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::trace:
        case spdlog::level::debug: return kDebug;
        case spdlog::level::info: return kInfo;
        case spdlog::level::warn: return kWarning;
        case spdlog::level::err: return kErr;
        case spdlog::level::critical: return kCrit;
        default: return kInfo;
    }
}

TransitionLog transition_log(const AlertTransition& t) {
    if (t.to == AlertState::resolved) return {spdlog::level::info, kNotice};
    if (t.to == AlertState::firing) {
        switch (t.severity) {
            case Severity::critical: return {spdlog::level::err, kErr};
            case Severity::warning: return {spdlog::level::warn, kWarning};
            case Severity::info: return {spdlog::level::info, kInfo};
        }
    }
    return {spdlog::level::info, kInfo};
}

std::string transition_message(const AlertTransition& t) {
    std::string what = to_string(t.to);
    if (t.to == AlertState::inactive) what = "dropped (cleared while pending)";
    if (t.from == AlertState::firing && t.to == AlertState::firing) what = "firing, now";
    // The object and summary quote netdev names, sysfs values and what a peer's hello said:
    // a newline in them would forge a log line, an ESC a terminal command.
    return "alert " + t.rule + " " + text_safe(t.object, 256) + " " + what + " (" + to_string(t.severity) + ", " +
           to_string(t.scope) + "): " + text_safe(t.summary);
}

std::string object_device(const std::string& object) { return object.substr(0, object.find_first_of("/:")); }

Fields::Fields(std::vector<std::pair<std::string, std::string>> fields, int priority)
    : outer_size_(t_fields.size()), outer_priority_(t_priority) {
    for (auto& f : fields) t_fields.push_back(std::move(f));
    if (priority >= 0) t_priority = priority;
}

Fields::~Fields() {
    t_fields.resize(outer_size_);
    t_priority = outer_priority_;
}

bool stderr_is_journal() {
    const char* e = std::getenv("JOURNAL_STREAM");
    if (!e) return false;
    unsigned long long dev = 0, ino = 0;
    if (std::sscanf(e, "%llu:%llu", &dev, &ino) != 2) return false;
    struct stat st {};
    if (fstat(STDERR_FILENO, &st) != 0) return false;
    return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

spdlog::sink_ptr make_journal_sink(const std::string& identifier, std::string socket_path) {
    return std::make_shared<JournalSink>(identifier, std::move(socket_path));
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& name) {
    if (!stderr_is_journal()) return spdlog::stderr_color_mt(name);
    return std::make_shared<spdlog::logger>(name, make_journal_sink(name));
}

bool OnceLimiter::admit(const std::string& key) {
    if (seen_.contains(key) || seen_.size() >= max_keys_) return false;
    if (round_ >= per_round_) {
        ++held_back_;
        return false;
    }
    seen_.insert(key);
    ++round_;
    return true;
}

}  // namespace rocewatch::logging
