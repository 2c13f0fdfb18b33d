// Command-line front end to the UCX put probes, for benches against ucx_perftest.
//
//   ucx_probe_cli server --port N [--listen ADDR] [--sessions N] [--tls T] [--dev D]
//   ucx_probe_cli client --server ADDR --port N --mode bw|lat [--iters N] [--seconds S]
//                 [--size B] [--outstanding N] [--timeout S] [--tls T] [--dev D]
//
// The client opens its endpoint and sends its UcxEndpointInfo with the settings as one JSON
// line over a plain TCP socket; the server opens its endpoint, connects to the client,
// answers with its own info and serves (the daemon carries the same JSON over its HTTP
// control path); then the client connects and runs the active side. Each side prints one
// JSON result line on stdout. --tls/--dev set UCX_TLS/UCX_NET_DEVICES for this endpoint
// (default: the environment, then UCX's choice). Exit 0 on success, 1 when the probe
// failed, 2 on bad usage.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_io.hpp"
#include "probes/errors.hpp"
#include "probes/result.hpp"
#include "probes/ucx.hpp"
#include "util/json_int.hpp"

using namespace rocewatch;
using nlohmann::json;
using rocewatch::cli::print_result;
using rocewatch::cli::recv_line;
using rocewatch::cli::send_line;
using rocewatch::cli::set_timeout;

