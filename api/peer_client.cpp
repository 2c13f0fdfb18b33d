// The control side of probing: asks a peer daemon for its hello over its HTTP port.
#include "api/peer_client.hpp"

#include <httplib.h>

#include <algorithm>
#include <exception>

#include "api/probe_view.hpp"

namespace rocewatch::api {

PeerState fetch_hello(const PeerConfig& peer, const std::string& token, std::chrono::steady_clock::time_point deadline) {
    PeerState st;
    st.name = peer.name;
    st.address = peer.address;
    auto fail = [&](const char* reason) {
        st.hello_ok = false;
        st.hello_error = reason;
        return st;
    };
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return fail("timeout");
    try {
        auto colon = peer.address.rfind(':');
        std::string host = peer.address.substr(0, colon);
        if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
        int port = std::stoi(peer.address.substr(colon + 1));
        httplib::Client cli(host, port);
        auto secs = static_cast<time_t>(left.count() / 1'000'000);
        auto usecs = static_cast<time_t>(left.count() % 1'000'000);
        cli.set_connection_timeout(secs, usecs);
        cli.set_read_timeout(secs, usecs);
        cli.set_write_timeout(secs, usecs);
        cli.set_keep_alive(false);
        auto res = cli.Get("/api/v1/peer/hello", {{"Authorization", "Bearer " + token}});
        if (!res) {
            switch (res.error()) {
                case httplib::Error::ConnectionTimeout: return fail("timeout");
                case httplib::Error::Read:
                    return fail(std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline
                                    ? "timeout"
                                    : "peer_closed");
                case httplib::Error::Connection:
                    return fail(std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline
                                    ? "timeout"
                                    : "peer_unreachable");
                default: return fail("peer_unreachable");
            }
        }
        if (res->status == 401 || res->status == 403) return fail("auth_refused");
        if (res->status == 503) return fail("peer_busy");
        if (res->status != 200) return fail("protocol_error");
        auto hello = hello_from_json(nlohmann::json::parse(res->body));
        if (hello.protocol_version != static_cast<uint32_t>(kPeerProtocolVersion)) return fail("version_mismatch");
        st.hello = std::move(hello);
        st.hello_ok = true;
        return st;
    } catch (const std::exception&) {
        return fail("protocol_error");
    }
}

}  // namespace rocewatch::api
