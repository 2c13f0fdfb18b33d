// The HTTP client against real loopback sockets: servers that answer byte by byte as each test
// scripts them (framings, trickles, silences, lies), and TLS servers made here with OpenSSL.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "http/client.hpp"
#include "http/resolve.hpp"

using namespace rocewatch;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool send_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

int listen_loopback(uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        throw std::runtime_error("listen");
    port = ntohs(a.sin_port);
    return fd;
}

// Until `stopping`: accepts each connection on `listener`, gives it a 2 s read timeout, hands
// it to `serve` and closes it after.
void accept_each(int listener, const std::atomic<bool>& stopping, const std::function<void(int)>& serve) {
    while (!stopping) {
        pollfd p{.fd = listener, .events = POLLIN, .revents = 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        timeval tv{.tv_sec = 2, .tv_usec = 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        serve(fd);
        ::close(fd);
    }
}

// A server on 127.0.0.1 that, per connection, reads the request (head and Content-Length body)
// and hands the socket to the test's script; the connection closes when the script returns.
class ScriptedServer {
public:
    using Script = std::function<void(int fd, const std::atomic<bool>& stopping)>;
    explicit ScriptedServer(Script script) : script_(std::move(script)) {
        listener_ = listen_loopback(port_);
        thread_ = std::thread([this] { serve(); });
    }
    ~ScriptedServer() {
        stopping_ = true;
        thread_.join();
        ::close(listener_);
    }
    ScriptedServer(const ScriptedServer&) = delete;
    ScriptedServer& operator=(const ScriptedServer&) = delete;
    uint16_t port() const { return port_; }
    std::string request() {
        std::lock_guard lock(mu_);
        return request_;
    }

private:
    void serve() {
        accept_each(listener_, stopping_, [this](int fd) {
            std::string req;
            char buf[4096];
            size_t want = std::string::npos;
            while (want == std::string::npos || req.size() < want) {
                const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
                if (n <= 0) break;
                req.append(buf, static_cast<size_t>(n));
                if (const size_t end = req.find("\r\n\r\n"); want == std::string::npos && end != std::string::npos) {
                    const size_t cl = req.find("Content-Length: ");
                    want = end + 4 + (cl < end ? std::stoul(req.substr(cl + 16)) : 0);
                }
            }
            {
                std::lock_guard lock(mu_);
                request_ = req;
            }
            script_(fd, stopping_);
        });
    }

    Script script_;
    int listener_ = -1;
    uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::mutex mu_;
    std::string request_;
    std::thread thread_;
};

// Sends the answer, then keeps the connection open for a while: a client that waits for the
// close to end a framed body shows in the time it takes.
ScriptedServer::Script answer_and_hold(std::string answer) {
    return [answer](int fd, const std::atomic<bool>& stopping) {
        send_all(fd, answer);
        for (int i = 0; i < 30 && !stopping; ++i) {
            char c;
            if (::recv(fd, &c, 1, MSG_DONTWAIT) == 0) return;  // the client is done
            std::this_thread::sleep_for(100ms);
        }
    };
}

ScriptedServer::Script answer_and_close(std::string answer) {
    return [answer](int fd, const std::atomic<bool>&) { send_all(fd, answer); };
}

http::Request request_to(uint16_t port, std::chrono::milliseconds within = 5s) {
    http::Request rq;
    rq.address = "127.0.0.1";
    rq.port = port;
    rq.host = "127.0.0.1";
    rq.deadline = Clock::now() + within;
    return rq;
}

TEST(HttpClient, AContentLengthBodyEndsTheAnswerWithoutWaitingForTheClose) {
    ScriptedServer server(answer_and_hold("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Thing:  a b \r\n\r\nhello"));
    auto rq = request_to(server.port());
    rq.method = "POST";
    rq.target = "/api/v2/alerts";
    rq.headers = {{"Authorization", "Bearer t"}};
    rq.body = "ping";
    const auto t0 = Clock::now();
    const auto res = http::fetch(rq);
    EXPECT_LT(seconds_since(t0), 1.0) << "waited for the server's close";
    ASSERT_TRUE(res.ok()) << http::to_string(res.error) << ": " << res.detail;
    EXPECT_EQ(res.status, 200);
    EXPECT_EQ(res.body, "hello");
    EXPECT_EQ(res.header("x-THING"), "a b");
    EXPECT_EQ(res.header("X-Missing"), "");
    const auto req = server.request();
    EXPECT_EQ(req.rfind("POST /api/v2/alerts HTTP/1.1\r\n", 0), 0u) << req;
    EXPECT_NE(req.find("\r\nHost: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"), std::string::npos) << req;
    EXPECT_NE(req.find("\r\nConnection: close\r\n"), std::string::npos) << req;
    EXPECT_NE(req.find("\r\nContent-Length: 4\r\n"), std::string::npos) << req;
    EXPECT_NE(req.find("\r\nAuthorization: Bearer t\r\n"), std::string::npos) << req;
    EXPECT_EQ(req.find("Accept-Encoding"), std::string::npos) << req;
    EXPECT_EQ(req.substr(req.size() - 8), "\r\n\r\nping") << req;
}

TEST(HttpClient, AChunkedBodyWithExtensionsAndTrailersIsDecoded) {
    ScriptedServer server([](int fd, const std::atomic<bool>& stopping) {
        // In pieces that cut lines in two: the parser must wait for the rest of each.
        for (const char* piece : {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=va", "lue\r\nhel",
                                  "lo\r\n6\r\n world\r", "\n0\r\nX-Trailer: t\r\n", "\r\n"}) {
            send_all(fd, piece);
            std::this_thread::sleep_for(20ms);
        }
        answer_and_hold("")(fd, stopping);
    });
    const auto t0 = Clock::now();
    const auto res = http::fetch(request_to(server.port()));
    EXPECT_LT(seconds_since(t0), 1.0) << "waited for the server's close";
    ASSERT_TRUE(res.ok()) << res.detail;
    EXPECT_EQ(res.body, "hello world");
    EXPECT_EQ(res.header("X-Trailer"), "") << "trailers are not headers";
}

TEST(HttpClient, ABodyWithoutFramingRunsUntilTheClose) {
    ScriptedServer server(answer_and_close("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it\r\nand more"));
    const auto res = http::fetch(request_to(server.port()));
    ASSERT_TRUE(res.ok()) << res.detail;
    EXPECT_EQ(res.body, "all of it\r\nand more");
}

TEST(HttpClient, InterimAnswersAreSkipped) {
    ScriptedServer server(answer_and_hold("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
                                          "HTTP/1.1 422 Unprocessable Content\r\nContent-Length: 2\r\n\r\nno"));
    const auto res = http::fetch(request_to(server.port()));
    ASSERT_TRUE(res.ok()) << res.detail;
    EXPECT_EQ(res.status, 422);
    EXPECT_EQ(res.body, "no");
    EXPECT_EQ(res.header("Link"), "") << "the interim answer's headers are not the answer's";
}

// Every read returns well within any per-read timeout: only the request's deadline ends it.
TEST(HttpClient, ATricklingServerIsCutOffAtTheDeadline) {
    ScriptedServer server([](int fd, const std::atomic<bool>& stopping) {
        send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
        while (!stopping && send_all(fd, " ")) std::this_thread::sleep_for(200ms);
    });
    const auto t0 = Clock::now();
    const auto res = http::fetch(request_to(server.port(), 700ms));
    const double took = seconds_since(t0);
    EXPECT_EQ(res.error, http::Error::timeout) << res.detail;
    EXPECT_GE(took, 0.69);
    EXPECT_LT(took, 0.7 + 0.15) << "the answer outlived the deadline";
}

TEST(HttpClient, TheCancelFlagEndsARequestAtOnce) {
    ScriptedServer server([](int, const std::atomic<bool>& stopping) {  // never answers
        while (!stopping) std::this_thread::sleep_for(20ms);
    });
    std::atomic<bool> cancel{false};
    auto rq = request_to(server.port(), 30s);
    rq.cancel = &cancel;
    std::thread stopper([&] {
        std::this_thread::sleep_for(300ms);
        cancel = true;
    });
    const auto t0 = Clock::now();
    const auto res = http::fetch(rq);
    const double took = seconds_since(t0);
    stopper.join();
    EXPECT_EQ(res.error, http::Error::cancelled) << res.detail;
    EXPECT_GE(took, 0.3);
    EXPECT_LT(took, 0.3 + 0.2) << "the request outlived the cancel flag";
}

TEST(HttpClient, AClosedPortIsRefusedAtOnce) {
    uint16_t port = 0;
    ::close(listen_loopback(port));
    const auto t0 = Clock::now();
    const auto res = http::fetch(request_to(port, 5s));
    EXPECT_EQ(res.error, http::Error::refused) << res.detail;
    EXPECT_NE(res.detail.find("Connection refused"), std::string::npos) << res.detail;
    EXPECT_LT(seconds_since(t0), 0.5);
}

TEST(HttpClient, ABodyOverTheCapIsTooLargeAndNotReadWhole) {
    ScriptedServer framed(answer_and_hold("HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + std::string(2000, 'x')));
    auto rq = request_to(framed.port());
    rq.max_body = 1000;
    auto res = http::fetch(rq);
    EXPECT_EQ(res.error, http::Error::too_large) << res.detail;
    EXPECT_LE(res.body.size(), 1000u);

    ScriptedServer unframed(answer_and_close("HTTP/1.0 200 OK\r\n\r\n" + std::string(2000, 'x')));
    rq = request_to(unframed.port());
    rq.max_body = 1000;
    res = http::fetch(rq);
    EXPECT_EQ(res.error, http::Error::too_large) << res.detail;
    EXPECT_LE(res.body.size(), 1000u);

    // Exactly the cap is not over it.
    ScriptedServer at_cap(answer_and_close("HTTP/1.0 200 OK\r\n\r\n" + std::string(1000, 'x')));
    rq = request_to(at_cap.port());
    rq.max_body = 1000;
    res = http::fetch(rq);
    EXPECT_TRUE(res.ok()) << res.detail;
    EXPECT_EQ(res.body.size(), 1000u);
}

TEST(HttpClient, WhatIsNotHttpIsAProtocolError) {
    for (const std::string answer :
         {"HTTP/1.1 2x0 OK\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n",
          "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello",
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
        ScriptedServer server(answer_and_close(answer));
        const auto res = http::fetch(request_to(server.port()));
        EXPECT_EQ(res.error, http::Error::protocol) << answer << " -> " << res.detail;
    }
    // A head without end: cut at 64 KiB, not read into memory for ever.
    ScriptedServer endless([](int fd, const std::atomic<bool>& stopping) {
        send_all(fd, "HTTP/1.1 200 OK\r\n");
        for (int i = 0; i < 2000 && !stopping && send_all(fd, "X-Pad: " + std::string(100, 'p') + "\r\n"); ++i) {
        }
    });
    const auto res = http::fetch(request_to(endless.port()));
    EXPECT_EQ(res.error, http::Error::protocol) << res.detail;
}

TEST(HttpClient, ACloseBeforeTheWholeAnswerIsClosed) {
    ScriptedServer mid_body(answer_and_close("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"));
    auto res = http::fetch(request_to(mid_body.port()));
    EXPECT_EQ(res.error, http::Error::closed) << res.detail;
    ScriptedServer mid_chunks(answer_and_close("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"));
    res = http::fetch(request_to(mid_chunks.port()));
    EXPECT_EQ(res.error, http::Error::closed) << res.detail;
    ScriptedServer mute(answer_and_close(""));
    res = http::fetch(request_to(mute.port()));
    EXPECT_EQ(res.error, http::Error::closed) << res.detail;
}

TEST(HttpResolve, AnAddressIsItselfAndANameThatCannotResolveSaysWhy) {
    std::string why;
    EXPECT_EQ(http::resolve_host("[::1]", Clock::now() + 1s, why), "::1");
    EXPECT_EQ(http::resolve_host("127.0.0.1", Clock::now() + 1s, why), "127.0.0.1");
    EXPECT_FALSE(http::resolve_host("no-such-host.invalid", Clock::now() + 5s, why));
    EXPECT_NE(why.find("no-such-host.invalid"), std::string::npos) << why;
}

// ---- TLS

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

// A P-256 certificate for `cn` with `san` ("DNS:localhost,IP:127.0.0.1"), signed by the issuer
// (itself when there is none); a CA's when `ca`.
Cert make_cert(EVP_PKEY* key, const char* cn, const char* san, X509* issuer, EVP_PKEY* issuer_key, bool ca) {
    Cert crt(X509_new(), X509_free);
    X509_set_version(crt.get(), 2);
    static std::atomic<long> serial{1};
    ASN1_INTEGER_set(X509_get_serialNumber(crt.get()), serial++);
    X509_gmtime_adj(X509_getm_notBefore(crt.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(crt.get()), 3600);
    X509_set_pubkey(crt.get(), key);
    X509_NAME* name = X509_get_subject_name(crt.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
    X509_set_issuer_name(crt.get(), issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : crt.get(), crt.get(), nullptr, nullptr, 0);
    const auto add = [&](int nid, const char* value) {
        X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
        if (!ext) throw std::runtime_error("extension");
        X509_add_ext(crt.get(), ext, -1);
        X509_EXTENSION_free(ext);
    };
    add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
    if (ca) add(NID_key_usage, "critical,keyCertSign,cRLSign");
    add(NID_subject_key_identifier, "hash");
    if (san) add(NID_subject_alt_name, san);
    X509_sign(crt.get(), issuer_key ? issuer_key : key, EVP_sha256());
    return crt;
}

void write_pem(const fs::path& path, X509* crt, EVP_PKEY* key) {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error("write " + path.string());
    if (crt) PEM_write_X509(f, crt);
    if (key) PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
}

// Two CAs, a server certificate from the first for localhost and 127.0.0.1, and a client
// certificate from it; PEM files in a temporary directory.
class Pki {
public:
    Pki() : dir_(fs::temp_directory_path() / ("rw-http-" + std::to_string(::getpid()))) {
        fs::create_directories(dir_);
        Key ca_key(EVP_EC_gen("P-256"), EVP_PKEY_free), other_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
        Key server_key(EVP_EC_gen("P-256"), EVP_PKEY_free), client_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
        auto ca = make_cert(ca_key.get(), "test CA", nullptr, nullptr, nullptr, true);
        auto other = make_cert(other_key.get(), "other CA", nullptr, nullptr, nullptr, true);
        auto server = make_cert(server_key.get(), "localhost", "DNS:localhost,IP:127.0.0.1", ca.get(), ca_key.get(),
                                false);
        auto client = make_cert(client_key.get(), "node-a", "DNS:node-a", ca.get(), ca_key.get(), false);
        write_pem(ca_file(), ca.get(), nullptr);
        write_pem(other_ca_file(), other.get(), nullptr);
        write_pem(dir_ / "server.crt", server.get(), nullptr);
        write_pem(dir_ / "server.key", nullptr, server_key.get());
        write_pem(client_cert(), client.get(), nullptr);
        write_pem(client_key_file(), nullptr, client_key.get());
    }
    ~Pki() { fs::remove_all(dir_); }
    std::string ca_file() const { return dir_ / "ca.crt"; }
    std::string other_ca_file() const { return dir_ / "other.crt"; }
    std::string server_cert() const { return dir_ / "server.crt"; }
    std::string server_key() const { return dir_ / "server.key"; }
    std::string client_cert() const { return dir_ / "client.crt"; }
    std::string client_key_file() const { return dir_ / "client.key"; }

private:
    fs::path dir_;
};

// One TLS server on 127.0.0.1 (blocking OpenSSL on its own thread): reads a request head,
// answers 200 "secure", closes. With `require_client_cert`, only a certificate from the CA in.
class TlsServer {
public:
    TlsServer(const Pki& pki, bool require_client_cert = false) {
        ctx_ = SSL_CTX_new(TLS_server_method());
        if (SSL_CTX_use_certificate_file(ctx_, pki.server_cert().c_str(), SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx_, pki.server_key().c_str(), SSL_FILETYPE_PEM) != 1)
            throw std::runtime_error("server certificate");
        if (require_client_cert) {
            SSL_CTX_load_verify_locations(ctx_, pki.ca_file().c_str(), nullptr);
            SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
        }
        listener_ = listen_loopback(port_);
        thread_ = std::thread([this] { serve(); });
    }
    ~TlsServer() {
        stopping_ = true;
        thread_.join();
        ::close(listener_);
        SSL_CTX_free(ctx_);
    }
    TlsServer(const TlsServer&) = delete;
    TlsServer& operator=(const TlsServer&) = delete;
    uint16_t port() const { return port_; }
    std::string sni() {
        std::lock_guard lock(mu_);
        return sni_;
    }

private:
    void serve() {
        accept_each(listener_, stopping_, [this](int fd) {
            SSL* ssl = SSL_new(ctx_);
            SSL_set_fd(ssl, fd);
            if (SSL_accept(ssl) == 1) {
                {
                    std::lock_guard lock(mu_);
                    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
                    sni_ = name ? name : "";
                }
                std::string req;
                char buf[4096];
                int n = 0;
                while (req.find("\r\n\r\n") == std::string::npos && (n = SSL_read(ssl, buf, sizeof buf)) > 0)
                    req.append(buf, static_cast<size_t>(n));
                const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure";
                if (n > 0 || req.find("\r\n\r\n") != std::string::npos)
                    SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
                SSL_shutdown(ssl);
            }
            ERR_clear_error();
            SSL_free(ssl);
        });
    }

    SSL_CTX* ctx_ = nullptr;
    int listener_ = -1;
    uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::mutex mu_;
    std::string sni_;
    std::thread thread_;
};

http::Request tls_request(const TlsServer& server, const std::string& host, const std::string& ca) {
    auto rq = request_to(server.port());
    rq.host = host;
    rq.tls = {.enabled = true, .ca_file = ca, .cert_file = "", .key_file = ""};
    return rq;
}

TEST(HttpClientTls, ATrustedCertificateForTheNameOrTheAddressIsAccepted) {
    Pki pki;
    TlsServer server(pki);
    auto res = http::fetch(tls_request(server, "localhost", pki.ca_file()));
    ASSERT_TRUE(res.ok()) << http::to_string(res.error) << ": " << res.detail;
    EXPECT_EQ(res.status, 200);
    EXPECT_EQ(res.body, "secure");
    EXPECT_EQ(server.sni(), "localhost");
    res = http::fetch(tls_request(server, "127.0.0.1", pki.ca_file()));
    ASSERT_TRUE(res.ok()) << res.detail;
    EXPECT_EQ(res.body, "secure");
    EXPECT_EQ(server.sni(), "") << "no SNI for an address (RFC 6066 3)";
}

TEST(HttpClientTls, AnUntrustedCertificateIsATlsError) {
    Pki pki;
    TlsServer server(pki);
    const auto res = http::fetch(tls_request(server, "localhost", pki.other_ca_file()));
    EXPECT_EQ(res.error, http::Error::tls) << res.detail;
    EXPECT_NE(res.detail.find("certificate verify failed"), std::string::npos) << res.detail;
    EXPECT_TRUE(res.body.empty());
}

TEST(HttpClientTls, ACertificateForAnotherNameOrAddressIsATlsError) {
    Pki pki;
    TlsServer server(pki);
    auto res = http::fetch(tls_request(server, "node07.example", pki.ca_file()));
    EXPECT_EQ(res.error, http::Error::tls) << res.detail;
    EXPECT_NE(res.detail.find("hostname mismatch"), std::string::npos) << res.detail;
    res = http::fetch(tls_request(server, "127.0.0.2", pki.ca_file()));
    EXPECT_EQ(res.error, http::Error::tls) << res.detail;
    EXPECT_NE(res.detail.find("IP address mismatch"), std::string::npos) << res.detail;
}

TEST(HttpClientTls, AClientCertificateIsSentWhereTheServerRequiresOne) {
    Pki pki;
    TlsServer server(pki, true);
    auto rq = tls_request(server, "localhost", pki.ca_file());
    auto res = http::fetch(rq);
    EXPECT_EQ(res.error, http::Error::tls) << "no client certificate: " << res.detail;
    rq.tls.cert_file = pki.client_cert();
    rq.tls.key_file = pki.client_key_file();
    res = http::fetch(rq);
    ASSERT_TRUE(res.ok()) << res.detail;
    EXPECT_EQ(res.body, "secure");
    rq.tls.cert_file = pki.client_cert() + ".missing";
    res = http::fetch(rq);
    EXPECT_EQ(res.error, http::Error::tls) << res.detail;
    EXPECT_NE(res.detail.find("client certificate"), std::string::npos) << res.detail;
}

// A plain HTTP server where TLS was asked for: the handshake fails, in time.
TEST(HttpClientTls, APlainServerIsATlsError) {
    ScriptedServer server(answer_and_close("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"));
    auto rq = request_to(server.port());
    rq.tls.enabled = true;
    const auto res = http::fetch(rq);
    EXPECT_EQ(res.error, http::Error::tls) << res.detail;
}

}  // namespace
