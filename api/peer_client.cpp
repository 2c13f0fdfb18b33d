// The control side of probing: talks to a peer daemon's HTTP port, as the bearer of our token.
#include "api/peer_client.hpp"

#include <httplib.h>

#include <algorithm>
#include <exception>
#include <functional>

#include "api/probe_view.hpp"

namespace rocewatch::api {
namespace {

struct Outcome {
    httplib::Result res;
    std::string reason;  // transport failure, "" when a response came back
};

// One request with every timeout set to what is left of the deadline; the transport's
// failure mapped to a probe reason.
Outcome call(const std::string& address, std::chrono::steady_clock::time_point deadline,
             const std::function<httplib::Result(httplib::Client&)>& send) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {httplib::Result{nullptr, httplib::Error::Unknown}, "timeout"};
    auto colon = address.rfind(':');
    std::string host = address.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    int port = std::stoi(address.substr(colon + 1));
    httplib::Client cli(host, port);
    auto secs = static_cast<time_t>(left.count() / 1'000'000);
    auto usecs = static_cast<time_t>(left.count() % 1'000'000);
    cli.set_connection_timeout(secs, usecs);
    cli.set_read_timeout(secs, usecs);
    cli.set_write_timeout(secs, usecs);
    cli.set_keep_alive(false);
    auto res = send(cli);
    if (res) return {std::move(res), ""};
    auto late = [&] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline; };
    std::string reason;
    switch (res.error()) {
        case httplib::Error::ConnectionTimeout: reason = "timeout"; break;
        case httplib::Error::Read: reason = late() ? "timeout" : "peer_closed"; break;
        case httplib::Error::Connection: reason = late() ? "timeout" : "peer_unreachable"; break;
        default: reason = "peer_unreachable"; break;
    }
    return {std::move(res), reason};
}

}  // namespace

PeerState fetch_hello(const PeerConfig& peer, const std::string& token, std::chrono::steady_clock::time_point deadline) {
    PeerState st;
    st.name = peer.name;
    st.address = peer.address;
    auto fail = [&](const std::string& reason) {
        st.hello_ok = false;
        st.hello_error = reason;
        return st;
    };
    try {
        auto out = call(peer.address, deadline, [&](httplib::Client& cli) {
            return cli.Get("/api/v1/peer/hello", {{"Authorization", "Bearer " + token}});
        });
        if (!out.reason.empty()) return fail(out.reason);
        const auto& res = out.res;
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

SessionReply post_session(const PeerConfig& peer, const std::string& token, const std::string& path,
                          const nlohmann::json& request, Deadline deadline) {
    SessionReply r;
    auto fail = [&](const std::string& reason, const std::string& detail) {
        r.body.reset();
        r.reason = reason;
        r.detail = detail;
        return r;
    };
    try {
        auto out = call(peer.address, deadline.at, [&](httplib::Client& cli) {
            return cli.Post(path, {{"Authorization", "Bearer " + token}}, request.dump(), "application/json");
        });
        const std::string where = "POST " + path + " to " + peer.name + " (" + peer.address + ")";
        if (!out.reason.empty()) return fail(out.reason, where + ": " + httplib::to_string(out.res.error()));
        const auto& res = out.res;
        if (res->status == 401 || res->status == 403) return fail("auth_refused", where + ": our token was refused");
        if (res->status == 503) return fail("peer_busy", where + ": the peer runs another probe session");
        if (res->status == 404) return fail("version_mismatch", where + ": the peer has no such endpoint (older version?)");
        if (res->status != 200 && res->status != 422)
            return fail("protocol_error", where + ": HTTP " + std::to_string(res->status));
        auto body = nlohmann::json::parse(res->body, nullptr, false);
        if (body.is_discarded() || !body.is_object()) return fail("protocol_error", where + ": the answer is not JSON");
        r.body = std::move(body);
        return r;
    } catch (const std::exception& e) {
        return fail("protocol_error", e.what());
    }
}

}  // namespace rocewatch::api
