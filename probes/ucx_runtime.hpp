// The UCX library as this process runs it: its version, and its memory hooks.
#pragma once

#include <string>

namespace rocewatch {

// The UCX library this process runs (ucp_get_version_string()), e.g. "1.13.1".
std::string ucx_runtime_version();

// UCM memory hooks (malloc/mmap interception, patched into libc by "bistro" binary
// instrumentation) conflict with systemd's MemoryDenyWriteExecute=yes: the patch needs a
// writable+executable page. UCX 1.13 reads UCX_MEM_* in libucs's load-time constructor and
// installs its mmap hooks right there, before main(), so the only cure is the environment
// the process starts with: UCX_MEM_MMAP_HOOK_MODE=none (or UCX_MEM_EVENTS=no). Setting them
// later changes nothing. What can still be done at run time: unless the user set any of
// UCX_MEM_EVENTS / UCX_MEM_MMAP_HOOK_MODE / UCX_MEM_MALLOC_HOOKS, turn UCM's events and
// malloc hooks off for everything installed afterwards (the registration caches of
// contexts created later fall back to direct registration, so nothing more is patched).
// The mmap hook mode is left alone: changing it after load recurses forever.
// Returns a line saying what it did. Idempotent; UcxEndpoint::open() calls it.
std::string ucx_disable_memory_hooks();

}  // namespace rocewatch
