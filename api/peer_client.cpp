// The control side of probing: talks to a peer daemon's HTTP port, as the bearer of our token.
#include "api/peer_client.hpp"

#include <atomic>
#include <exception>

#include "api/probe_view.hpp"
#include "daemon/config/config_loader.hpp"
#include "http/client.hpp"
#include "http/resolve.hpp"

namespace rocewatch::api {
namespace {

struct Outcome {
    http::Response res;
    std::string reason;  // transport failure, "" when a response came back
    std::string detail;  // what went wrong, when reason is set
};

// A hello or a session answer is a few KiB. A peer (or whoever answers at its address) that
// sends more is cut off here: read whole, a 400 MB body, or a 400 KB gzip bomb that the client
// would inflate, took the daemon's memory to 800 MB.
constexpr size_t kMaxAnswer = 1 << 20;

constexpr std::chrono::milliseconds kMaxConnect = std::chrono::seconds(3);

// A 503 is a busy peer (another session, its budget spent, its front end saturated) unless it
// says its peer probing is off: then it will not take part until its operator gives it the token.
const char* unavailable_reason(const std::string& body) {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    const bool off = j.is_object() && j.contains("reason") && j["reason"] == kReasonPeerProbingOff;
    return off ? kReasonPeerProbingOff : kReasonPeerBusy;
}

// One request within the deadline (its connect within at most kMaxConnect of it), the
// transport's failure mapped to a probe reason ("cancelled" when `cancel` cut it short).
Outcome call(const std::string& address, std::chrono::steady_clock::time_point deadline, const PeerTransport& tr,
             http::Request rq, const std::atomic<bool>* cancel = nullptr) {
    if (std::chrono::steady_clock::now() >= deadline) return {{}, "timeout", "the deadline passed before the request"};
    auto where = parse_listen_address(address);
    if (!where || where->host.empty() || where->port == 0) return {{}, "protocol_error", "not a host:port address"};
    std::string why;
    auto host = http::resolve_host(where->host, deadline, why);
    if (!host) {
        const bool late = std::chrono::steady_clock::now() >= deadline;
        return {{}, late ? "timeout" : "peer_unreachable", why};
    }
    // The name as written is what the peer's certificate must carry (and the SNI); the
    // connection goes to the address resolved above, within the deadline.
    rq.address = *host;
    rq.port = where->port;
    rq.host = where->host;
    rq.deadline = deadline;
    // A peer whose host went away answers no SYN: its connect would hold a stopping daemon up
    // for the probe's whole deadline, were it not for `cancel`, and the scheduler for as long.
    // A peer that has not completed the handshake in kMaxConnect (the SYN is sent again after
    // 1 s) is not there.
    rq.connect_timeout = kMaxConnect;
    rq.cancel = cancel;
    // Read up to kMaxAnswer as sent: the client asks for no encoding and inflates none.
    rq.max_body = kMaxAnswer;
    rq.tls = {.enabled = tr.https, .ca_file = tr.ca_file, .cert_file = tr.cert_file, .key_file = tr.key_file};
    auto res = http::fetch(rq);
    if (cancel && cancel->load()) return {{}, "cancelled", "cancelled: the daemon is stopping"};
    auto late = [&] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline; };
    std::string reason;
    std::string detail = res.detail;
    switch (res.error) {
        case http::Error::none: return {std::move(res), "", ""};
        case http::Error::cancelled: reason = "cancelled"; break;
        case http::Error::too_large:
            reason = "protocol_error";
            detail = "the answer is larger than " + std::to_string(kMaxAnswer >> 20) + " MiB";
            break;
        // A peer that trickles its answer a byte a second no longer holds a 2 s hello (and the
        // one scheduler thread, and SIGTERM) for a minute: the deadline is the whole request's.
        case http::Error::timeout:
            reason = "timeout";
            detail = "no whole answer by the deadline";
            break;
        case http::Error::connect_timeout: reason = "timeout"; break;
        case http::Error::closed: reason = late() ? "timeout" : "peer_closed"; break;
        case http::Error::refused: reason = late() ? "timeout" : "peer_unreachable"; break;
        // A handshake that failed (the peer serves plain HTTP, or TLS with a certificate we
        // do not trust) or our client certificate that cannot be loaded.
        case http::Error::tls: reason = "tls_error"; break;
        case http::Error::protocol: reason = "protocol_error"; break;
    }
    return {{}, reason, detail};
}

}  // namespace

