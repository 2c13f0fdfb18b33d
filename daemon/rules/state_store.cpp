// Keeps the alert state on disk across restarts, written atomically.
#include "daemon/rules/state_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <system_error>
#include <utility>

#include "util/fd.hpp"
#include "util/read_file.hpp"

namespace rocewatch {
namespace {

void set_error(std::string* error, std::string msg) {
    if (error) *error = std::move(msg);
}

std::string errno_text(const std::string& what, const std::filesystem::path& p, int err) {
    return what + " " + p.string() + ": " + std::strerror(err);
}

// 20261123T174500Z: sorts by time, no characters a shell or a URL would trip on.
std::string utc_stamp() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

}  // namespace

StateStore::StateStore(std::filesystem::path dir, std::uintmax_t max_bytes)
    : dir_(std::move(dir)), file_(dir_ / "alerts.json"), max_bytes_(max_bytes) {}

bool StateStore::save(const nlohmann::json& state, std::string* error) {
    if (aside_pending_ && !set_aside(error)) return false;
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
        set_error(error, "cannot create " + dir_.string() + ": " + ec.message());
        return false;
    }
    const std::filesystem::path tmp = dir_ / "alerts.json.tmp";
    // Alert objects carry device and netdev names, which are bytes: a strict dump would throw.
    const std::string text = state.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";

    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
        set_error(error, errno_text("cannot open", tmp, errno));
        return false;
    }
    // Past this point a failure leaves a partial tmp file: on a full disk it holds the space
    // the next attempt needs.
    struct RemoveTmp {
        const std::filesystem::path& p;
        bool armed = true;
        ~RemoveTmp() {
            if (armed) ::unlink(p.c_str());
        }
    } remove_tmp{tmp};
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            set_error(error, errno_text("cannot write", tmp, errno));
            return false;
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
        set_error(error, errno_text("cannot fsync", tmp, errno));
        return false;
    }
    if (fd.close_now() != 0) {
        set_error(error, errno_text("cannot close", tmp, errno));
        return false;
    }
    if (::rename(tmp.c_str(), file_.c_str()) != 0) {
        set_error(error, errno_text("cannot rename over", file_, errno));
        return false;
    }
    remove_tmp.armed = false;
    // The rename is durable only once the directory entry is.
    Fd dirfd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dirfd.get() < 0 || ::fsync(dirfd.get()) != 0) {
        set_error(error, errno_text("cannot fsync directory", dir_, errno));
        return false;
    }
    return true;
}

bool StateStore::set_aside(std::string* error) {
    const std::string base = file_.string() + ".corrupt-" + utc_stamp();
    std::filesystem::path aside = base;
    std::error_code ec;
    for (int n = 1; std::filesystem::exists(aside, ec); ++n) aside = base + "-" + std::to_string(n);
    std::filesystem::rename(file_, aside, ec);
    if (ec) {
        aside_pending_ = true;
        set_error(error, "cannot set " + file_.string() + " aside: " + ec.message() +
                             "; it is kept and no state is saved until it can be");
        return false;
    }
    aside_pending_ = false;
    aside_ = std::move(aside);
    return true;
}

std::optional<nlohmann::json> StateStore::load(std::string* error, const Accept& accept) {
    if (error) error->clear();
    std::error_code ec;
    if (!std::filesystem::exists(file_, ec)) {
        if (ec) set_error(error, "cannot stat " + file_.string() + ": " + ec.message());
        return std::nullopt;
    }
    // A file we cannot read is set aside too: saving over it would lose what it holds.
    std::string why;
    nlohmann::json j;
    const std::uintmax_t size = std::filesystem::file_size(file_, ec);
    // Read bounded, and never waiting on a FIFO or reading a device to its (no) end: only the
    // daemon writes this file, as a regular one of at most max_bytes_.
    ReadFileResult read;
    if (!ec && size > max_bytes_) {
        why = "is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes_) +
              " bytes the daemon's history_limit can have written (not read)";
    } else if (read = read_small_file(file_.string(), max_bytes_, std::chrono::seconds(1)); !read.ok) {
        why = read.too_large ? "holds more than the " + std::to_string(max_bytes_) +
                                   " bytes the daemon's history_limit can have written (not a regular file?)"
                             : "cannot be read: " + (read.err ? std::string(std::strerror(read.err)) : read.error);
    } else {
        j = nlohmann::json::parse(read.text, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded()) {
            why = read.text.empty() ? "is empty" : "is not valid JSON (truncated or garbage)";
        } else if (accept) {
            try {
                accept(j);
            } catch (const std::exception& e) {
                why = std::string("is not a usable state: ") + e.what();
            }
        }
    }
    if (why.empty()) return j;

    std::string moved;
    if (!set_aside(&moved)) {
        set_error(error, file_.string() + " " + why + "; " + moved);
    } else {
        set_error(error,
                  file_.string() + " " + why + "; set aside as " + aside_.string() + ", starting with no alert state");
    }
    return std::nullopt;
}

}  // namespace rocewatch
