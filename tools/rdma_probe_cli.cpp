// Command-line front end to the RDMA verbs probes, for the VM test bed and bench/.
//
//   rdma_probe_cli server --port N [--listen ADDR] [--sessions N] [--retry-cnt R]
//   rdma_probe_cli client --server ADDR --port N --mode bw|lat|multirail
//                  --dev DEV[:GID_INDEX] [--dev DEV[:GID_INDEX] ...] [--remote-dev DEV[:GID] ...]
//                  [--iters N] [--seconds S] [--size B] [--qps N] [--tx-depth N] [--cq-mod N]
//                  [--timeout S] [--retry-cnt R] [--sysfs-root DIR]
//
// The two sides exchange RdmaEndpointInfo as JSON lines over a plain TCP socket (the
// daemon carries the same JSON over its HTTP control path; both use probes/rdma_session),
// then run the probe; each side prints one JSON result line on stdout. Exit 0 on success,
// 1 when the probe failed, 2 on bad usage. The client fills bytes_per_rail from each
// rail's counters around the run: port_xmit_data x 4 where the port has it, else the
// GID's netdev tx_bytes (Soft-RoCE).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_io.hpp"
#include "probes/errors.hpp"
#include "probes/result.hpp"
#include "probes/rdma.hpp"
#include "probes/rdma_session.hpp"

using namespace rocewatch;
using nlohmann::json;
using rocewatch::cli::connect_tcp;
using rocewatch::cli::print_result;
using rocewatch::cli::recv_line;
using rocewatch::cli::send_line;
using rocewatch::cli::set_timeout;

namespace {

int usage() {
    std::fprintf(stderr, "usage: rdma_probe_cli server --port N [--listen ADDR] [--sessions N] [--retry-cnt R]\n"
                         "       rdma_probe_cli client --server ADDR --port N --mode bw|lat|multirail\n"
                         "              --dev DEV[:GID] [--dev DEV[:GID]...] [--remote-dev DEV[:GID]...]\n"
                         "              [--iters N] [--seconds S] [--size B] [--qps N] [--tx-depth N] [--cq-mod N]\n"
                         "              [--timeout S] [--retry-cnt R] [--sysfs-root DIR]\n");
    return 2;
}

struct DevSpec {
    std::string device;
    int gid_index = -1;
};

DevSpec parse_dev(const std::string& s) {
    DevSpec d;
    const auto c = s.find(':');
    d.device = s.substr(0, c);
    if (c != std::string::npos) d.gid_index = std::stoi(s.substr(c + 1));
    return d;
}

// ---- server

int serve_session(int fd, int retry_cnt) {
    auto line = recv_line(fd);
    if (!line) return 1;
    const auto req = json::parse(*line, nullptr, false);
    RdmaServeLimits limits;
    limits.retry_cnt = retry_cnt;
    limits.max_bw_seconds = 600;
    limits.max_session_seconds = 3600;
    // The client names our device (and GID index); no address lookup here.
    auto resolve = [](const std::string& device, int gid_index, const std::string&,
                      std::string& why) -> std::optional<RdmaEndpointOptions> {
        if (device.empty()) {
            why = "rdma_probe_cli needs --remote-dev";
            return std::nullopt;
        }
        RdmaEndpointOptions o;
        o.device = device;
        o.gid_index = gid_index;
        return o;
    };
    auto accepted = rdma_session_accept(req, limits, resolve);
    if (!send_line(fd, accepted.reply.dump())) return 1;
    if (!accepted.ok()) {
        const auto kind = probe_kind_from_string(req.is_object() ? req.value("kind", "") : "");
        return print_result(failed_result(kind.value_or(ProbeKind::rdma_write_bw), accepted.reply.value("reason", ""),
                                          accepted.reply.value("detail", "")));
    }
    return print_result(accepted.serve());
}

int run_server(const std::string& listen_addr, uint16_t port, int sessions, int retry_cnt) {
    const int lfd = cli::listen_tcp(listen_addr, port);
    if (lfd < 0) {
        std::fprintf(stderr, "%s\n", errno_detail("listen on " + listen_addr, -lfd).c_str());
        return 1;
    }
    std::fprintf(stderr, "rdma_probe_cli: listening on %s:%u\n", listen_addr.c_str(), port);
    // One thread per session: a session whose peer vanished waits out its deadline, and
    // must not hold up the next probe.
    std::atomic<int> rc{0};
    std::vector<std::thread> threads;
    for (int n = 0; sessions <= 0 || n < sessions; ++n) {
        const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        set_timeout(fd, 10);
        threads.emplace_back([fd, retry_cnt, &rc] {
            try {
                rc |= serve_session(fd, retry_cnt);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "rdma_probe_cli: session: %s\n", e.what());
                rc = 1;
            }
            ::close(fd);
        });
    }
    for (auto& t : threads) t.join();
    ::close(lfd);
    return rc.load();
}

