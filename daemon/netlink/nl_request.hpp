// What dcbnl (rtnetlink) and ethtool (genetlink) requests share: walking attributes, building
// a request, and one request/answer exchange with the kernel on a socket of its own.
#pragma once

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace rocewatch::nl {

// The attributes in `payload` (len bytes), each handed to fn(type, data, len); stops at the
// first one that does not fit.
template <class Fn>
void for_each_attr(const uint8_t* payload, size_t len, Fn&& fn) {
    size_t off = 0;
    while (off + sizeof(nlattr) <= len) {
        nlattr a;
        std::memcpy(&a, payload + off, sizeof a);
        if (a.nla_len < sizeof(nlattr) || off + a.nla_len > len) return;
        fn(static_cast<int>(a.nla_type & NLA_TYPE_MASK), payload + off + NLA_HDRLEN, a.nla_len - NLA_HDRLEN);
        off += NLA_ALIGN(a.nla_len);
    }
}

// An attribute's value as an unsigned integer of `sizeof(T)` bytes; 0 when shorter.
template <class T>
T attr_uint(const uint8_t* data, size_t len) {
    T v{};
    if (len >= sizeof v) std::memcpy(&v, data, sizeof v);
    return v;
}

// Builds one request: a netlink header, a fixed family header, then attributes (nests by
// begin_nest/end_nest). The lengths are filled in by finish().
class Request {
public:
    Request(uint16_t type, uint16_t flags, uint32_t seq, const void* family_header, size_t family_header_len);
    void put(uint16_t type, const void* data, size_t len);
    void put_u8(uint16_t type, uint8_t v) { put(type, &v, sizeof v); }
    void put_u32(uint16_t type, uint32_t v) { put(type, &v, sizeof v); }
    void put_string(uint16_t type, const std::string& s);  // NUL-terminated
    size_t begin_nest(uint16_t type);
    void end_nest(size_t at);
    [[nodiscard]] std::vector<uint8_t> finish();

private:
    std::vector<uint8_t> buf_;
};

// Sends `request` on a new NETLINK socket of `protocol` (this network namespace) and hands
// each answer with the request's sequence number to on_reply, until it returns true (done) or
// the kernel says an error or `timeout_ms` passes. 0, or the errno: the kernel's answer to the
// request (EOPNOTSUPP, ENODEV, ...), ETIMEDOUT, or EPROTO where on_reply returned false for
// every answer. Never throws.
int transact(int protocol, const std::vector<uint8_t>& request, int timeout_ms,
             const std::function<bool(const nlmsghdr*)>& on_reply);

// One socket for several exchanges in a row (the four ethtool queries of a netdev): the same
// answers as transact(), one socket, one receive buffer. Answers to an earlier request that
// timed out are told apart by their sequence numbers and skipped.
class Socket {
public:
    Socket(int protocol, int timeout_ms);
    ~Socket();
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int transact(const std::vector<uint8_t>& request, const std::function<bool(const nlmsghdr*)>& on_reply);
    // Whether socket() succeeded (else every transact answers its errno).
    [[nodiscard]] bool open() const { return fd_ >= 0; }

private:
    int fd_ = -1;
    int error_ = 0;  // socket() failed: every transact answers this
    std::vector<uint8_t> buf_;
};

// A sequence number for a new request, unique in the process.
uint32_t next_seq();

}  // namespace rocewatch::nl
