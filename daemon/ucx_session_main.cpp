// rocewatch-ucx-session: the UCX session child rocewatchd starts for each UCX probe (see
// daemon/peering/ucx_session.hpp). It is the only executable that links UCX, so UCX's
// load-time constructors and memory hooks stay out of the daemon process.
#include <unistd.h>

#include <cstring>
#include <string>

#include <ucp/api/ucp.h>

#include "daemon/peering/ucx_session.hpp"

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
        unsigned major = 0, minor = 0, release = 0;
        ucp_get_version(&major, &minor, &release);
        const std::string line = "{\"ucx_version\":\"" + std::to_string(major) + "." + std::to_string(minor) + "." +
                                 std::to_string(release) + "\"}\n";
        return ::write(STDOUT_FILENO, line.data(), line.size()) == static_cast<ssize_t>(line.size()) ? 0 : 1;
    }
    if (argc == 2 && std::strcmp(argv[1], rocewatch::kUcxSessionFlag) == 0) return rocewatch::run_ucx_session_child();
    static const char kUsage[] = "usage: rocewatch-ucx-session --ucx-session | --version\n"
                                 "started by rocewatchd for each UCX probe; not meant to be run by hand\n";
    (void)!::write(STDERR_FILENO, kUsage, sizeof kUsage - 1);
    return 64;
}
