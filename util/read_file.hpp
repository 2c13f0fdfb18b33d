// Reads a small file an operator names (config, token, credential): bounded, and never
// waiting forever on a FIFO nobody writes to.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "util/fd.hpp"

namespace rocewatch {

struct ReadFileResult {
    bool ok = false;
    bool too_large = false;  // !ok because it holds more than max_bytes
    int err = 0;             // !ok because of an OS error: its errno
    std::string text;        // ok: the whole file
    std::string error;       // !ok: "cannot read: <strerror>", "larger than ...", "a FIFO nothing was written to ..."
};

// O_NONBLOCK open, so that a FIFO without a writer does not block in open(). A regular file is
// then read as usual. Anything else (a FIFO, the pipe of `--config <(...)`, a character device)
// stays non-blocking and gets `limit` in all to come to its end: a writer that never writes,
// or writes half and stalls, is an error, not a caller waiting forever (the web config is
// read on the request path). More than max_bytes is an error (a mistaken path: a device, a
// log), as is a directory.
inline ReadFileResult read_small_file(const std::string& path, size_t max_bytes,
                                      std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    ReadFileResult r;
    auto fail = [&](std::string why) {
        r.text.clear();
        r.error = std::move(why);
        return r;
    };
    auto os_error = [&](int err) {
        r.err = err;
        return fail(std::string("cannot read: ") + std::strerror(err));
    };
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) return os_error(errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return os_error(errno);
    if (S_ISDIR(st.st_mode)) return os_error(EISDIR);
    const bool regular = S_ISREG(st.st_mode);
    if (regular) ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    // A FIFO that never had a writer reads as its end (0) at once: wait for a writer's first
    // bytes (or its close) first. poll() does not report the hang-up of a FIFO nobody opened.
    bool wait = S_ISFIFO(st.st_mode);
    char buf[8192];
    for (;;) {
        if (wait) {
            wait = false;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                    std::chrono::steady_clock::now());
            pollfd p{.fd = fd.get(), .events = POLLIN, .revents = 0};
            int ready = 0;
            if (left.count() > 0) {
                while ((ready = ::poll(&p, 1, static_cast<int>(left.count()))) < 0 && errno == EINTR) {
                }
                if (ready < 0) return os_error(errno);
            }
            if (ready == 0) {
                if (r.text.empty() && S_ISFIFO(st.st_mode))
                    return fail("a FIFO nothing was written to within " + std::to_string(limit.count()) + " ms");
                return fail("not a file, and it did not come to its end within " + std::to_string(limit.count()) +
                            " ms");
            }
        }
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN && !regular) {
            wait = true;
            continue;
        }
        if (n < 0) return os_error(errno);
        if (n == 0) break;
        r.text.append(buf, static_cast<size_t>(n));
        if (r.text.size() > max_bytes) {
            r.too_large = true;
            return fail("larger than " + std::to_string(max_bytes) + " bytes");
        }
    }
    r.ok = true;
    return r;
}

}  // namespace rocewatch