namespace {

int usage() {
    std::fprintf(stderr, "usage: ucx_probe_cli server --port N [--listen ADDR] [--sessions N] [--tls T] [--dev D]\n"
                         "       ucx_probe_cli client --server ADDR --port N --mode bw|lat [--iters N] [--seconds S]\n"
                         "              [--size B] [--outstanding N] [--timeout S] [--tls T] [--dev D]\n");
    return 2;
}

struct Args {
    std::string role, server, listen = "0.0.0.0", mode = "bw", tls, dev;
    int port = 0;
    int sessions = 0;  // 0: serve forever
    uint32_t size = 0;
    uint64_t iters = 0;
    bool iters_set = false;
    double seconds = 0;
    uint32_t outstanding = 16;
    double timeout = 30;
};

UcxEndpointOptions endpoint_options(const Args& a, uint32_t size) {
    UcxEndpointOptions o;
    o.transports = a.tls;
    o.net_devices = a.dev;
    o.buffer_size = std::max<uint32_t>(2 * size, 1u << 20);
    return o;
}

int serve_session(int fd, const Args& a) {
    set_timeout(fd, 10);
    const auto line = recv_line(fd);
    if (!line) return 1;
    const auto req = json::parse(*line, nullptr, false);
    const std::string mode = req.is_object() ? req.value("mode", "") : "";
    const ProbeKind kind = mode == "lat" ? ProbeKind::ucx_put_lat : ProbeKind::ucx_put_bw;
    auto refuse = [&](const std::string& reason, const std::string& detail) {
        send_line(fd, json{{"ok", false}, {"reason", reason}, {"detail", detail}}.dump());
        return print_result(failed_result(kind, reason, detail));
    };
    if (!req.is_object() || !req.contains("info"))
        return refuse(reason::protocol_error, "request is not JSON with info");
    const auto client = parse_ucx_endpoint_info(req["info"]);
    if (!client.info) return refuse(reason::protocol_error, client.error);
    const auto size_asked = json_int_or<uint32_t>(req, "size", 65536);
    const auto iters = json_int_or<uint64_t>(req, "iters", 1000);
    if (!size_asked || !iters)
        return refuse(reason::protocol_error, "size and iters must be non-negative integers in range");
    const uint32_t size = *size_asked;
    const double timeout = req.value("timeout", 30.0);  // a number past int64 nanoseconds would be undefined
    if (!(timeout > 0 && timeout <= 3600))
        return refuse(reason::protocol_error, "timeout must be within (0, 3600] seconds");
    const auto deadline = Deadline::after_seconds(timeout);
    auto opened = UcxEndpoint::open(endpoint_options(a, size));
    if (!opened.endpoint) return refuse(opened.status.reason, opened.status.detail);
    auto& ep = *opened.endpoint;
    if (auto st = ep.connect(*client.info); !st.ok()) return refuse(st.reason, st.detail);
    if (!send_line(fd, json{{"ok", true}, {"info", ep.info()}}.dump()))
        return print_result(failed_result(kind, reason::peer_closed, "client went away before the probe"));
    if (kind == ProbeKind::ucx_put_lat) {
        UcxLatSettings s;
        s.message_size = size;
        s.iterations = *iters;
        return print_result(ucx_put_lat_serve(ep, *client.info, s, deadline));
    }
    return print_result(ucx_put_bw_serve(ep, deadline));
}

int run_server(const Args& a) {
    const int lfd = cli::listen_tcp(a.listen, static_cast<uint16_t>(a.port));
    if (lfd < 0) {
        std::fprintf(stderr, "%s\n", errno_detail("listen on " + a.listen, -lfd).c_str());
        return 2;
    }
    int rc = 0;
    for (int n = 0; a.sessions == 0 || n < a.sessions; ++n) {
        const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        rc = serve_session(fd, a);
        ::close(fd);
    }
    ::close(lfd);
    return rc;
}

int run_client(const Args& a) {
    const ProbeKind kind = a.mode == "lat" ? ProbeKind::ucx_put_lat : ProbeKind::ucx_put_bw;
    const uint32_t size = a.size ? a.size : (kind == ProbeKind::ucx_put_lat ? 8u : 65536u);
    const uint64_t iters = a.iters_set ? a.iters : (kind == ProbeKind::ucx_put_lat ? 1000u : 5000u);
    const auto deadline = Deadline::after_seconds(a.timeout);
    auto opened = UcxEndpoint::open(endpoint_options(a, size));
    if (!opened.endpoint) return print_result(failed_result(kind, opened.status.reason, opened.status.detail));
    auto& ep = *opened.endpoint;
    const int fd = cli::connect_tcp(a.server, static_cast<uint16_t>(a.port), std::max(1.0, a.timeout));
    if (fd < 0)
        return print_result(
            failed_result(kind, reason_from_errno(-fd), errno_detail("control connection to " + a.server, -fd)));
    json req{{"mode", a.mode}, {"size", size}, {"iters", iters}, {"timeout", a.timeout}, {"info", ep.info()}};
    if (!send_line(fd, req.dump())) return print_result(failed_result(kind, reason::peer_closed, "control send"));
    const auto line = recv_line(fd);
    ::close(fd);
    if (!line) return print_result(failed_result(kind, reason::peer_closed, "no answer on the control connection"));
    const auto rep = json::parse(*line, nullptr, false);
    if (!rep.is_object() || !rep.value("ok", false))
        return print_result(
            failed_result(kind, rep.is_object() ? rep.value("reason", reason::protocol_error) : reason::protocol_error,
                          rep.is_object() ? rep.value("detail", "") : "answer is not JSON"));
    const auto peer = parse_ucx_endpoint_info(rep["info"]);
    if (!peer.info) return print_result(failed_result(kind, reason::protocol_error, peer.error));
    if (auto st = ep.connect(*peer.info); !st.ok()) return print_result(failed_result(kind, st.reason, st.detail));
    if (kind == ProbeKind::ucx_put_lat) {
        UcxLatSettings s;
        s.message_size = size;
        s.iterations = iters;
        return print_result(ucx_put_lat(ep, *peer.info, s, deadline));
    }
    UcxBwSettings s;
    s.message_size = size;
    s.iterations = a.seconds > 0 ? 0 : iters;
    s.seconds = a.seconds;
    s.outstanding = a.outstanding;
    return print_result(ucx_put_bw(ep, *peer.info, s, deadline));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    Args a;
    a.role = argv[1];
    try {
        for (int i = 2; i < argc; ++i) {
            const std::string k = argv[i];
            if (i + 1 >= argc) return usage();
            const std::string v = argv[++i];
            if (k == "--port")
                a.port = std::stoi(v);
            else if (k == "--listen")
                a.listen = v;
            else if (k == "--server")
                a.server = v;
            else if (k == "--sessions")
                a.sessions = std::stoi(v);
            else if (k == "--mode")
                a.mode = v;
            else if (k == "--iters")
                a.iters = std::stoull(v), a.iters_set = true;
            else if (k == "--seconds")
                a.seconds = std::stod(v);
            else if (k == "--size")
                a.size = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--outstanding")
                a.outstanding = static_cast<uint32_t>(std::stoul(v));
            else if (k == "--timeout")
                a.timeout = std::stod(v);
            else if (k == "--tls")
                a.tls = v;
            else if (k == "--dev")
                a.dev = v;
            else
                return usage();
        }
    } catch (const std::exception&) {
        return usage();
    }
    if (a.port <= 0 || a.port > 65535) return usage();
    if (a.role == "server") return run_server(a);
    if (a.role == "client" && !a.server.empty() && (a.mode == "bw" || a.mode == "lat")) return run_client(a);
    return usage();
}
