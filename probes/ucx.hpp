// UCX probes: a ucp endpoint per probe session, and ucx_perftest ucp_put_bw / ucp_put_lat
// style probes over the transports and devices UCX selects (the path NIXL uses).
//
// Each endpoint owns its ucp context, one worker, a registered buffer and one ucp
// endpoint to the peer's worker, so a probe never shares UCX state with another. Puts are
// one-sided: on transports without native RMA (tcp) UCX emulates them with active
// messages, which the passive side must progress; the serve functions do that, spinning
// while messages flow and sleeping on the worker's event fd when idle.
//
// Trust: UCX has no way to validate a worker address or packed rkey. A malformed one
// makes ucp_ep_create()/ucp_ep_rkey_unpack() abort the process (ucs_fatal_error) or touch
// memory out of bounds; parse_ucx_endpoint_info() bounds sizes, nothing more. Only
// connect to infos that came from an authenticated peer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>

#include "probes/deadline.hpp"
#include "probes/result.hpp"
#include "probes/ucx_info.hpp"

namespace rocewatch {

// ucs_status_t -> probes/errors.hpp reason ("" for UCS_OK and UCS_INPROGRESS). The only
// UCX status mapping; lives here to keep UCX out of the parts built without it.
const char* reason_from_ucs_status(ucs_status_t status);

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

struct UcxEndpointOptions {
    uint32_t buffer_size = 1u << 20;  // data bytes registered (at least the message size)
    std::string transports;           // UCX_TLS for this context ("": the environment / UCX's choice)
    std::string net_devices;          // UCX_NET_DEVICES ("": the environment / all)
    bool require_same_version = false;  // connect() refuses a peer with another UCX version
    double close_timeout_seconds = 1.0;  // bound on closing the endpoint in the destructor
};

// What a failed UCX step reports: a reason word and human detail.
struct UcxStatus {
    std::string reason;  // "" = ok
    std::string detail;
    [[nodiscard]] bool ok() const { return reason.empty(); }
};

class UcxEndpoint;
struct UcxOpen {
    std::unique_ptr<UcxEndpoint> endpoint;  // null on failure
    UcxStatus status;
};

// ucp context (RMA + WAKEUP), one worker, a registered buffer with its packed rkey, and
// after connect() one ucp endpoint (peer error handling) with the peer's rkey unpacked;
// all released in reverse order by the destructor, which force-closes the endpoint (the
// probes flush their own puts) within close_timeout_seconds (a dead peer never hangs it). Not thread-safe: one thread drives
// an endpoint at a time (it may be handed over to another thread between calls).
class UcxEndpoint {
 public:
    // Never throws: "device_not_found" when UCX finds no usable transport, else the
    // mapped reason with the UCX call named in the detail.
    [[nodiscard]] static UcxOpen open(const UcxEndpointOptions& opt);
    ~UcxEndpoint();
    UcxEndpoint(const UcxEndpoint&) = delete;
    UcxEndpoint& operator=(const UcxEndpoint&) = delete;

    // What the peer needs (send it over the control path).
    const UcxEndpointInfo& info() const { return info_; }
    const UcxEndpointOptions& options() const { return opt_; }

    // Creates the ucp endpoint to `remote`'s worker (peer error handling) and unpacks its
    // rkey. Does not wait for the peer: UCX wires the lanes up while both workers progress,
    // and in the daemon's control session the peer is not progressing yet when this runs.
    // "bad_target" for an empty address or rkey, "ucx_version_mismatch" for another major
    // version (or any other version with require_same_version), else the mapped UCX status.
    [[nodiscard]] UcxStatus connect(const UcxEndpointInfo& remote);
    // Flushes the endpoint, which completes the wire-up; needs the peer to progress (its
    // serve side, or its own wire_up). A peer that is gone fails here ("peer_unreachable",
    // "peer_closed", "connection_refused"), a silent one at the deadline ("timeout"). The
    // active probes call it first; the time it takes is not part of their figures.
    [[nodiscard]] UcxStatus wire_up(Deadline deadline);
    bool connected() const { return ep_ != nullptr && rkey_ != nullptr; }
    const UcxEndpointInfo& remote() const { return remote_; }

