// The control side of probing: talks to a peer daemon's HTTP port, as the bearer of our token.
#include "api/peer_client.hpp"

#include <httplib.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "api/probe_view.hpp"
#include "daemon/config/config_loader.hpp"
#include "util/host_port.hpp"
#include "util/http_watchdog.hpp"

namespace rocewatch::api {
namespace {

// One name lookup, shared by the waiting caller and the thread that asks the resolver: the
// caller may leave at its deadline, the thread finishes (and frees it) whenever it returns.
struct Lookup {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::string address;
    std::string error;
};

void look_up(const std::shared_ptr<Lookup>& l, const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string address, error;
    if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || !res) {
        error = rc != 0 ? gai_strerror(rc) : "no address";
    } else {
        char buf[NI_MAXHOST];
        if (getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) == 0)
            address = buf;
        else
            error = "no numeric address";
        freeaddrinfo(res);
    }
    std::lock_guard lock(l->mu);
    l->address = std::move(address);
    l->error = std::move(error);
    l->done = true;
    l->cv.notify_all();
}

struct Outcome {
    httplib::Result res;
    std::string reason;  // transport failure, "" when a response came back
    std::string detail;  // what went wrong before any request was sent
    std::string body;    // the answer's body, at most kMaxAnswer bytes
};

// A hello or a session answer is a few KiB. A peer (or whoever answers at its address) that
// sends more is cut off here: read whole, a 400 MB body, or a 400 KB gzip bomb that the client
// would inflate, took the daemon's memory to 800 MB.
constexpr size_t kMaxAnswer = 1 << 20;

constexpr std::chrono::microseconds kMaxConnect = std::chrono::seconds(3);

// A 503 is a busy peer (another session, its budget spent, its front end saturated) unless it
// says its peer probing is off: then it will not take part until its operator gives it the token.
const char* unavailable_reason(const std::string& body) {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    const bool off = j.is_object() && j.contains("reason") && j["reason"] == kReasonPeerProbingOff;
    return off ? kReasonPeerProbingOff : kReasonPeerBusy;
}

// One request with every timeout set to what is left of the deadline (the connect's to at
// most kMaxConnect); the transport's
// failure mapped to a probe reason ("cancelled" when `cancel` cut it short).
Outcome call(const std::string& address, std::chrono::steady_clock::time_point deadline, const PeerTransport& tr,
             httplib::Request req, const std::atomic<bool>* cancel = nullptr) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {httplib::Result{nullptr, httplib::Error::Unknown}, "timeout"};
    auto where = parse_listen_address(address);
    if (!where || where->host.empty() || where->port == 0)
        return {httplib::Result{nullptr, httplib::Error::Unknown}, "protocol_error", "not a host:port address"};
    std::string why;
    auto host = resolve_host(where->host, deadline, why);
    if (!host) {
        const bool late = std::chrono::steady_clock::now() >= deadline;
        return {httplib::Result{nullptr, httplib::Error::Unknown}, late ? "timeout" : "peer_unreachable", why};
    }
    left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {httplib::Result{nullptr, httplib::Error::Unknown}, "timeout"};
    // The name as written is what the peer's certificate must carry (and the SNI); the
    // connection goes to the address resolved above, within the deadline.
    const std::string authority = host_port(where->host, where->port);
    httplib::Client cli(tr.https ? "https://" + authority : "http://" + authority, tr.cert_file, tr.key_file);
    if (*host != where->host) cli.set_hostname_addr_map({{where->host, *host}});
    if (tr.https) {
        if (!tr.ca_file.empty()) cli.set_ca_cert_path(tr.ca_file);
        cli.enable_server_certificate_verification(true);
    }
    auto secs = static_cast<time_t>(left.count() / 1'000'000);
    auto usecs = static_cast<time_t>(left.count() % 1'000'000);
    // A connect in progress is the one wait CancelWatch cannot cut short (the client has no
    // socket to shut down yet), and a peer whose host went away answers no SYN: its connect
    // would hold a stopping daemon up for the probe's whole deadline. A peer that has not
    // completed the handshake in kMaxConnect (the SYN is sent again after 1 s) is not there.
    const auto connect_left = std::min<std::chrono::microseconds>(left, kMaxConnect);
    cli.set_connection_timeout(static_cast<time_t>(connect_left.count() / 1'000'000),
                               static_cast<time_t>(connect_left.count() % 1'000'000));
    cli.set_read_timeout(secs, usecs);
    cli.set_write_timeout(secs, usecs);
    cli.set_keep_alive(false);
    cli.set_decompress(false);  // no Accept-Encoding: an answer is JSON as sent, never inflated here
    std::string body;
    bool too_large = false;
    req.content_receiver = bounded_body(body, kMaxAnswer, too_large);
    httplib::Result res{nullptr, httplib::Error::Unknown};
    bool stopped = false;
    {
        // httplib's read timeout bounds each read: a peer that trickles a byte a second kept a
        // 2 s hello (and the one scheduler thread, and SIGTERM) waiting a minute.
        HttpWatchdog watch(cli, deadline, cancel, Deadline::kCancelSlice);
        res = cli.send(req);
        stopped = watch.fired();
    }
    if (cancel && cancel->load()) return {httplib::Result{nullptr, httplib::Error::Canceled}, "cancelled"};
    if (too_large)
        return {httplib::Result{nullptr, httplib::Error::Canceled}, "protocol_error",
                "the answer is larger than " + std::to_string(kMaxAnswer >> 20) + " MiB"};
    if (res) return {std::move(res), "", "", std::move(body)};
    if (stopped)
        return {httplib::Result{nullptr, httplib::Error::Canceled}, "timeout", "no whole answer by the deadline"};
    auto late = [&] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline; };
    std::string reason;
    switch (res.error()) {
        case httplib::Error::ConnectionTimeout: reason = "timeout"; break;
        case httplib::Error::Read: reason = late() ? "timeout" : "peer_closed"; break;
        case httplib::Error::Connection: reason = late() ? "timeout" : "peer_unreachable"; break;
        // A handshake that failed (the peer serves plain HTTP, or TLS with a certificate we
        // do not trust) or our client certificate that cannot be loaded.
        case httplib::Error::SSLConnection:
        case httplib::Error::SSLLoadingCerts:
        case httplib::Error::SSLServerVerification: reason = "tls_error"; break;
        default: reason = "peer_unreachable"; break;
    }
    return {std::move(res), reason};
}

}  // namespace

