// sd_notify(3) and journald's native protocol on AF_UNIX datagram sockets.
#include "daemon/logging/sd_protocol.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace rocewatch::logging {
namespace {

// The address of a socket named as $NOTIFY_SOCKET names one: a path, or "@name" in the
// abstract namespace (a leading NUL, the length exact). nullopt for a name that does not fit.
std::optional<std::pair<sockaddr_un, socklen_t>> unix_address(std::string_view name) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (name.empty() || name.size() >= sizeof a.sun_path || (name[0] != '/' && name[0] != '@')) return std::nullopt;
    std::memcpy(a.sun_path, name.data(), name.size());
    if (name[0] == '@') a.sun_path[0] = '\0';
    return std::pair{a, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())};
}

bool send_datagram(int fd, std::string_view name, const std::string& bytes) {
    const auto to = unix_address(name);
    if (!to) {
        errno = EINVAL;
        return false;
    }
    iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
    msghdr m{};
    m.msg_name = const_cast<sockaddr_un*>(&to->first);
    m.msg_namelen = to->second;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    ssize_t n;
    do n = ::sendmsg(fd, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(bytes.size());
}

// One socket for every journal entry, as sd-journal keeps one; its send buffer raised as
// journald's clients raise theirs, so a burst of lines is not refused while journald reads.
int journal_fd() {
    static const int fd = [] {
        const int s = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s >= 0) {
            int size = 8 << 20;
            if (::setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) != 0)
                ::setsockopt(s, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
        }
        return s;
    }();
    return fd;
}

}  // namespace

bool notify(std::string_view state) {
    const char* where = std::getenv("NOTIFY_SOCKET");
    if (!where || !*where) return false;
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const bool ok = send_datagram(fd, where, std::string(state));
    ::close(fd);
    return ok;
}

uint64_t watchdog_usec() {
    const char* usec = std::getenv("WATCHDOG_USEC");
    if (!usec || !*usec) return 0;
    if (const char* pid = std::getenv("WATCHDOG_PID"); pid && *pid) {
        char* end = nullptr;
        const long p = std::strtol(pid, &end, 10);
        if (*end != '\0' || p != static_cast<long>(::getpid())) return 0;
    }
    char* end = nullptr;
    const unsigned long long v = std::strtoull(usec, &end, 10);
    return *end == '\0' ? v : 0;
}

std::string journal_datagram(const std::vector<JournalField>& fields) {
    std::string out;
    for (const auto& [name, value] : fields) {
        out += name;
        if (value.find('\n') == std::string_view::npos) {
            out += '=';
        } else {
            out += '\n';
            uint64_t n = value.size();
            for (int i = 0; i < 8; ++i, n >>= 8) out += static_cast<char>(n & 0xff);
        }
        out += value;
        out += '\n';
    }
    return out;
}

bool journal_send(const std::string& socket_path, const std::vector<JournalField>& fields) {
    const int fd = journal_fd();
    return fd >= 0 && send_datagram(fd, socket_path, journal_datagram(fields));
}

}  // namespace rocewatch::logging
