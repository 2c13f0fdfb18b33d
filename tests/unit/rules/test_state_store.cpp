// Alert state on disk: atomic save, round trip, a bad file set aside under a dated name.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "daemon/rules/alerts.hpp"
#include "daemon/rules/state_store.hpp"

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
    StateStore store(d.path() / "sub" / "dir");  // created on save
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
    StateStore store(d.path());
    std::string err;
    ASSERT_TRUE(store.save({{"v", 1}}, &err));
    std::ofstream(d.path() / "alerts.json.tmp") << "{\"half\": ";  // crash mid-write
    EXPECT_EQ(*store.load(&err), (nlohmann::json{{"v", 1}})) << "the old state is intact";
    ASSERT_TRUE(store.save({{"v", 2}}, &err)) << err;
    EXPECT_EQ(*store.load(&err), (nlohmann::json{{"v", 2}}));
}

namespace {

// The files a bad state was set aside as.
std::vector<fs::path> set_aside_files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().starts_with("alerts.json.corrupt-")) out.push_back(e.path());
    return out;
}

// Loads a state file holding text; expects it refused with `why`, set aside intact, and saving to work again.
void expect_set_aside(const std::string& text, const std::string& why, const StateStore::Accept& accept = {}) {
    TempDir d;
    std::ofstream(d.path() / "alerts.json") << text;
    StateStore store(d.path());
    std::string err;
    EXPECT_FALSE(store.load(&err, accept));
    EXPECT_NE(err.find(why), std::string::npos) << err;
    EXPECT_NE(err.find("set aside as " + store.set_aside_as().string()), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(d.path() / "alerts.json"));
    const auto aside = set_aside_files(d.path());
    ASSERT_EQ(aside.size(), 1u);
    EXPECT_EQ(aside[0], store.set_aside_as());
    EXPECT_EQ(read(aside[0]), text) << "the evidence is kept byte for byte";
    // The next start finds no state, and saving works again.
    EXPECT_FALSE(store.load(&err, accept));
    EXPECT_EQ(err, "");
    EXPECT_TRUE(store.save({{"v", 1}}, &err)) << err;
}

}  // namespace

TEST(StateStore, TruncatedFileIsSetAside) { expect_set_aside("{\"alerts\": [", "not valid JSON"); }

TEST(StateStore, GarbageIsSetAside) {
    expect_set_aside(std::string("\x7f"
                                 "ELF\0\xff\xfe junk",
                                 12),
                     "not valid JSON");
}

TEST(StateStore, EmptyFileIsSetAside) { expect_set_aside("", "is empty"); }

// Valid JSON of the wrong shape used to be ignored in place, and the next save overwrote it:
// a silent reset of the alert history.
TEST(StateStore, WrongTypeJsonIsSetAside) {
    const auto accept = [](const nlohmann::json& j) { (void)AlertTracker::from_json(j, 1000); };
    expect_set_aside("[1, 2, 3]", "not a usable state", accept);
    expect_set_aside(R"({"version": 1, "alerts": "none", "history": []})", "must be arrays", accept);
    expect_set_aside(R"({"version": "1", "alerts": [], "history": []})", "alert state", accept);
    expect_set_aside(R"({"version": 1, "alerts": [], "history": [{"at_ms": "x"}]})", "alert state", accept);
}

TEST(StateStore, EachBadFileKeepsItsOwnName) {
    TempDir d;
    StateStore store(d.path());
    std::string err;
    for (const char* text : {"{", "[", "nul"}) {
        std::ofstream(d.path() / "alerts.json") << text;
        EXPECT_FALSE(store.load(&err));
    }
    EXPECT_EQ(set_aside_files(d.path()).size(), 3u) << "a second corrupt file must not overwrite the first";
}

