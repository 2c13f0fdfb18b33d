// Command-line front end to the RDMA verbs probes, for the VM test bed and bench/.
//
//   rdma_probe_cli server --port N [--listen ADDR] [--sessions N] [--retry-cnt R]
//   rdma_probe_cli client --server ADDR --port N --mode bw|lat|multirail
//                  --dev DEV[:GID_INDEX] [--dev DEV[:GID_INDEX] ...] [--remote-dev DEV[:GID] ...]
//                  [--iters N] [--seconds S] [--size B] [--qps N] [--tx-depth N] [--cq-mod N]
//                  [--timeout S] [--retry-cnt R] [--sysfs-root DIR]
//
// The two sides exchange RdmaEndpointInfo as JSON lines over a plain TCP socket (the
// daemon carries the same JSON over its HTTP control path), then run the probe; each side
// prints one JSON result line on stdout. Exit 0 on success, 1 when the probe failed, 2 on
// bad usage. The client fills bytes_per_rail from each rail's counters around the run:
// port_xmit_data x 4 where the port has it, else the GID's netdev tx_bytes (Soft-RoCE).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
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

#include "probes/errors.hpp"
#include "probes/rdma.hpp"

using namespace rocewatch;
using nlohmann::json;

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: rdma_probe_cli server --port N [--listen ADDR] [--sessions N] [--retry-cnt R]\n"
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

json result_json(const ProbeResult& r) {
    json j{{"kind", to_string(r.kind)},   {"rail", r.rail},     {"success", r.success},
           {"duration_seconds", r.duration_seconds}, {"reason", r.reason}, {"detail", r.detail},
           {"bytes", r.bytes},            {"iterations", r.iterations}, {"streams", r.streams},
           {"bytes_per_stream", r.bytes_per_stream}, {"bytes_per_rail", r.bytes_per_rail},
           {"info", r.info}};
    if (r.bandwidth_bits_per_second) j["bandwidth_bits_per_second"] = *r.bandwidth_bits_per_second;
    if (r.latency) {
        const auto& l = *r.latency;
        j["latency"] = {{"samples", l.samples}, {"used", l.used},   {"min", l.min},     {"max", l.max},
                        {"typical", l.typical}, {"mean", l.mean},   {"stddev", l.stddev},
                        {"p99", l.p99},         {"p99_9", l.p99_9}};
    }
    return j;
}

int print_result(const ProbeResult& r) {
    // one write per line: sessions on several threads print whole lines
    std::printf("%s\n", result_json(r).dump().c_str());
    std::fflush(stdout);
    return r.success ? 0 : 1;
}

ProbeResult failed(ProbeKind kind, const std::string& reason, const std::string& detail) {
    ProbeResult r;
    r.kind = kind;
    r.reason = reason;
    r.detail = detail;
    return r;
}

// ---- line-oriented JSON over TCP