// ---- client

struct ClientArgs {
    std::string server, mode = "bw", sysfs = "/sys";
    uint16_t port = 0;
    std::vector<DevSpec> devs, remote_devs;
    uint64_t iters = 1000;
    double seconds = 0, timeout = 30;
    uint32_t size = 0, qps = 1, tx_depth = 128, cq_mod = 100;
    int retry_cnt = 7;
};

int run_client(const ClientArgs& a) {
    RdmaClientPlan plan;
    plan.kind = a.mode == "lat"         ? ProbeKind::rdma_write_lat
                : a.mode == "multirail" ? ProbeKind::rdma_multirail_bw
                                        : ProbeKind::rdma_write_bw;
    const bool lat = plan.kind == ProbeKind::rdma_write_lat;
    plan.qps_per_rail = std::max<uint32_t>(1, a.qps);
    plan.sysfs_root = a.sysfs;
    plan.bw.message_size = a.size ? a.size : 65536;
    plan.bw.iterations = a.seconds > 0 ? 0 : a.iters;
    plan.bw.seconds = a.seconds;
    plan.bw.tx_depth = a.tx_depth;
    plan.bw.cq_mod = a.cq_mod;
    plan.lat = RdmaLatSettings{a.size ? a.size : 2, a.iters};
    for (size_t i = 0; i < a.devs.size(); ++i) {
        RdmaRailPlan rp;
        rp.name = a.devs[i].device;
        rp.local.device = a.devs[i].device;
        rp.local.gid_index = a.devs[i].gid_index;
        rp.local.retry_cnt = a.retry_cnt;
        const auto& rd = i < a.remote_devs.size() ? a.remote_devs[i] : a.devs[i];
        rp.remote_device = rd.device;
        rp.remote_gid_index = rd.gid_index;
        rp.remote_address = a.server;
        plan.rails.push_back(std::move(rp));
    }
    // A per-rail run over several --dev is a multi-rail run (one rail per device).
    if (!lat && plan.rails.size() > 1) plan.kind = ProbeKind::rdma_multirail_bw;
    auto exchange = [&](const json& request, Deadline deadline) {
        SessionReply rep;
        const int fd = connect_tcp(a.server, a.port, std::max(1.0, deadline.remaining_seconds()));
        if (fd < 0) {
            rep.reason = reason_from_errno(-fd);
            rep.detail = errno_detail("connect to " + a.server, -fd);
            return rep;
        }
        std::optional<std::string> line;
        if (send_line(fd, request.dump())) line = recv_line(fd);
        ::close(fd);
        if (!line) {
            rep.reason = reason::peer_closed;
            rep.detail = "no answer from the peer's rdma_probe_cli";
            return rep;
        }
        auto body = json::parse(*line, nullptr, false);
        if (body.is_discarded()) {
            rep.reason = reason::protocol_error;
            rep.detail = "answer is not JSON";
            return rep;
        }
        rep.body = std::move(body);
        return rep;
    };
    return print_result(rdma_probe_run(plan, exchange, Deadline::after_seconds(a.timeout)));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    const std::string cmd = argv[1];
    try {
        ClientArgs c;
        std::string listen = "0.0.0.0";
        int sessions = 0;
        for (int i = 2; i < argc; ++i) {
            const std::string k = argv[i];
            if (i + 1 >= argc) return usage();
            const std::string v = argv[++i];
            if (k == "--server")
                c.server = v;
            else if (k == "--listen")
                listen = v;
            else if (k == "--port")
                c.port = static_cast<uint16_t>(std::stoul(v));
            else if (k == "--sessions")
                sessions = std::stoi(v);
            else if (k == "--mode")
                c.mode = v;
            else if (k == "--dev")
                c.devs.push_back(parse_dev(v));
            else if (k == "--remote-dev")
                c.remote_devs.push_back(parse_dev(v));
            else if (k == "--iters")
                c.iters = std::stoull(v);
            else if (k == "--seconds")
                c.seconds = std::stod(v);
            else if (k == "--size")
                c.size = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--qps")
                c.qps = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--tx-depth")
                c.tx_depth = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--cq-mod")
                c.cq_mod = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--timeout")
                c.timeout = std::stod(v);
            else if (k == "--retry-cnt")
                c.retry_cnt = std::stoi(v);
            else if (k == "--sysfs-root")
                c.sysfs = v;
            else
                return usage();
        }
        if (cmd == "server") {
            if (!c.port) return usage();
            return run_server(listen, c.port, sessions, c.retry_cnt);
        }
        if (cmd == "client") {
            if (c.server.empty() || !c.port || c.devs.empty()) return usage();
            if (c.mode != "bw" && c.mode != "lat" && c.mode != "multirail") return usage();
            return run_client(c);
        }
        return usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdma_probe_cli: %s\n", e.what());
        return 2;
    }
}
