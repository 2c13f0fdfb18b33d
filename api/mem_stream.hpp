// An httplib::Stream over one complete request in memory, capturing the response bytes.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include <httplib.h>

namespace rocewatch::api {

// httplib's Server::process_request parses and routes from a Stream. The front end has
// already read and gated the whole request, so the worker hands httplib this stream: reads
// never block and end with the request, writes land in memory and go back to the front
// end, which sends them non-blocking. A worker never waits on a client.
class MemStream final : public httplib::Stream {
public:
    MemStream(std::string request, std::string remote_ip, int remote_port, std::string local_ip, int local_port)
        : in_(std::move(request)),
          remote_ip_(std::move(remote_ip)),
          local_ip_(std::move(local_ip)),
          remote_port_(remote_port),
          local_port_(local_port) {}

    using httplib::Stream::write;

    bool is_readable() const override { return off_ < in_.size(); }
    bool is_writable() const override { return true; }

    ssize_t read(char* ptr, size_t size) override {
        const size_t n = std::min(size, in_.size() - off_);
        if (n == 0) return -1;  // httplib never needs more than the gate let through
        std::memcpy(ptr, in_.data() + off_, n);
        off_ += n;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* ptr, size_t size) override {
        out_.append(ptr, size);
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        ip = remote_ip_;
        port = remote_port_;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        ip = local_ip_;
        port = local_port_;
    }
    socket_t socket() const override { return INVALID_SOCKET; }

    std::string take_output() { return std::move(out_); }

private:
    std::string in_;
    size_t off_ = 0;
    std::string out_;
    std::string remote_ip_;
    std::string local_ip_;
    int remote_port_;
    int local_port_;
};

}  // namespace rocewatch::api