namespace {

// Runs steps in a child that gave up root (root ignores permissions) in a directory it owns;
// returns the child's exit status, 0 when every step held.
int as_nobody(const fs::path& dir, const std::function<int()>& steps) {
    const uid_t nobody = 65534;
    if (::chown(dir.c_str(), nobody, nobody) != 0) return 100;
    const pid_t pid = ::fork();
    if (pid < 0) return 101;
    if (pid == 0) {
        if (::geteuid() == 0 && (::setgid(nobody) != 0 || ::setuid(nobody) != 0)) ::_exit(102);
        ::_exit(steps());
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 103;
    return WEXITSTATUS(status);
}

}  // namespace

TEST(StateStore, ABadFileThatCannotBeSetAsideIsNeverOverwritten) {
    TempDir d;
    std::ofstream(d.path() / "alerts.json") << "{\"alerts\": [";
    const int rc = as_nobody(d.path(), [&] {
        fs::permissions(d.path(), fs::perms::owner_read | fs::perms::owner_exec);
        StateStore store(d.path());
        std::string err;
        if (store.load(&err) || err.find("cannot set") == std::string::npos) return 11;
        if (store.save({{"v", 1}}, &err)) return 12;  // would replace the evidence
        fs::permissions(d.path(), fs::perms::owner_all);
        if (!store.save({{"v", 1}}, &err)) return 13;  // once writable: set aside, then saved
        return 0;
    });
    EXPECT_EQ(rc, 0) << "11 load, 12 save overwrote, 13 save after fix, 100+ setup";
    ASSERT_EQ(set_aside_files(d.path()).size(), 1u);
    EXPECT_EQ(read(set_aside_files(d.path())[0]), "{\"alerts\": [");
    EXPECT_EQ(read(d.path() / "alerts.json"), "{\n \"v\": 1\n}\n");
}

TEST(StateStore, AnUnreadableFileIsSetAsideNotOverwritten) {
    TempDir d;
    std::ofstream(d.path() / "alerts.json") << "{\"version\": 1}";
    ASSERT_EQ(::chmod((d.path() / "alerts.json").c_str(), 0), 0);
    const int rc = as_nobody(d.path(), [&] {
        StateStore store(d.path());
        std::string err;
        if (store.load(&err) || err.find("cannot be read: Permission denied") == std::string::npos) return 11;
        return store.save({{"v", 1}}, &err) ? 0 : 12;
    });
    EXPECT_EQ(rc, 0) << "11 load, 12 save, 100+ setup";
    ASSERT_EQ(set_aside_files(d.path()).size(), 1u);
    EXPECT_EQ(read(set_aside_files(d.path())[0]), "{\"version\": 1}");
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
    t.update({{.rule = "gid_on_bond",
               .object = "rocep1s0f0/1",
               .severity = Severity::critical,
               .summary = "GIDs on bond0",
               .action = "ip link set enp1s0f0np0 nomaster"}},
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

// A state file far larger than any this daemon writes (a disk error, a file copied over it)
// would take several times its size in memory to parse: it is set aside unread.
TEST(StateStore, AFileOverTheSizeBoundIsSetAsideUnread) {
    TempDir d;
    const std::string text = R"({"version": 1, "alerts": [], "history": []})";
    std::ofstream(d.path() / "alerts.json") << text << std::string(200, ' ');
    StateStore store(d.path(), 100);
    std::string err;
    bool accepted = false;
    EXPECT_FALSE(store.load(&err, [&](const nlohmann::json&) { accepted = true; }));
    EXPECT_FALSE(accepted) << "not parsed";
    EXPECT_NE(err.find("is " + std::to_string(text.size() + 200) + " bytes, more than the 100 bytes"),
              std::string::npos)
        << err;
    ASSERT_EQ(set_aside_files(d.path()).size(), 1u) << "the evidence is kept";
    // At the bound itself it is read.
    std::ofstream(d.path() / "alerts.json") << text;
    EXPECT_TRUE(StateStore(d.path(), text.size()).load(&err)) << err;
}

// Only the daemon writes the state file, as a regular file: a FIFO in its place does not hold
// the start up (it blocked in open(), SIGTERM masked), nor a link to /dev/zero take memory
// without end (1.4 GB and rising). Each is set aside, and the daemon starts with no state.
TEST(StateStore, AFifoOrADeviceInItsPlaceIsSetAsideNotWaitedOnOrReadWhole) {
    TempDir d;
    ASSERT_EQ(::mkfifo((d.path() / "alerts.json").c_str(), 0600), 0);
    std::string err;
    const auto started = std::chrono::steady_clock::now();
    EXPECT_FALSE(StateStore(d.path()).load(&err));
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
    EXPECT_NE(err.find("FIFO"), std::string::npos) << err;
    ASSERT_EQ(set_aside_files(d.path()).size(), 1u) << err;
    EXPECT_FALSE(fs::exists(d.path() / "alerts.json"));

    fs::create_symlink("/dev/zero", d.path() / "alerts.json");
    EXPECT_FALSE(StateStore(d.path(), 4096).load(&err));
    EXPECT_NE(err.find("holds more than the 4096 bytes"), std::string::npos) << err;
    EXPECT_EQ(set_aside_files(d.path()).size(), 2u) << err;
}

// The bound never refuses what the daemon itself wrote: a full history of transitions with
// long names and summaries stays well under it.
TEST(StateStore, TheSizeBoundHoldsAFullHistoryOfLongTransitions) {
    constexpr size_t kLimit = 200;
    AlertTracker t(kLimit);
    Config c;
    c.daemon.history_limit = kLimit;
    const TimePoint t0 = TimePoint{} + std::chrono::hours(24 * 365 * 50);
    const std::string object(256, 'o'), summary(2000, 's');
    for (size_t i = 0; i < kLimit; ++i) {
        const Finding f{.rule = "collector_errors", .object = object + std::to_string(i), .summary = summary};
        t.update({f}, c, t0 + std::chrono::minutes(3 * i));
        t.update({}, c, t0 + std::chrono::minutes(3 * i + 1));  // missing from here...
        t.update({}, c, t0 + std::chrono::minutes(3 * i + 2));  // ...resolved past clear_after
    }
    ASSERT_EQ(t.history()->size(), kLimit);
    const auto bytes = t.to_json().dump(1).size();
    EXPECT_LT(bytes, (StateStore::max_bytes_for(kLimit) - StateStore::kDefaultMaxBytes) / 2) << bytes;
}
