// ApiServer with a web config: TLS through the non-blocking front end (keep-alive, pipelining,
// concurrent clients, stalled handshakes) and basic auth, over real sockets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
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
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "api/server.hpp"
#include "api/tls_context.hpp"
#include "api/web_config.hpp"
#include "sample_snapshot.hpp"
#include "self_signed.hpp"

using namespace rocewatch;
using namespace rocewatch::api;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// bcrypt (cost 4) of "s3cret".
constexpr const char* kHash = "$2b$04$FvUzh/mHLbJuY4vb58ECGenmgs3xYULnT2exrmUT/BnpmPmXZUxwa";
constexpr const char* kAuth = "Basic YWxpY2U6czNjcmV0";  // alice:s3cret

class OneSnapshot final : public SnapshotSource {
public:
    std::shared_ptr<const Snapshot> latest() const override { return snap_; }
    std::shared_ptr<const Snapshot> snap_ = std::make_shared<Snapshot>(api_sample::sample_snapshot());
};

class TlsServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("rw-tls-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
        make_certificate(dir_);
        std::ofstream(dir_ / "web.yml") << "tls_server_config:\n  cert_file: node.crt\n  key_file: node.key\n"
                                        << "basic_auth_users:\n  alice: '" << kHash << "'\n";
        ApiOptions o;
        o.host = "127.0.0.1";
        o.port = 0;
        o.threads = 2;
        o.timeout = 500ms;
        o.web_config_file = (dir_ / "web.yml").string();
        server_ = ApiServer::create(
            o, source_, [] { return nlohmann::json::object(); }, nullptr);
        server_->start();
    }
    void TearDown() override {
        server_->stop();
        fs::remove_all(dir_);
    }

    std::unique_ptr<httplib::SSLClient> client() const {
        auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
        c->set_ca_cert_path((dir_ / "node.crt").string());
        c->enable_server_certificate_verification(true);
        c->set_keep_alive(true);
        c->set_read_timeout(5, 0);
        return c;
    }

    int connect_raw() const {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(server_->port()));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect");
        return fd;
    }

    fs::path dir_;
    OneSnapshot source_;
    std::unique_ptr<ApiServer> server_;
};

TEST_F(TlsServerTest, ServesHttpsWithBasicAuthOverKeptAliveConnections) {
    EXPECT_TRUE(server_->tls());
    auto c = client();
    int connects = 0;
    c->set_socket_options([&](int) { ++connects; });
    for (int i = 0; i < 20; ++i) {
        auto r = c->Get("/healthz", {{"Authorization", kAuth}});
        ASSERT_TRUE(r) << httplib::to_string(r.error());
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(connects, 1) << "twenty requests, one connection and one handshake";
    auto r = c->Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Basic realm=\"rocewatch\", charset=\"UTF-8\"");
    EXPECT_TRUE(server_->web_user(kAuth));
    EXPECT_FALSE(server_->web_user("Basic YWxpY2U6d3Jvbmc="));  // alice:wrong
}

TEST_F(TlsServerTest, ConcurrentClientsEachGetTheirAnswers) {
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            auto c = client();
            for (int i = 0; i < 10; ++i) {
                auto r = c->Get("/api/v1/status", {{"Authorization", kAuth}});
                if (r && r->status == 200 && r->body.find("\"api_version\"") != std::string::npos) ++ok;
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok.load(), 40);
}

// Two requests in one TLS record: the second waits decrypted inside OpenSSL, where epoll
// cannot see it; the front end must still answer it.
TEST_F(TlsServerTest, PipelinedRequestsInOneRecordAreBothAnswered) {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    const int fd = connect_raw();
    SSL* ssl = SSL_new(ctx.get());
    SSL_set_fd(ssl, fd);
    ASSERT_EQ(SSL_connect(ssl), 1);
    // A body first, longer than a TLS record: the front end reads exactly its bytes, so the
    // next request stays behind, decrypted, in OpenSSL's buffer.
    const std::string post = "POST /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kAuth) +
                             "\r\nContent-Length: 20000\r\n\r\n" + std::string(20000, 'x');
    const std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kAuth) + "\r\n\r\n";
    const std::string two = post + get;
    ASSERT_EQ(SSL_write(ssl, two.data(), static_cast<int>(two.size())), static_cast<int>(two.size()));
    std::string got;
    char buf[4096];
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    size_t answers = 0;
    while (answers < 2 && std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (SSL_pending(ssl) == 0 && ::poll(&p, 1, 200) <= 0) continue;
        const int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
        answers = 0;
        for (size_t at = got.find("HTTP/1.1 "); at != std::string::npos; at = got.find("HTTP/1.1 ", at + 1)) ++answers;
    }
    EXPECT_EQ(answers, 2u) << got;
    EXPECT_NE(got.find("HTTP/1.1 405"), std::string::npos) << got;
    EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
    SSL_free(ssl);
    ::close(fd);
}

