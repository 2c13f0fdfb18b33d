// The least a server can do, for bench/scrape_server_time.py: answer every request on a
// kept-alive connection with the same 7,000-byte body from one epoll loop, so that what the
// client measures against it is loopback, waking both sides and the client itself.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: http_floor PORT\n");
        return 2;
    }
    static char resp[7200];
    const int head = std::snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Length: 7000\r\n\r\n");
    std::memset(resp + head, 'a', 7000);
    const int len = head + 7000;
    const int l = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[1])));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(l, 16) != 0) {
        std::perror("http_floor");
        return 1;
    }
    const int ep = epoll_create1(0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = l;
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
    char buf[8192];
    for (;;) {
        epoll_event e[8];
        const int n = epoll_wait(ep, e, 8, -1);
        for (int i = 0; i < n; ++i) {
            const int fd = e[i].data.fd;
            if (fd == l) {
                epoll_event ce{};
                ce.events = EPOLLIN;
                ce.data.fd = accept(l, nullptr, nullptr);
                epoll_ctl(ep, EPOLL_CTL_ADD, ce.data.fd, &ce);
            } else if (recv(fd, buf, sizeof buf, 0) <= 0) {
                close(fd);
            } else {
                send(fd, resp, static_cast<size_t>(len), MSG_NOSIGNAL);
            }
        }
    }
}
