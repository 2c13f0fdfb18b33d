// The UCX library as this process runs it: its version, and its memory hooks.
#include "probes/ucx_runtime.hpp"

#include <cstdlib>
#include <mutex>

#include <ucm/api/ucm.h>
#include <ucp/api/ucp.h>

namespace rocewatch {

std::string ucx_runtime_version() {
    const char* v = ucp_get_version_string();
    return v ? v : "";
}

std::string ucx_disable_memory_hooks() {
    static std::once_flag once;
    static std::string said;
    std::call_once(once, [] {
        for (const char* var : {"UCX_MEM_EVENTS", "UCX_MEM_MMAP_HOOK_MODE", "UCX_MEM_MALLOC_HOOKS"}) {
            if (std::getenv(var)) {
                said = std::string("UCX memory hooks left as configured (") + var + " is set)";
                return;
            }
        }
        // Only what is safe after load: the mmap hook mode must stay as libucs installed
        // it (switching a bistro-patched process to "none" makes ucm_mmap recurse into
        // its own patch until the stack overflows). New event handlers (registration
        // caches) are refused from now on, and no malloc hooks get installed.
        ucm_global_config_t o = ucm_global_opts;
        o.enable_events = 0;
        o.enable_malloc_hooks = 0;
        o.enable_malloc_reloc = 0;
        ucm_set_global_opts(&o);
        said = "UCX memory events turned off for new UCX contexts (mmap hook mode left as loaded)";
    });
    return said;
}

}  // namespace rocewatch