// A request refused at its head, from a client that resets the connection as it sends it: the
// refusal cannot be written, so the connection is closed while its read is being handled, and
// nothing may touch it after (the front end read the closed connection's TLS session, freed:
// a crash within a few dozen such clients, no credentials needed).
TEST_F(TlsServerTest, ClientsThatResetUnderARefusedRequestLeaveTheServerUp) {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    const std::string bad = "GET / HTTP/1.1\r\nbad header line\r\n" + std::string(16000, 'X');  // one record
    for (int i = 0; i < 200; ++i) {
        const int fd = connect_raw();
        SSL* ssl = SSL_new(ctx.get());
        SSL_set_fd(ssl, fd);
        if (SSL_connect(ssl) == 1) (void)SSL_write(ssl, bad.data(), static_cast<int>(bad.size()));
        const linger reset{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        SSL_free(ssl);
        ::close(fd);
        std::this_thread::sleep_for(1ms);
    }
    auto c = client();
    auto r = c->Get("/healthz", {{"Authorization", kAuth}});
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
}

TEST_F(TlsServerTest, StalledHandshakeIsCutOffAndCounted) {
    const int fd = connect_raw();  // says nothing: no ClientHello
    pollfd p{fd, POLLIN, 0};
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(::poll(&p, 1, 3000), 1);
    char c;
    EXPECT_LE(::recv(fd, &c, 1, 0), 0) << "closed, nothing sent";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    ::close(fd);
    auto cl = client();
    auto r = cl->Get("/metrics", {{"Authorization", kAuth}});
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("rocewatch_http_rejected_total{reason=\"tls_handshake\"} 1"), std::string::npos);
}

TEST_F(TlsServerTest, PlainHttpIsToldItReachedAnHttpsPort) {
    const int fd = connect_raw();
    const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    std::string got;
    char buf[512];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(fd);
    EXPECT_EQ(got.rfind("HTTP/1.0 400 Bad Request\r\n", 0), 0u) << got;
    EXPECT_NE(got.find("Client sent an HTTP request to an HTTPS server."), std::string::npos);
}

TEST(TlsServerConfig, ABadWebConfigFailsCreate) {
    const auto dir = fs::temp_directory_path() / ("rw-tls-bad-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "web.yml") << "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n";
    ApiOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.web_config_file = (dir / "web.yml").string();
    OneSnapshot src;
    try {
        (void)ApiServer::create(
            o, src, [] { return nlohmann::json::object(); }, nullptr);
        ADD_FAILURE() << "a web config naming missing files must not start a server";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("tls_server_config.cert_file: cannot load"), std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
}

// Every file that does not load is named at once; the key is held to the certificate only
// where the certificate loaded.
TEST(TlsServerConfig, EveryFileThatDoesNotLoadIsNamedAtOnce) {
    const auto dir = fs::temp_directory_path() / ("rw-tls-all-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    make_certificate(dir);
    TlsServerConfig t;
    t.cert_file = (dir / "missing.crt").string();
    t.key_file = (dir / "node.key").string();
    t.client_ca_file = (dir / "missing-ca.crt").string();
    try {
        (void)make_server_tls_context(t, "web.yml");
        ADD_FAILURE() << "missing files must fail";
    } catch (const WebConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("web.yml: tls_server_config.cert_file: cannot load"), std::string::npos) << what;
        EXPECT_NE(what.find("\nweb.yml: tls_server_config.client_ca_file: cannot load"), std::string::npos) << what;
        EXPECT_EQ(what.find("key_file"), std::string::npos) << "a good key with no certificate is not 'not its key'";
    }
    fs::create_directories(dir / "other");
    make_certificate(dir / "other");
    t.cert_file = (dir / "node.crt").string();
    t.key_file = (dir / "other" / "node.key").string();
    t.client_ca_file.clear();
    try {
        (void)make_server_tls_context(t, "web.yml");
        ADD_FAILURE() << "a key that is not the certificate's must fail";
    } catch (const WebConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("tls_server_config.key_file: \"" + t.key_file + "\" is not the key of"),
                  std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
}

}  // namespace