std::optional<std::string> resolve_host(const std::string& host, std::chrono::steady_clock::time_point deadline,
                                        std::string& why) {
    std::string bare = host.size() >= 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2)
                                                                                     : host;
    unsigned char buf[sizeof(in6_addr)];
    if (inet_pton(AF_INET, bare.c_str(), buf) == 1 || inet_pton(AF_INET6, bare.c_str(), buf) == 1) return bare;
    try {
        auto l = std::make_shared<Lookup>();
        std::thread(look_up, l, bare).detach();
        std::unique_lock lock(l->mu);
        if (!l->cv.wait_until(lock, deadline, [&] { return l->done; })) {
            why = "the name " + bare + " did not resolve before the probe's deadline";
            return std::nullopt;
        }
        if (l->address.empty()) {
            why = "the name " + bare + " does not resolve: " + l->error;
            return std::nullopt;
        }
        return l->address;
    } catch (const std::exception& e) {  // no thread to spare
        why = std::string("cannot resolve ") + bare + ": " + e.what();
        return std::nullopt;
    }
}

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
        httplib::Request req;
        req.method = "GET";
        req.path = "/api/v1/peer/hello";
        req.headers = {{"Authorization", "Bearer " + token}};
        auto out = call(peer.address, deadline, transport, std::move(req));
        if (!out.reason.empty()) return fail(out.reason);
        const auto& res = out.res;
        if (res->status == 401 || res->status == 403) return fail("auth_refused");
        if (res->status == 503) return fail(unavailable_reason(out.body));
        if (res->status != 200) return fail("protocol_error");
        auto hello = hello_from_json(nlohmann::json::parse(out.body));
        if (hello.protocol_version != static_cast<uint32_t>(kPeerProtocolVersion)) return fail("version_mismatch");
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
std::string unavailable_detail(const httplib::Response& res, const std::string& text) {
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
    if (const auto after = res.get_header_value("Retry-After"); !after.empty() && after.size() <= 32)
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
        httplib::Request req;
        req.method = "POST";
        req.path = path;
        req.headers = {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
        req.body = request.dump();
        auto out = call(peer.address, deadline.at, transport, std::move(req), deadline.cancel);
        const std::string where = "POST " + path + " to " + peer.name + " (" + peer.address + ")";
        if (!out.reason.empty())
            return fail(out.reason,
                        where + ": " + (out.detail.empty() ? httplib::to_string(out.res.error()) : out.detail));
        const auto& res = out.res;
        if (res->status == 401 || res->status == 403) return fail("auth_refused", where + ": our token was refused");
        if (res->status == 503)
            return fail(unavailable_reason(out.body), where + ": " + unavailable_detail(*res, out.body));
        if (res->status == 404)
            return fail("version_mismatch", where + ": the peer has no such endpoint (older version?)");
        if (res->status != 200 && res->status != 422)
            return fail("protocol_error", where + ": HTTP " + std::to_string(res->status));
        auto body = nlohmann::json::parse(out.body, nullptr, false);
        if (body.is_discarded() || !body.is_object()) return fail("protocol_error", where + ": the answer is not JSON");
        r.body = std::move(body);
        return r;
    } catch (const std::exception& e) {
        return fail("protocol_error", e.what());
    }
}

}  // namespace rocewatch::api