    // The transports and devices of the endpoint's lanes as UCX chose them, in lane order,
    // de-duplicated: "tcp/rwp0" or "rc_mlx5/mlx5_0:1,rc_mlx5/mlx5_1:1". Parsed from
    // ucp_ep_print_info() (UCX 1.13 has no ucp_ep_query for transports). "" if unconnected.
    std::string lanes() const;
    // ucp_ep_print_info() verbatim, for logs.
    std::string lanes_detail() const;

    // Data path helpers for the probes.
    uint8_t* buffer() { return buf_; }                    // data area (info().size bytes)
    volatile uint64_t* control() { return reinterpret_cast<volatile uint64_t*>(buf_ + info_.size); }
    ucp_worker_h worker() { return worker_; }
    ucp_ep_h ep() { return ep_; }
    ucp_rkey_h remote_rkey() { return rkey_; }
    ucp_mem_h memh() { return memh_; }
    // The first error the endpoint's error handler saw (UCS_OK while healthy).
    ucs_status_t failure() const { return failure_; }
    // One ucp_worker_progress(); returns what it returned.
    unsigned progress();
    // Progresses for up to `spin` while events come, then sleeps on the worker's event fd
    // (at most until `deadline`, and at most 10 ms at a time) until something arrives.
    // For passive sides, which must keep an emulated put moving without burning a core.
    void progress_or_wait(Deadline deadline);

 private:
    UcxEndpoint() = default;
    static void on_error(void* arg, ucp_ep_h ep, ucs_status_t status);
    void close_ep();

    UcxEndpointOptions opt_;
    UcxEndpointInfo info_;
    UcxEndpointInfo remote_;
    ucp_context_h ctx_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    int efd_ = -1;
    ucp_mem_h memh_ = nullptr;
    uint8_t* buf_ = nullptr;
    size_t buf_len_ = 0;
    ucp_ep_h ep_ = nullptr;
    ucp_rkey_h rkey_ = nullptr;
    ucs_status_t failure_ = UCS_OK;
    SteadyClock::time_point idle_since_{};  // progress_or_wait(): when events stopped
};

struct UcxBwSettings {
    uint32_t message_size = 64 * 1024;  // ucx_perftest -s 65536
    uint64_t iterations = 5000;         // puts (ucx_perftest -n); 0: run for `seconds`
    double seconds = 0;                 // when iterations == 0
    uint32_t outstanding = 16;          // puts in flight at most (ucx_perftest's window)
};

struct UcxLatSettings {
    uint32_t message_size = 8;          // ucx_perftest ucp_put_lat default
    uint64_t iterations = 1000;
};

// Active side of ucp_put_bw over one connected endpoint: non-blocking puts with at most
// `outstanding` in flight, then a flush; bandwidth = bytes / (flush complete - first post).
// Then signals the passive side through its control words (byte count, then a sequence
// number, fenced), and waits for that to be flushed too. Never throws.
ProbeResult ucx_put_bw(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxBwSettings& s, Deadline deadline);
// Passive side: progresses its worker until the sender's completion signal arrives;
// bytes = what the sender says it put, iterations = its puts.
ProbeResult ucx_put_bw_serve(UcxEndpoint& ep, Deadline deadline);

// Ping-pong as ucx_perftest ucp_put_lat: puts `message_size` bytes into the peer's buffer,
// whose last byte carries the iteration number, and spins on the last byte of its own for
// the peer's put back. Latency = half round trip, perftest statistics (probes/stats.hpp).
ProbeResult ucx_put_lat(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s,
                        Deadline deadline);
// Passive side: waits for each put, answers it.
ProbeResult ucx_put_lat_serve(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s,
                              Deadline deadline);

}  // namespace rocewatch
