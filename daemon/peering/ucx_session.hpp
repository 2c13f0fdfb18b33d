// UCX probes as the daemon runs them: every UCX endpoint lives in a child process.
//
// The child is its own executable, rocewatch-ucx-session (ucx_session_main.cpp), started
// with UCX's memory hooks off in its environment (UCX_MEM_MMAP_HOOK_MODE=none,
// UCX_MEM_EVENTS=no: libucs reads them before main(), and the unit forbids the code
// patching they would do). rocewatchd itself does not link UCX at all, so UCX's load-time
// constructors and memory hooks never run in the daemon process (a test reads its maps).
// Reasons for the process boundary:
//   - UCX cannot validate a worker address or rkey: a malformed one aborts the process
//     (ucs_fatal_error). A bad peer may kill a session child, never the daemon.
//   - A UCX call that blocks past the deadline is ended by killing the child.
//   - UCX's own threads, fds and registration caches come and go with each session.
//
// The child speaks JSON lines on stdin/stdout:
//   parent -> child  {"role": "active"|"passive", "kind", "message_size", "iterations",
//                     "seconds", "timeout", "remote": info (passive only)}
//   child -> parent  {"endpoint": info}            (or {"reason", "detail"} and exit)
//   parent -> child  {"remote": info}               (active only)
//   child -> parent  {"result": ProbeResult JSON}   (api::probe_result_json)
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/core/probe_scheduler.hpp"
#include "daemon/model/config.hpp"
#include "probes/deadline.hpp"
#include "probes/rdma_session.hpp"
#include "probes/session.hpp"

namespace rocewatch {

// The session child's executable and the flag it is started with.
inline constexpr const char* kUcxSessionExe = "rocewatch-ucx-session";
inline constexpr const char* kUcxSessionFlag = "--ucx-session";

// Where the session child is: beside `self_exe`'s target (the build tree, or a relocated
// install), else in `libexec_dir`; "" when neither holds an executable one.
std::string find_ucx_session_exe(const std::string& self_exe, const std::string& libexec_dir);

// The UCX version the session child links ("1.13.1"), asked of the child itself within
// `deadline` (`rocewatch-ucx-session --version`); "" without one.
std::string ucx_session_version(const std::string& exe, Deadline deadline);

// A running session child: its pipes and pid; killed and reaped on destruction.
class UcxChild {
public:
    // Starts `exe --ucx-session` (or `exe <flag>`); nullptr with `why` when it cannot.
    static std::unique_ptr<UcxChild> spawn(const std::string& exe, std::string& why,
                                           const std::string& flag = kUcxSessionFlag);
    ~UcxChild();
    UcxChild(const UcxChild&) = delete;
    UcxChild& operator=(const UcxChild&) = delete;

    bool send(const nlohmann::json& line);
    // The next line as JSON by the deadline; nullopt with `why` ("timeout", "peer_closed"
    // when the child exited, "protocol_error").
    std::optional<nlohmann::json> receive(Deadline deadline, std::string& why);

private:
    UcxChild() = default;
    int pid_ = -1;
    int in_ = -1;   // child's stdin
    int out_ = -1;  // child's stdout
    std::string buffer_;
};

// The active side of a UCX job: its child's endpoint, the peer's answer through
// `exchange` (POST /api/v1/peer/ucx), the run. Never throws; the child never outlives it.
// `rails` are the peer's rails with their transmit counters (rail_tx_counters): a bandwidth
// run reads them around its run, so bytes_per_rail says which rails UCX really used.
ProbeResult run_ucx_job(const Config& cfg, const ProbeJob& job, const std::string& exe, const SessionExchange& exchange,
                        Deadline deadline, const std::vector<std::pair<std::string, RdmaTxCounter>>& rails = {});

// The passive side of a peer's request, checked against our own [probes.ucx_*] budget.
struct UcxSessionAccept {
    nlohmann::json reply;                // {"endpoint": info} or {"reason", "detail"}
    std::function<ProbeResult()> serve;  // waits for the child's result; empty if refused
    [[nodiscard]] bool ok() const { return static_cast<bool>(serve); }
};
UcxSessionAccept accept_ucx_session(const Config& cfg, const nlohmann::json& request, const std::string& exe,
                                    const std::atomic<bool>* cancel = nullptr);

// The child's main: reads the session from stdin, runs it, exits. Only in the session
// child's executable (ucx_child.cpp, linked into rocewatch-ucx-session alone).
int run_ucx_session_child();

}  // namespace rocewatch
