// Keeps the alert state on disk across restarts, written atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace rocewatch {

// One JSON document in <dir>/alerts.json. save() writes alerts.json.tmp, fsyncs it,
// renames it over alerts.json and fsyncs the directory, so a crash or power cut leaves
// either the old or the new state, never half of one.
class StateStore {
public:
    // Throws from accept when a document parses but is not a state the caller can use.
    using Accept = std::function<void(const nlohmann::json&)>;

    // A file larger than max_bytes is set aside unread: parsed, a JSON document takes several
    // times its size in memory, and no history this daemon keeps writes one that large.
    explicit StateStore(std::filesystem::path dir, std::uintmax_t max_bytes = kDefaultMaxBytes);

    static constexpr std::uintmax_t kDefaultMaxBytes = 64u << 20;

    // What a daemon keeping history_limit transitions reads at most: its active alerts (64 MiB
    // hold tens of thousands) and 8 KiB a transition, several times what one takes.
    static constexpr std::uintmax_t max_bytes_for(std::size_t history_limit) {
        return kDefaultMaxBytes + std::uintmax_t{history_limit} * 8192;
    }

    // Creates the directory when missing. On failure returns false and, when error is
    // given, says what failed; a half-written alerts.json.tmp is removed so a full disk
    // does not stay full because of us. Refuses while a bad file could not be set aside,
    // so that evidence is never overwritten.
    [[nodiscard]] bool save(const nlohmann::json& state, std::string* error);

    // nullopt with an empty error: no state saved yet (first start). nullopt with an
    // error: the file could not be read, or it is truncated, garbage, or rejected by
    // accept; such a file is renamed to alerts.json.corrupt-<UTC time> (set_aside())
    // so the next save starts clean and the evidence stays, and the error names it.
    std::optional<nlohmann::json> load(std::string* error, const Accept& accept = {});

    [[nodiscard]] const std::filesystem::path& file() const { return file_; }
    // Where the last bad file went; empty when none was set aside.
    [[nodiscard]] const std::filesystem::path& set_aside_as() const { return aside_; }

private:
    // Renames the state file out of the way under a name no earlier one took.
    bool set_aside(std::string* error);

    std::filesystem::path dir_;
    std::filesystem::path file_;
    std::filesystem::path aside_;
    std::uintmax_t max_bytes_;
    bool aside_pending_ = false;  // a bad file is still in place: save() must not replace it
};

}  // namespace rocewatch
