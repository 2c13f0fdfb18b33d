// The UCX session child (`rocewatchd --ucx-session`): one endpoint, one run, exit. See
// ucx_session.hpp for the protocol on stdin/stdout.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "api/probe_view.hpp"
#include "daemon/peering/ucx_session.hpp"
#include "probes/errors.hpp"
#include "probes/ucx.hpp"

namespace rocewatch {
namespace {

using nlohmann::json;

void say(const json& j) {
    std::string s = j.dump() + "\n";
    (void)!::write(STDOUT_FILENO, s.data(), s.size());
}

int refuse(const std::string& reason, const std::string& detail) {
    say(json{{"reason", reason}, {"detail", detail}});
    return 1;
}

}  // namespace

int run_ucx_session_child() {
    try {
        std::string line;
        if (!std::getline(std::cin, line)) return refuse(reason::protocol_error, "no session on stdin");
        const json s = json::parse(line);
        const auto kind = probe_kind_from_string(s.value("kind", std::string()));
        if (!kind || !is_ucx_kind(*kind)) return refuse(reason::bad_target, "not a UCX probe kind");
        const bool lat = *kind == ProbeKind::ucx_put_lat;
        const bool active = s.value("role", std::string()) == "active";
        const auto size = s.value("message_size", uint32_t{8});
        const auto deadline = Deadline::after_seconds(s.value("timeout", 10.0));

        UcxEndpointOptions o;
        o.buffer_size = std::max<uint32_t>(2 * size, 1u << 20);
        auto opened = UcxEndpoint::open(o);
        if (!opened.endpoint) return refuse(opened.status.reason, opened.status.detail);
        auto& ep = *opened.endpoint;

        UcxEndpointInfo remote;
        auto connect = [&](const json& j) -> bool {
            auto parsed = parse_ucx_endpoint_info(j);
            if (!parsed.info) {
                refuse(reason::protocol_error, "the peer's UCX endpoint: " + parsed.error);
                return false;
            }
            remote = *parsed.info;
            auto st = ep.connect(remote);
            if (!st.ok()) {
                refuse(st.reason, st.detail);
                return false;
            }
            return true;
        };
        if (!active && !connect(s.value("remote", json::object()))) return 1;
        say(json{{"endpoint", ep.info()}});

        ProbeResult r;
        if (active) {
            if (!std::getline(std::cin, line)) return 1;  // the peer refused: the parent gave up
            const json next = json::parse(line);
            if (!connect(next.value("remote", json::object()))) return 1;
            if (lat)
                r = ucx_put_lat(ep, remote, UcxLatSettings{size, s.value("iterations", uint64_t{1000})}, deadline);
            else {
                UcxBwSettings b;
                b.message_size = size;
                b.iterations = s.value("iterations", uint64_t{0});
                b.seconds = s.value("seconds", 0.0);
                r = ucx_put_bw(ep, remote, b, deadline);
            }
        } else {
            r = lat ? ucx_put_lat_serve(ep, remote, UcxLatSettings{size, s.value("iterations", uint64_t{1000})},
                                        deadline)
                    : ucx_put_bw_serve(ep, deadline);
        }
        say(json{{"result", api::probe_result_json(r)}});
        return 0;
    } catch (const std::exception& e) {
        return refuse(reason::protocol_error, e.what());
    }
}

}  // namespace rocewatch