PeerTransport peer_transport(const ClusterConfig& c) {
    return {.https = c.peer_scheme == "https",
            .ca_file = c.peer_ca_file,
            .cert_file = c.peer_cert_file,
            .key_file = c.peer_key_file};
}

PeerState fetch_hello(const PeerConfig& peer, const std::string& token, std::chrono::steady_clock::time_point deadline,
                      const PeerTransport& transport) {
    PeerState st;
    st.name = peer.name;
    st.address = peer.address;
    auto fail = [&](const std::string& reason) {
        st.hello_ok = false;
        st.hello_error = reason;
        return st;
    };
    try {
        http::Request req;
        req.method = "GET";
        req.target = "/api/v1/peer/hello";
        req.headers = {{"Authorization", "Bearer " + token}};
        auto out = call(peer.address, deadline, transport, std::move(req));
        if (!out.reason.empty()) return fail(out.reason);
        const auto& res = out.res;
        if (res.status == 401 || res.status == 403) return fail("auth_refused");
        if (res.status == 503) return fail(unavailable_reason(res.body));
        if (res.status != 200) return fail("protocol_error");
        auto hello = hello_from_json(nlohmann::json::parse(res.body));
        if (hello.protocol_version != static_cast<uint32_t>(kPeerProtocolVersion)) {
            st.hello_detail = peer.name + " runs rocewatch " + hello.version + ", peer protocol " +
                              std::to_string(hello.protocol_version) + "; this node speaks " +
                              std::to_string(kPeerProtocolVersion);
            return fail("version_mismatch");
        }
        st.hello = std::move(hello);
        st.hello_ok = true;
        return st;
    } catch (const std::exception&) {
        return fail("protocol_error");
    }
}

namespace {

// Why a peer answered 503, in its words: the detail or error of its JSON (another session
// running, its probe budget spent, peer probing off, no snapshot yet), else its text (its
// front end saturated), and when it asks to be tried again.
std::string unavailable_detail(const http::Response& res) {
    const std::string& text = res.body;
    std::string why = "the peer is unavailable (HTTP 503)";
    const auto body = nlohmann::json::parse(text, nullptr, false);
    if (body.is_object()) {
        for (const char* key : {"detail", "error"})
            if (const auto it = body.find(key);
                it != body.end() && it->is_string() && !it->get<std::string>().empty()) {
                why = "the peer says " + it->get<std::string>().substr(0, 200);  // bounded
                break;
            }
    } else {
        const auto first = text.find_first_not_of(" \t\r\n");
        const auto last = text.find_last_not_of(" \t\r\n");
        if (first != std::string::npos && last - first < 200)
            why = "the peer says " + text.substr(first, last - first + 1);
    }
    if (const auto after = res.header("Retry-After"); !after.empty() && after.size() <= 32)
        why += " (retry after " + after + " s)";
    return why;
}

}  // namespace

SessionReply post_session(const PeerConfig& peer, const std::string& token, const std::string& path,
                          const nlohmann::json& request, Deadline deadline, const PeerTransport& transport) {
    SessionReply r;
    auto fail = [&](const std::string& reason, const std::string& detail) {
        r.body.reset();
        r.reason = reason;
        r.detail = detail;
        return r;
    };
    try {
        http::Request req;
        req.method = "POST";
        req.target = path;
        req.headers = {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
        req.body = request.dump();
        auto out = call(peer.address, deadline.at, transport, std::move(req), deadline.cancel);
        const std::string where = "POST " + path + " to " + peer.name + " (" + peer.address + ")";
        if (!out.reason.empty()) return fail(out.reason, where + ": " + out.detail);
        const auto& res = out.res;
        if (res.status == 401 || res.status == 403) return fail("auth_refused", where + ": our token was refused");
        if (res.status == 503) return fail(unavailable_reason(res.body), where + ": " + unavailable_detail(res));
        if (res.status == 404)
            return fail("version_mismatch", where + ": the peer has no such endpoint (older version?)");
        if (res.status != 200 && res.status != 422)
            return fail("protocol_error", where + ": HTTP " + std::to_string(res.status));
        auto body = nlohmann::json::parse(res.body, nullptr, false);
        if (body.is_discarded() || !body.is_object()) return fail("protocol_error", where + ": the answer is not JSON");
        r.body = std::move(body);
        return r;
    } catch (const std::exception& e) {
        return fail("protocol_error", e.what());
    }
}

}  // namespace rocewatch::api
