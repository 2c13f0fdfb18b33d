#include "daemon/peering/token.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace rocewatch {
namespace {

// The token in `path`, or why not (the file is the operator's: name it and the problem).
TokenLookup read_token_file(const std::string& path, bool from_credential) {
    TokenLookup r;
    r.source = path;
    std::ifstream in(path);
    if (!in) {
        const int err = errno;
        r.why = "token file " + path + " cannot be read (" + std::strerror(err) + ")";
        if (!from_credential && (err == EACCES || err == EPERM))
            r.why += "; under the systemd unit the daemon runs as a dynamic user: put the token in /etc/credstore/" +
                     std::string(kTokenCredential) + " (mode 0600) and leave token_file unset";
        return r;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
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
