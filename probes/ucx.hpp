// UCX probes: a ucp endpoint per probe session, and ucx_perftest ucp_put_bw / ucp_put_lat
// style probes over the transports and devices UCX selects (the path NIXL uses).
//
// Each endpoint owns its ucp context, one worker, a registered buffer and one ucp
// endpoint to the peer's worker, so a probe never shares UCX state with another. Puts are
// one-sided: on transports without native RMA (tcp) UCX emulates them with active
// messages, which the passive side must progress; the serve functions do that, spinning
// while messages flow and sleeping on the worker's event fd when idle.
//
// Endpoints: ucx_endpoint.hpp (and its word on trust); status mapping: ucx_errors.hpp;
// version and memory hooks: ucx_runtime.hpp.
#pragma once

#include <cstdint>

#include "probes/deadline.hpp"
#include "probes/result.hpp"
#include "probes/ucx_endpoint.hpp"
#include "probes/ucx_errors.hpp"
#include "probes/ucx_info.hpp"
#include "probes/ucx_runtime.hpp"

namespace rocewatch {

struct UcxBwSettings {
    uint32_t message_size = 64 * 1024;  // ucx_perftest -s 65536
    uint64_t iterations = 5000;         // puts (ucx_perftest -n); 0: run for `seconds`
    double seconds = 0;                 // when iterations == 0
    uint32_t outstanding = 16;          // puts in flight at most (ucx_perftest's window)
};

struct UcxLatSettings {
    uint32_t message_size = 8;  // ucx_perftest ucp_put_lat default
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
ProbeResult ucx_put_lat(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s, Deadline deadline);
// Passive side: waits for each put, answers it.
ProbeResult ucx_put_lat_serve(UcxEndpoint& ep, const UcxEndpointInfo& remote, const UcxLatSettings& s,
                              Deadline deadline);

}  // namespace rocewatch
