// A ucp endpoint to one peer, with its own context, worker and registered buffer: RAII
// over libucp, every failure mapped to a reason.
//
// Trust: UCX has no way to validate a worker address or packed rkey. A malformed one
// makes ucp_ep_create()/ucp_ep_rkey_unpack() abort the process (ucs_fatal_error) or touch
// memory out of bounds; parse_ucx_endpoint_info() bounds sizes, nothing more. Only
// connect to infos that came from an authenticated peer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <ucp/api/ucp.h>

#include "probes/deadline.hpp"
#include "probes/ucx_errors.hpp"
#include "probes/ucx_info.hpp"

namespace rocewatch {

struct UcxEndpointOptions {
    uint32_t buffer_size = 1u << 20;     // data bytes registered (at least the message size)
    std::string transports;              // UCX_TLS for this context ("": the environment / UCX's choice)
    std::string net_devices;             // UCX_NET_DEVICES ("": the environment / all)
    bool require_same_version = false;   // connect() refuses a peer with another UCX version
    double close_timeout_seconds = 1.0;  // bound on closing the endpoint in the destructor
};

class UcxEndpoint;
struct UcxOpen {
    std::unique_ptr<UcxEndpoint> endpoint;  // null on failure
    UcxStatus status;
};

// ucp context (RMA + WAKEUP), one worker, a registered buffer with its packed rkey, and
// after connect() one ucp endpoint (peer error handling) with the peer's rkey unpacked;
// all released in reverse order by the destructor, which force-closes the endpoint (the
// probes flush their own puts) within close_timeout_seconds (a dead peer never hangs it). Not thread-safe: one thread
// drives an endpoint at a time (it may be handed over to another thread between calls).
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
    uint8_t* buffer() { return buf_; }  // data area (info().size bytes)
    volatile uint64_t* control() { return reinterpret_cast<volatile uint64_t*>(buf_ + info_.size); }
    ucp_worker_h worker() { return worker_; }
    ucp_ep_h ep() { return ep_; }
    ucp_rkey_h remote_rkey() { return rkey_; }
    ucp_mem_h memh() { return memh_; }
    // The first error the endpoint's error handler saw (UCS_OK while healthy).
    ucs_status_t failure() const { return failure_; }
    // Completions of the non-blocking puts posted with put_completed as their callback and
    // &put_completions() as its user data. They live as long as the endpoint: a put still in
    // flight when a probe gives up completes, or is cancelled by the close, into memory that
    // is still there (a counter on the probe's stack was gone by then).
    struct PutCompletions {
        uint64_t completed = 0;
        ucs_status_t error = UCS_OK;  // the first failed put's status
    };
    PutCompletions& put_completions() { return puts_; }
    static void put_completed(void* request, ucs_status_t status, void* user_data);
    // One ucp_worker_progress(); returns what it returned.
    unsigned progress();
    // Progresses for up to `spin` while events come, then sleeps on the worker's event fd
    // (at most until `deadline`, and at most 10 ms at a time) until something arrives.
    // For passive sides, which must keep an emulated put moving without burning a core.
    void progress_or_wait(Deadline deadline);

private:
    UcxEndpoint() = default;
    static void on_error(void* arg, ucp_ep_h ep, ucs_status_t status);
    // The steps of open(), in order; each says why it failed.
    UcxStatus init_context();
    UcxStatus create_worker();
    UcxStatus map_buffer();
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
    PutCompletions puts_;
    SteadyClock::time_point idle_since_{};  // progress_or_wait(): when events stopped
};

// Waits for a non-blocking request (no callback) to finish, progressing the worker: spins
// when `spin`, else sleeps between events. Frees the request. UCS_ERR_TIMED_OUT at the
// deadline (the request is released and completes inside UCX later).
ucs_status_t wait_request(UcxEndpoint& ep, void* req, Deadline deadline, bool spin);
// What a request's failure means: the endpoint's own failure outranks what the request
// saw (its requests only say "canceled"); a timeout is the deadline's.
UcxStatus request_failure(UcxEndpoint& ep, const std::string& what, ucs_status_t st);

}  // namespace rocewatch
