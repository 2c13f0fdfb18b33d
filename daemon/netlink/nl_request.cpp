#include "daemon/netlink/nl_request.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace rocewatch::nl {

Request::Request(uint16_t type, uint16_t flags, uint32_t seq, const void* family_header, size_t family_header_len)
    : buf_(NLMSG_LENGTH(NLMSG_ALIGN(family_header_len)), 0) {
    auto* nlh = reinterpret_cast<nlmsghdr*>(buf_.data());
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = flags;
    nlh->nlmsg_seq = seq;
    std::memcpy(buf_.data() + NLMSG_HDRLEN, family_header, family_header_len);
}

void Request::put(uint16_t type, const void* data, size_t len) {
    const size_t at = buf_.size();
    buf_.resize(at + NLA_ALIGN(NLA_HDRLEN + len), 0);
    nlattr a{.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len), .nla_type = type};
    std::memcpy(buf_.data() + at, &a, sizeof a);
    if (len > 0) std::memcpy(buf_.data() + at + NLA_HDRLEN, data, len);
}

void Request::put_string(uint16_t type, const std::string& s) {
    std::vector<char> z(s.begin(), s.end());
    z.push_back('\0');
    put(type, z.data(), z.size());
}

size_t Request::begin_nest(uint16_t type) {
    const size_t at = buf_.size();
    put(static_cast<uint16_t>(type | NLA_F_NESTED), nullptr, 0);
    return at;
}

void Request::end_nest(size_t at) {
    const auto len = static_cast<uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof len);
}

std::vector<uint8_t> Request::finish() {
    const auto len = static_cast<uint32_t>(buf_.size());
    std::memcpy(buf_.data(), &len, sizeof len);
    return buf_;
}

uint32_t next_seq() {
    static std::atomic<uint32_t> seq{1};
    return seq.fetch_add(1);
}

Socket::Socket(int protocol, int timeout_ms) : fd_(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol)) {
    if (fd_ < 0) {
        error_ = errno;
        return;
    }
    timeval tv{.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

Socket::~Socket() {
    if (fd_ >= 0) ::close(fd_);
}

int Socket::transact(const std::vector<uint8_t>& request, const std::function<bool(const nlmsghdr*)>& on_reply) {
    if (fd_ < 0) return error_;
    if (request.size() < sizeof(nlmsghdr)) return EINVAL;
    nlmsghdr req_hdr;
    std::memcpy(&req_hdr, request.data(), sizeof req_hdr);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd_, request.data(), request.size(), 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) < 0)
        return errno;
    buf_.resize(32768);
    int result = ETIMEDOUT;
    for (int tries = 0; tries < 8; ++tries) {
        const ssize_t n = ::recv(fd_, buf_.data(), buf_.size(), 0);
        if (n < 0) {
            result = errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
            break;
        }
        bool done = false;
        int left = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf_.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_seq != req_hdr.nlmsg_seq) continue;
            done = true;
            if (h->nlmsg_type == NLMSG_ERROR) {
                nlmsgerr e{};
                if (h->nlmsg_len >= NLMSG_LENGTH(sizeof e)) std::memcpy(&e, NLMSG_DATA(h), sizeof e);
                result = e.error < 0 ? -e.error : (e.error == 0 ? 0 : EPROTO);
            } else {
                result = on_reply(h) ? 0 : EPROTO;
            }
            break;
        }
        if (done) break;
    }
    return result;
}

int transact(int protocol, const std::vector<uint8_t>& request, int timeout_ms,
             const std::function<bool(const nlmsghdr*)>& on_reply) {
    if (request.size() < sizeof(nlmsghdr)) return EINVAL;
    Socket s(protocol, timeout_ms);
    return s.transact(request, on_reply);
}

}  // namespace rocewatch::nl