bool send_line(int fd, const std::string& s) {
    std::string l = s + "\n";
    size_t off = 0;
    while (off < l.size()) {
        const ssize_t n = ::send(fd, l.data() + off, l.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return false;
        off += static_cast<size_t>(n);
    }
    return true;
}

std::optional<std::string> recv_line(int fd) {
    std::string s;
    char c;
    while (s.size() < (1u << 20)) {
        const ssize_t n = ::recv(fd, &c, 1, 0);
        if (n <= 0) return std::nullopt;
        if (c == '\n') return s;
        s += c;
    }
    return std::nullopt;
}

void set_timeout(int fd, double seconds) {
    timeval tv{static_cast<time_t>(seconds), static_cast<suseconds_t>((seconds - static_cast<long>(seconds)) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// ---- counters

std::optional<uint64_t> read_u64(const std::string& path) {
    std::ifstream f(path);
    uint64_t v = 0;
    if (f >> v) return v;
    return std::nullopt;
}

std::string read_word(const std::string& path) {
    std::ifstream f(path);
    std::string s;
    f >> s;
    return s;
}

// Bytes the port has sent: port_xmit_data (4-byte units) where the driver has it, else the
// tx_bytes of the netdev the GID entry sits on (Soft-RoCE has no counters/ directory).
struct TxCounter {
    std::string path;
    uint64_t scale = 1;
    std::string source;
};

TxCounter tx_counter(const std::string& sysfs, const RdmaEndpointInfo& e) {
    const std::string port = sysfs + "/class/infiniband/" + e.device + "/ports/" + std::to_string(e.port);
    if (read_u64(port + "/counters/port_xmit_data")) return {port + "/counters/port_xmit_data", 4, "port_xmit_data"};
    const auto ndev = read_word(port + "/gid_attrs/ndevs/" + std::to_string(e.gid_index));
    if (!ndev.empty()) return {sysfs + "/class/net/" + ndev + "/statistics/tx_bytes", 1, ndev + " tx_bytes"};
    return {};
}

// ---- server

int serve_session(int fd, int retry_cnt) {
    auto line = recv_line(fd);
    if (!line) return 1;
    const auto req = json::parse(*line, nullptr, false);
    if (req.is_discarded() || !req.is_object()) {
        send_line(fd, json{{"ok", false}, {"reason", reason::protocol_error}, {"detail", "request is not JSON"}}.dump());
        return 1;
    }
    const std::string mode = req.value("mode", "");
    const double timeout = req.value("timeout", 30.0);
    const auto deadline = Deadline::after_seconds(timeout);
    const uint32_t size = req.value("size", 65536u);
    const uint64_t iters = req.value("iters", uint64_t{1000});
    const ProbeKind kind = mode == "lat" ? ProbeKind::rdma_write_lat
                           : mode == "multirail" ? ProbeKind::rdma_multirail_bw : ProbeKind::rdma_write_bw;
    std::vector<std::unique_ptr<RdmaEndpoint>> owned;
    std::vector<RdmaRail> rails;
    json reply_rails = json::array();
    auto refuse = [&](const std::string& reason, const std::string& detail) {
        send_line(fd, json{{"ok", false}, {"reason", reason}, {"detail", detail}}.dump());
        return print_result(failed(kind, reason, detail));
    };
    if (!req.contains("rails") || !req["rails"].is_array()) return refuse(reason::protocol_error, "no rails");
    for (const auto& rj : req["rails"]) {
        RdmaRail rail;
        rail.name = rj.value("name", "");
        const auto dev = parse_dev(rj.value("device", ""));
        json infos = json::array();
        if (!rj.contains("endpoints") || !rj["endpoints"].is_array()) return refuse(reason::protocol_error, "no endpoints");
        for (const auto& ej : rj["endpoints"]) {
            auto parsed = parse_endpoint_info(ej);
            if (!parsed.info) return refuse(reason::protocol_error, parsed.error);
            RdmaEndpointOptions o;
            o.device = dev.device;
            o.gid_index = dev.gid_index;
            o.retry_cnt = retry_cnt;
            o.buffer_size = std::max<uint32_t>(2 * size, 1u << 20);
            auto opened = RdmaEndpoint::open(o);
            if (!opened.endpoint) return refuse(opened.status.reason, opened.status.detail);
            auto st = opened.endpoint->connect(*parsed.info);
            if (!st.ok()) return refuse(st.reason, st.detail);
            infos.push_back(opened.endpoint->info());
            rail.endpoints.push_back(opened.endpoint.get());
            rail.remotes.push_back(*parsed.info);
            owned.push_back(std::move(opened.endpoint));
        }
        reply_rails.push_back(json{{"name", rail.name}, {"endpoints", infos}});
        rails.push_back(std::move(rail));
    }
    if (rails.empty() || rails[0].endpoints.empty()) return refuse(reason::protocol_error, "no endpoints");
    if (!send_line(fd, json{{"ok", true}, {"rails", reply_rails}}.dump())) return 1;
    ProbeResult r;
    if (kind == ProbeKind::rdma_write_lat) {
        r = rdma_write_lat_serve(*rails[0].endpoints[0], rails[0].remotes[0], RdmaLatSettings{size, iters}, deadline);
        r.rail = rails[0].name;
    } else {
        r = rdma_multirail_bw_serve(rails, deadline);
        r.kind = kind;
    }
    return print_result(r);
}

int run_server(const std::string& listen_addr, uint16_t port, int sessions, int retry_cnt) {
    const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, listen_addr.c_str(), &a.sin_addr) != 1) return usage();
    if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) || ::listen(lfd, 4)) {
        std::fprintf(stderr, "%s\n", errno_detail("bind/listen", errno).c_str());
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

int connect_to(const std::string& host, uint16_t port, double timeout) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
        ::close(fd);
        return -EINVAL;
    }
    set_timeout(fd, timeout);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a)) {
        const int err = errno;
        ::close(fd);
        return -err;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

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
    const ProbeKind kind = a.mode == "lat" ? ProbeKind::rdma_write_lat
                           : a.mode == "multirail" ? ProbeKind::rdma_multirail_bw : ProbeKind::rdma_write_bw;
    const auto t0 = SteadyClock::now();
    const auto deadline = Deadline::after_seconds(a.timeout);
    const uint32_t size = a.size ? a.size : (kind == ProbeKind::rdma_write_lat ? 2 : 65536);
    const uint32_t qps = kind == ProbeKind::rdma_write_lat ? 1 : std::max<uint32_t>(1, a.qps);
    auto fail_now = [&](const std::string& reason, const std::string& detail) {
        auto r = failed(kind, reason, detail);
        r.duration_seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
        return print_result(r);
    };
    std::vector<std::unique_ptr<RdmaEndpoint>> owned;
    std::vector<RdmaRail> rails;
    json req_rails = json::array();
    for (size_t i = 0; i < a.devs.size(); ++i) {
        RdmaRail rail;
        rail.name = a.devs[i].device;
        json infos = json::array();
        for (uint32_t q = 0; q < qps; ++q) {
            RdmaEndpointOptions o;
            o.device = a.devs[i].device;
            o.gid_index = a.devs[i].gid_index;
            o.retry_cnt = a.retry_cnt;
            o.buffer_size = std::max<uint32_t>(2 * size, 1u << 20);
            o.max_send_wr = std::max<uint32_t>(a.tx_depth + 8, 16);
            auto opened = RdmaEndpoint::open(o);
            if (!opened.endpoint) return fail_now(opened.status.reason, opened.status.detail);
            infos.push_back(opened.endpoint->info());
            rail.endpoints.push_back(opened.endpoint.get());
            owned.push_back(std::move(opened.endpoint));
        }
        const auto& rd = i < a.remote_devs.size() ? a.remote_devs[i] : a.devs[i];
        req_rails.push_back(json{{"name", rail.name},
                                 {"device", rd.device + (rd.gid_index >= 0 ? ":" + std::to_string(rd.gid_index) : "")},
                                 {"endpoints", infos}});
        rails.push_back(std::move(rail));
    }
    const int fd = connect_to(a.server, a.port, std::max(1.0, a.timeout));
    if (fd < 0) return fail_now(reason_from_errno(-fd), errno_detail("connect to " + a.server, -fd));
    const json req{{"mode", a.mode}, {"size", size}, {"iters", a.iters}, {"timeout", a.timeout + 5}, {"rails", req_rails}};
    std::optional<std::string> line;
    if (send_line(fd, req.dump())) line = recv_line(fd);
    ::close(fd);
    if (!line) return fail_now(reason::peer_closed, "no answer from the peer's rdma_probe_cli");
    const auto rep = json::parse(*line, nullptr, false);
    if (rep.is_discarded() || !rep.is_object()) return fail_now(reason::protocol_error, "answer is not JSON");
    if (!rep.value("ok", false)) return fail_now(rep.value("reason", reason::protocol_error), "peer: " + rep.value("detail", ""));
    const auto& rr = rep["rails"];
    if (!rr.is_array() || rr.size() != rails.size()) return fail_now(reason::protocol_error, "rail count differs");
    for (size_t i = 0; i < rails.size(); ++i) {
        const auto& eps = rr[i]["endpoints"];
        if (!eps.is_array() || eps.size() != rails[i].endpoints.size())
            return fail_now(reason::protocol_error, "endpoint count differs");
        for (size_t k = 0; k < eps.size(); ++k) {
            auto parsed = parse_endpoint_info(eps[k]);
            if (!parsed.info) return fail_now(reason::protocol_error, parsed.error);
            auto st = rails[i].endpoints[k]->connect(*parsed.info);
            if (!st.ok()) return fail_now(st.reason, st.detail);
            rails[i].remotes.push_back(*parsed.info);
        }
    }
    // Counters around the data phase only (the exchange above also crossed a rail).
    std::vector<TxCounter> counters;
    std::vector<std::optional<uint64_t>> before;
    for (auto& rail : rails) {
        counters.push_back(tx_counter(a.sysfs, rail.endpoints[0]->info()));
        before.push_back(counters.back().path.empty() ? std::nullopt : read_u64(counters.back().path));
    }
    ProbeResult r;
    RdmaBwSettings bs;
    bs.message_size = size;
    bs.iterations = a.seconds > 0 ? 0 : a.iters;
    bs.seconds = a.seconds;
    bs.tx_depth = a.tx_depth;
    bs.cq_mod = a.cq_mod;
    if (kind == ProbeKind::rdma_write_lat) {
        r = rdma_write_lat(*rails[0].endpoints[0], rails[0].remotes[0], RdmaLatSettings{size, a.iters}, deadline);
        r.rail = rails[0].name;
    } else if (kind == ProbeKind::rdma_write_bw && rails.size() == 1 && qps == 1) {
        r = rdma_write_bw(*rails[0].endpoints[0], rails[0].remotes[0], bs, deadline);
        r.rail = rails[0].name;
    } else {
        r = rdma_multirail_bw(rails, bs, deadline);
        r.kind = kind;
    }
    for (size_t i = 0; i < rails.size(); ++i) {
        if (!before[i]) continue;
        if (const auto after = read_u64(counters[i].path))
            r.bytes_per_rail[rails[i].name] = (*after - *before[i]) * counters[i].scale;
        r.info["rail." + rails[i].name + ".counter"] = counters[i].source;
    }
    r.duration_seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    return print_result(r);
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
            if (k == "--server") c.server = v;
            else if (k == "--listen") listen = v;
            else if (k == "--port") c.port = static_cast<uint16_t>(std::stoul(v));
            else if (k == "--sessions") sessions = std::stoi(v);
            else if (k == "--mode") c.mode = v;
            else if (k == "--dev") c.devs.push_back(parse_dev(v));
            else if (k == "--remote-dev") c.remote_devs.push_back(parse_dev(v));
            else if (k == "--iters") c.iters = std::stoull(v);
            else if (k == "--seconds") c.seconds = std::stod(v);
            else if (k == "--size") c.size = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--qps") c.qps = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--tx-depth") c.tx_depth = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--cq-mod") c.cq_mod = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--timeout") c.timeout = std::stod(v);
            else if (k == "--retry-cnt") c.retry_cnt = std::stoi(v);
            else if (k == "--sysfs-root") c.sysfs = v;
            else return usage();
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
