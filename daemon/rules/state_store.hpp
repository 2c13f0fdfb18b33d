// Keeps the alert state on disk across restarts, written atomically.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace rocewatch {

// One JSON document in <dir>/alerts.json. save() writes alerts.json.tmp, fsyncs it,
// renames it over alerts.json and fsyncs the directory, so a crash or power cut leaves
// either the old or the new state, never half of one.
class StateStore {
public:
    explicit StateStore(std::filesystem::path dir);

    // Creates the directory when missing. On failure returns false and, when error is
    // given, says what failed.
    [[nodiscard]] bool save(const nlohmann::json& state, std::string* error) const;

    // nullopt with an empty error: no state saved yet (first start). nullopt with an
    // error: the file could not be read, or did not parse; an unparsable file is moved
    // aside to alerts.json.corrupt so the next save starts clean and the evidence stays.
    std::optional<nlohmann::json> load(std::string* error) const;

    [[nodiscard]] const std::filesystem::path& file() const { return file_; }

private:
    std::filesystem::path dir_;
    std::filesystem::path file_;
};

}  // namespace rocewatch
