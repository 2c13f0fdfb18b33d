// Command-line front end to the TCP probes and the data port, for bench/tcp_probe_vs_iperf3.sh and by hand.
//
//   tcp_probe_cli serve --bind ADDR [--port N] --token HEX [--seconds S] [--max-sessions N]
//   tcp_probe_cli bw  --target ADDR --port N --token HEX [--streams N] [--duration S]
//                 [--write-size B] [--sndbuf B] [--deadline S] [--bind-address A] [--interface IF]
//   tcp_probe_cli lat --target ADDR --port N --token HEX [--size B] [--iterations N]
//                 [--duration S] [--deadline S]
//
// Results are one line of key=value pairs on stdout; exit status 0 on success, 1 when the
// probe failed, 2 on bad usage.
#include <signal.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>

#include "probes/tcp.hpp"

using namespace rocewatch;

namespace {

int usage(FILE* to = stderr) {
    std::fprintf(to, "usage: tcp_probe_cli serve --bind ADDR [--port N] --token HEX [--seconds S] [--max-sessions N]\n"
                     "       tcp_probe_cli bw  --target ADDR --port N --token HEX [--streams N] [--duration S] "
                     "[--write-size B] [--sndbuf B]\n"
                     "                     [--deadline S] [--bind-address A] [--interface IF]\n"
                     "       tcp_probe_cli lat --target ADDR --port N --token HEX [--size B] [--iterations N]\n"
                     "                     [--duration S] [--deadline S]\n");
    return to == stderr ? 2 : 0;
}

std::string opt(const std::map<std::string, std::string>& o, const std::string& k, const std::string& dflt = "") {
    const auto it = o.find(k);
    return it == o.end() ? dflt : it->second;
}

void print_failure(const ProbeResult& r) {
    std::printf("fail reason=%s duration_s=%.3f detail=\"%s\"\n", r.reason.c_str(), r.duration_seconds,
                r.detail.c_str());
}

int serve(const std::map<std::string, std::string>& o, const ProbeToken& token) {
    TcpServerLimits limits;
    limits.max_sessions = static_cast<uint32_t>(std::stoul(opt(o, "max-sessions", "16")));
    // Block the signals before any thread starts, so only sigtimedwait() below sees them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    auto log = std::make_shared<spdlog::logger>("tcp_probe_cli", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    auto server = TcpProbeServer::create(opt(o, "bind"), static_cast<uint16_t>(std::stoul(opt(o, "port", "0"))), token,
                                         limits, log);
    server->start();
    std::printf("listening port=%u\n", server->port());
    std::fflush(stdout);
    const double seconds = std::stod(opt(o, "seconds", "0"));
    if (seconds > 0) {
        timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
        (void)sigtimedwait(&set, nullptr, &ts);
    } else {
        int sig = 0;
        (void)sigwait(&set, &sig);
    }
    server->stop();
    const auto s = server->stats();
    std::fprintf(stderr,
                 "served connections=%llu sessions=%llu auth_refused=%llu busy=%llu cut=%llu dropped=%llu bytes=%llu\n",
                 static_cast<unsigned long long>(s.connections), static_cast<unsigned long long>(s.sessions),
                 static_cast<unsigned long long>(s.auth_refused), static_cast<unsigned long long>(s.busy),
                 static_cast<unsigned long long>(s.cut), static_cast<unsigned long long>(s.dropped),
                 static_cast<unsigned long long>(s.bytes_received));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    const std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h") return usage(stdout);
    if (cmd != "serve" && cmd != "bw" && cmd != "lat") return usage();  // before the token is asked for
    std::map<std::string, std::string> o;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--", 0) != 0 || i + 1 >= argc) return usage();
        o[a.substr(2)] = argv[++i];
    }
    const auto token = token_from_hex(opt(o, "token"));
    if (!token) {
        std::fprintf(stderr, "--token must be 64 hex digits\n");
        return 2;
    }
    try {
        if (cmd == "serve") return serve(o, *token);
        TcpProbeTarget t;
        t.address = opt(o, "target");
        t.port = static_cast<uint16_t>(std::stoul(opt(o, "port", "0")));
        t.token = *token;
        t.bind_address = opt(o, "bind-address");
        t.bind_interface = opt(o, "interface");
        if (cmd == "bw") {
            TcpBwSettings s;
            s.streams = static_cast<uint32_t>(std::stoul(opt(o, "streams", "1")));
            s.duration_seconds = std::stod(opt(o, "duration", "1"));
            s.write_size = static_cast<uint32_t>(std::stoul(opt(o, "write-size", std::to_string(s.write_size))));
            s.socket_buffer_bytes = std::stoi(opt(o, "sndbuf", "0"));
            const double deadline = std::stod(opt(o, "deadline", std::to_string(s.duration_seconds + 5)));
            const ProbeResult r = tcp_bandwidth(t, s, Deadline::after_seconds(deadline));
            if (!r.success) return print_failure(r), 1;
            std::printf("ok bw_bps=%.0f gbps=%.3f bytes=%llu streams=%u receiver_s=%s sender_s=%s duration_s=%.3f\n",
                        *r.bandwidth_bits_per_second, *r.bandwidth_bits_per_second / 1e9,
                        static_cast<unsigned long long>(r.bytes), r.streams, opt(r.info, "receiver_seconds").c_str(),
                        opt(r.info, "sender_seconds").c_str(), r.duration_seconds);
            return 0;
        }
        if (cmd == "lat") {
            TcpLatSettings s;
            s.message_size = static_cast<uint32_t>(std::stoul(opt(o, "size", "64")));
            s.iterations = static_cast<uint32_t>(std::stoul(opt(o, "iterations", "10000")));
            s.max_duration_seconds = std::stod(opt(o, "duration", "1"));
            const double deadline = std::stod(opt(o, "deadline", std::to_string(s.max_duration_seconds + 5)));
            const ProbeResult r = tcp_latency(t, s, Deadline::after_seconds(deadline));
            if (!r.success) return print_failure(r), 1;
            const auto& l = *r.latency;
            std::printf("ok typical_us=%.3f mean_us=%.3f p99_us=%.3f p99_9_us=%.3f min_us=%.3f max_us=%.3f "
                        "stddev_us=%.3f iterations=%llu duration_s=%.3f\n",
                        l.typical * 1e6, l.mean * 1e6, l.p99 * 1e6, l.p99_9 * 1e6, l.min * 1e6, l.max * 1e6,
                        l.stddev * 1e6, static_cast<unsigned long long>(r.iterations), r.duration_seconds);
            return 0;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tcp_probe_cli: %s\n", e.what());
        return 2;
    }
    return usage();
}
