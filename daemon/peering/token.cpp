#include "daemon/peering/token.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/read_file.hpp"

namespace rocewatch {
namespace {

// The token in `path`, or why not (the file is the operator's: name it and the problem).
TokenLookup read_token_file(const std::string& path, bool from_credential) {
    TokenLookup r;
    r.source = path;
    // A token is 64 hex digits and a newline: 4 KiB is plenty, and bounds a mistaken path.
    auto file = read_small_file(path, 4096);
    if (!file.ok) {
        const int err = file.err;
        r.why = "token file " + path + " " +
                (err              ? "cannot be read (" + std::string(std::strerror(err)) + ")"
                 : file.too_large ? std::string("is larger than 4096 bytes; not a token")
                                  : file.error);
        if (!from_credential && (err == EACCES || err == EPERM))
            r.why += "; under the systemd unit the daemon runs as a dynamic user: put the token in /etc/credstore/" +
                     std::string(kTokenCredential) + " (mode 0600) and leave token_file unset";
        return r;
    }
    std::string text = std::move(file.text);
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
    text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
    r.token = token_from_hex(text);
    if (!r.token) r.why = "token file " + path + " does not hold 64 hex digits";
    return r;
}

}  // namespace

TokenLookup find_probe_token(const std::string& token_file, const std::string& credentials_dir) {
    if (!token_file.empty()) return read_token_file(token_file, false);
    if (!credentials_dir.empty()) {
        const std::string cred = credentials_dir + "/" + kTokenCredential;
        std::error_code ec;
        // There but unreadable or garbled: say so, not "none".
        if (std::filesystem::exists(cred, ec)) return read_token_file(cred, true);
    }
    TokenLookup r;
    r.why = std::string("no [probes] token_file configured and no systemd credential ") + kTokenCredential +
            " (/etc/credstore/" + kTokenCredential + " under the shipped unit)";
    return r;
}

}  // namespace rocewatch
