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

// O_NONBLOCK open, so that a FIFO without a writer does not block in open(); a FIFO (or the
// pipe of `--config <(...)`) then gets fifo_wait for its first bytes or its end, and is read
// to the end once a writer has begun. More than max_bytes is an error (a mistaken path: a
// device, a log), as is a directory.
inline ReadFileResult read_small_file(const std::string& path, size_t max_bytes,
                                      std::chrono::milliseconds fifo_wait = std::chrono::seconds(10)) {
    ReadFileResult r;
    auto fail = [&](std::string why) {
        r.error = std::move(why);
        return r;
    };
    auto os_error = [&](int err) {
        r.err = err;
        return fail(std::string("cannot read: ") + std::strerror(err));
    };
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) return os_error(errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return os_error(errno);
    if (S_ISDIR(st.st_mode)) return os_error(EISDIR);
    if (S_ISFIFO(st.st_mode)) {
        pollfd p{.fd = fd.get(), .events = POLLIN, .revents = 0};
        int ready;
        while ((ready = ::poll(&p, 1, static_cast<int>(fifo_wait.count()))) < 0 && errno == EINTR) {
        }
        if (ready < 0) return os_error(errno);
        if (ready == 0)
            return fail("a FIFO nothing was written to within " + std::to_string(fifo_wait.count()) + " ms");
    }
    // Blocking from here: a writer that has begun finishes.
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return os_error(errno);
        if (n == 0) break;
        r.text.append(buf, static_cast<size_t>(n));
        if (r.text.size() > max_bytes) {
            r.text.clear();
            r.too_large = true;
            return fail("larger than " + std::to_string(max_bytes) + " bytes");
        }
    }
    r.ok = true;
    return r;
}

}  // namespace rocewatch
