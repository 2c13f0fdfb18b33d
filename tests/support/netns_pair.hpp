// Two private network namespaces for tests that need real sockets across a veth pair.
//
// A socket belongs to the namespace it was created in, and setns() switches only the
// calling thread. So the test process unshares twice, keeping an fd on each namespace: "A",
// where the calling thread stays, and "B". Nothing is named under /run/netns and nothing
// touches the host's namespace; both vanish with the process. Callers add their links with
// run_command(): `ip` children fork from the calling thread, so they run in A, and reach B
// through `nsenter --net=<b_path()>`.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace rocewatch::testing {

struct Namespaces {
    bool ok = false;    // the caller's links are up too
    std::string error;  // why not
    int fd_a = -1;
    int fd_b = -1;
    // B as a path `ip ... netns` and `nsenter --net=` accept.
    std::string b_path() const { return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_b); }
    std::string in_b() const { return "nsenter --net=" + b_path() + " "; }
};

// Runs a shell command; false with `err` naming it when it fails.
inline bool run_command(const std::string& cmd, std::string* err) {
    const int rc = std::system(cmd.c_str());
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0) return true;
    *err = "command failed: " + cmd;
    return false;
}

// Creates A and B and leaves the calling thread in A; `error` is empty on success (`ok`
// stays false for the caller to set once its links are up).
inline Namespaces make_namespace_pair() {
    Namespaces s;
    auto own = [] { return ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC); };
    struct stat host {
    }, a{};
    if (::stat("/proc/thread-self/ns/net", &host) != 0) {
        s.error = std::string("stat netns: ") + std::strerror(errno);
        return s;
    }
    if (::unshare(CLONE_NEWNET) != 0) {
        s.error = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
        return s;
    }
    s.fd_a = own();
    if (::unshare(CLONE_NEWNET) != 0) {
        s.error = std::string("second unshare(CLONE_NEWNET): ") + std::strerror(errno);
        return s;
    }
    s.fd_b = own();
    if (s.fd_a < 0 || s.fd_b < 0 || ::setns(s.fd_a, CLONE_NEWNET) != 0) {
        s.error = std::string("namespace fds / setns back to A: ") + std::strerror(errno);
        return s;
    }
    if (::stat("/proc/thread-self/ns/net", &a) != 0 || a.st_ino == host.st_ino)
        s.error = "still in the host's network namespace";
    return s;
}

// Waits until `dev_a` in A and `dev_b` in B both say state UP (veth carrier comes up
// asynchronously, up to a second late); sets ok, or error after 5 s.
inline void wait_veth_up(Namespaces& s, const std::string& dev_a, const std::string& dev_b) {
    const std::string both_up = "ip -o link show " + dev_a + " | grep -q 'state UP' && " + s.in_b() +
                                "ip -o link show " + dev_b + " | grep -q 'state UP'";
    for (int i = 0; i < 50; ++i) {
        if (std::system(both_up.c_str()) == 0) {
            s.ok = true;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    s.error = "the veth pair never came up";
}

}  // namespace rocewatch::testing
