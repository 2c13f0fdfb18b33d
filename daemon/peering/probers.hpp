// Which function runs each probe kind as this daemon runs it: the one kind -> runner table.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <string>

#include "daemon/core/probe_scheduler.hpp"
#include "daemon/model/config.hpp"
#include "daemon/model/snapshot.hpp"
#include "probes/budget.hpp"
#include "probes/tcp.hpp"
#include "probes/tcp_wire.hpp"

namespace rocewatch {

// What every runner needs besides the job: the config and snapshot of the moment, and our
// token (the data port's, and as hex the bearer of our control requests to peers).
struct ProberContext {
    std::function<std::shared_ptr<const Config>()> config;
    std::function<std::shared_ptr<const Snapshot>()> snapshot;
    ProbeToken token{};
    std::string ucx_session_exe;    // the UCX session child's executable (find_ucx_session_exe)
    ProbeBudget* budget = nullptr;  // the node's probe budget, for every run started; nullptr: none
};

// The version of the UCX the session child `exe` links ("1.13.1"), asked of the child; ""
// in a build without UCX or when the child cannot say.
std::string ucx_session_child_version(const std::string& exe);

// Peer probing as configured: on only with a readable token and a data port bound.
struct Probing {
    std::optional<ProbeToken> token;
    std::string why_off;  // when there is no token, in words an operator can act on
    std::unique_ptr<TcpProbeServer> data_port;
};

// The host the data port binds: probes.data_listen when set ("" every address), else the
// host of [daemon] listen.
std::string data_listen_host(const ProbesConfig& p, const std::string& listen_host);

// Why peers' rail probes will be refused when the data port binds one address because listen
// does (a listen host that is not "", 0.0.0.0 or ::, and no probes.data_listen): a peer's TCP
// probes go to this node's rail addresses. Unset when it binds every address, or the address
// probes.data_listen names (a choice made for the data port itself).
std::optional<std::string> data_port_reach_warning(const ProbesConfig& p, const std::string& listen_host);

// Finds the token ([probes] token_file, else systemd's credential) and binds the data port
// on data_listen_host() (every address, both families, for "", 0.0.0.0 or ::; a name, which
// only listen's host may be, is resolved first) with our own config's budget
// as its limits, whatever a peer asks for. Logs whether probing is on; never throws.
// The data port's sessions are admitted against `budget` (may be nullptr).
Probing start_probing(const Config& cfg, const std::string& listen_host, const std::shared_ptr<spdlog::logger>& log,
                      ProbeBudget* budget = nullptr);

// The passive side of one session kind: the reply to the peer, and the serve step for the
// session host's thread (empty when refused: the reply then says why).
using SessionAccept = std::function<std::pair<nlohmann::json, std::function<ProbeResult()>>(
    const Config&, const Snapshot&, const nlohmann::json& request, const std::atomic<bool>* cancel)>;
struct SessionKind {
    std::string path;  // the POST route peers call: "/api/v1/peer/rdma"
    std::string what;  // for logs: "RDMA"
    SessionAccept accept;
};

class Probers {
public:
    explicit Probers(ProberContext ctx);

    // Kinds this build has a runner for (RDMA needs libibverbs, UCX libucp).
    [[nodiscard]] bool available(ProbeKind k) const;

    // Runs one job with its peer's hello in hand, within `deadline`. Never throws: a kind
    // without a runner, or a runner that threw, is a failed result.
    [[nodiscard]] ProbeResult run(const ProbeJob& job, const PeerHello& hello, Deadline deadline) const;

    // What the scheduler needs from the outside world: these runners, the peer's hello over
    // HTTP, and the busy-skip's rail utilisation from the latest snapshot.
    [[nodiscard]] ProbeSchedulerDeps scheduler_deps() const;

    // The session kinds a peer may ask this build for (UCX only with UCX).
    [[nodiscard]] std::vector<SessionKind> session_kinds() const;

    // Our token as the bearer of control requests to peers.
    [[nodiscard]] const std::string& token_hex() const { return token_hex_; }

private:
    ProberContext ctx_;
    std::string token_hex_;
};

}  // namespace rocewatch
