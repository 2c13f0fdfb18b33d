// Alert state on disk: atomic save, round trip, a corrupt file moved aside.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "rules/alerts.hpp"
#include "rules/state_store.hpp"

using namespace rocewatch;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed afterwards.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "rocewatch-rules-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

std::string read(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(StateStore, NothingSavedYetIsNotAnError) {
    TempDir d;
    std::string err = "stale";
    EXPECT_FALSE(StateStore(d.path()).load(&err));
    EXPECT_EQ(err, "");
}

TEST(StateStore, SaveThenLoad) {
    TempDir d;
    const StateStore store(d.path() / "sub" / "dir");  // created on save
    const nlohmann::json state = {{"version", 1}, {"alerts", {1, 2, 3}}};
    std::string err;
    ASSERT_TRUE(store.save(state, &err)) << err;
    EXPECT_TRUE(fs::exists(store.file()));
    EXPECT_FALSE(fs::exists(d.path() / "sub" / "dir" / "alerts.json.tmp")) << "renamed, not left behind";
    auto back = store.load(&err);
    ASSERT_TRUE(back) << err;
    EXPECT_EQ(*back, state);

    // A second save replaces the first whole.
    ASSERT_TRUE(store.save({{"version", 2}}, &err)) << err;
    EXPECT_EQ(*store.load(&err), (nlohmann::json{{"version", 2}}));
}

TEST(StateStore, StaleTempFileFromACrashIsHarmless) {
    TempDir d;
    const StateStore store(d.path());
    std::string err;
    ASSERT_TRUE(store.save({{"v", 1}}, &err));
    std::ofstream(d.path() / "alerts.json.tmp") << "{\"half\": ";  // crash mid-write
    EXPECT_EQ(*store.load(&err), (nlohmann::json{{"v", 1}})) << "the old state is intact";
    ASSERT_TRUE(store.save({{"v", 2}}, &err)) << err;
    EXPECT_EQ(*store.load(&err), (nlohmann::json{{"v", 2}}));
}

TEST(StateStore, CorruptFileIsAnErrorAndMovedAside) {
    TempDir d;
    std::ofstream(d.path() / "alerts.json") << "{\"alerts\": [";
    const StateStore store(d.path());
    std::string err;
    EXPECT_FALSE(store.load(&err));
    EXPECT_NE(err.find("not valid JSON"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(d.path() / "alerts.json"));
    EXPECT_EQ(read(d.path() / "alerts.json.corrupt"), "{\"alerts\": [");
    // The next start finds no state, and saving works again.
    EXPECT_FALSE(store.load(&err));
    EXPECT_EQ(err, "");
    EXPECT_TRUE(store.save({{"v", 1}}, &err)) << err;
}

TEST(StateStore, UnwritableDirectoryIsAnError) {
    TempDir d;
    std::ofstream(d.path() / "file") << "x";
    std::string err;
    EXPECT_FALSE(StateStore(d.path() / "file").save({{"v", 1}}, &err));
    EXPECT_FALSE(err.empty());
    EXPECT_FALSE(StateStore(d.path() / "file").save({{"v", 1}}, nullptr)) << "error pointer is optional";
}

TEST(StateStore, AlertTrackerSurvivesARestart) {
    TempDir d;
    AlertTracker t;
    const auto now = TimePoint{} + std::chrono::hours(24 * 365 * 50);
    t.update({{.rule = "gid_on_bond", .object = "rocep1s0f0/1", .severity = Severity::critical,
               .summary = "GIDs on bond0", .action = "ip link set enp1s0f0np0 nomaster"}},
             Config{}, now);
    std::string err;
    ASSERT_TRUE(StateStore(d.path()).save(t.to_json(), &err)) << err;

    auto j = StateStore(d.path()).load(&err);
    ASSERT_TRUE(j) << err;
    const auto back = AlertTracker::from_json(*j, 1000);
    ASSERT_EQ(back.active().size(), 1u);
    EXPECT_EQ(back.active()[0].object, "rocep1s0f0/1");
    EXPECT_EQ(back.active()[0].state, AlertState::firing);
    EXPECT_EQ(back.history()->size(), 1u);
}
