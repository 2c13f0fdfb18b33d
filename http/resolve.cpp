// A name lookup that gives up at a deadline: getaddrinfo on a thread of its own.
#include "http/resolve.hpp"
#include "util/thread_name.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace rocewatch::http {
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
    name_this_thread("resolve");
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

}  // namespace

bool is_ip_literal(const std::string& host) {
    unsigned char buf[sizeof(in6_addr)];
    return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::optional<std::string> resolve_host(const std::string& host, std::chrono::steady_clock::time_point deadline,
                                        std::string& why) {
    std::string bare = host.size() >= 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2)
                                                                                     : host;
    if (is_ip_literal(bare)) return bare;
    try {
        auto l = std::make_shared<Lookup>();
        std::thread(look_up, l, bare).detach();
        std::unique_lock lock(l->mu);
        if (!l->cv.wait_until(lock, deadline, [&] { return l->done; })) {
            why = "the name " + bare + " did not resolve before the deadline";
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

}  // namespace rocewatch::http
