// An HTTP server on loopback whose one route answers a byte every 100 ms, for good: every read
// a client makes returns within any read timeout, so only the request's own deadline ends it.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace rocewatch::testing {

class TricklingServer {
public:
    // method: "GET" or "POST".
    TricklingServer(const std::string& method, const std::string& path) {
        auto trickle = [this](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("application/json", [this](size_t, httplib::DataSink& sink) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                return !stopping_ && sink.write(" ", 1);
            });
        };
        if (method == "POST")
            server_.Post(path, trickle);
        else
            server_.Get(path, trickle);
        port_ = server_.bind_to_any_port("127.0.0.1");
        if (port_ > 0) thread_ = std::thread([this] { server_.listen_after_bind(); });
    }
    ~TricklingServer() {
        stopping_ = true;
        server_.stop();
        if (thread_.joinable()) thread_.join();
    }
    TricklingServer(const TricklingServer&) = delete;
    TricklingServer& operator=(const TricklingServer&) = delete;
    // 0 or less: the server could not bind.
    int port() const { return port_; }

private:
    httplib::Server server_;
    std::atomic<bool> stopping_{false};
    int port_ = 0;
    std::thread thread_;
};

}  // namespace rocewatch::testing
