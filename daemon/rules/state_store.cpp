// Keeps the alert state on disk across restarts, written atomically.
#include "rules/state_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "util/fd.hpp"

namespace rocewatch {
namespace {

void set_error(std::string* error, std::string msg) {
    if (error) *error = std::move(msg);
}

std::string errno_text(const std::string& what, const std::filesystem::path& p, int err) {
    return what + " " + p.string() + ": " + std::strerror(err);
}

}  // namespace

StateStore::StateStore(std::filesystem::path dir) : dir_(std::move(dir)), file_(dir_ / "alerts.json") {}

bool StateStore::save(const nlohmann::json& state, std::string* error) const {
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
    // The rename is durable only once the directory entry is.
    Fd dirfd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dirfd.get() < 0 || ::fsync(dirfd.get()) != 0) {
        set_error(error, errno_text("cannot fsync directory", dir_, errno));
        return false;
    }
    return true;
}

std::optional<nlohmann::json> StateStore::load(std::string* error) const {
    if (error) error->clear();
    std::error_code ec;
    if (!std::filesystem::exists(file_, ec)) {
        if (ec) set_error(error, "cannot stat " + file_.string() + ": " + ec.message());
        return std::nullopt;
    }
    std::ifstream in(file_, std::ios::binary);
    if (!in) {
        set_error(error, errno_text("cannot open", file_, errno));
        return std::nullopt;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        set_error(error, "cannot read " + file_.string());
        return std::nullopt;
    }
    auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) return j;

    const std::filesystem::path aside = dir_ / "alerts.json.corrupt";
    std::filesystem::rename(file_, aside, ec);
    set_error(error, file_.string() + " is not valid JSON; " +
                         (ec ? "could not move it aside: " + ec.message() : "moved to " + aside.string()));
    return std::nullopt;
}

}  // namespace rocewatch
