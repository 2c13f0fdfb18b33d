// Verbs errors in the probes' words, mapped in one place.
#include "probes/rdma_errors.hpp"

#include <cerrno>

#include "probes/errors.hpp"

namespace rocewatch {

const char* reason_from_wc_status(ibv_wc_status status) {
    switch (status) {
        case IBV_WC_SUCCESS: return "";
        // The transport gave up: no ACK within timeout x retry_cnt (cable pulled, peer
        // port gone, its GID missing, a crossed rail). Said as observed: TCP may still work.
        case IBV_WC_RETRY_EXC_ERR: return reason::rdma_no_ack;
        // The peer's port answered, but kept saying "receiver not ready". Not peer_busy:
        // that one means "did not run" to the verdicts, and this one did run and fail.
        case IBV_WC_RNR_RETRY_EXC_ERR: return reason::rdma_receiver_not_ready;
        // Everything behind the failed WR is flushed; the first error is what counts.
        case IBV_WC_WR_FLUSH_ERR: return reason::rdma_flushed;
        // The peer refused our rkey/address/size or the request itself.
        case IBV_WC_REM_ACCESS_ERR:
        case IBV_WC_REM_INV_REQ_ERR:
        case IBV_WC_REM_OP_ERR:
        case IBV_WC_REM_INV_RD_REQ_ERR:
        case IBV_WC_REM_ABORT_ERR: return reason::rdma_remote_refused;
        case IBV_WC_INV_EECN_ERR:
        case IBV_WC_INV_EEC_STATE_ERR:
        case IBV_WC_BAD_RESP_ERR: return reason::protocol_error;
        case IBV_WC_LOC_LEN_ERR:
        case IBV_WC_LOC_QP_OP_ERR:
        case IBV_WC_LOC_EEC_OP_ERR:
        case IBV_WC_LOC_PROT_ERR:
        case IBV_WC_MW_BIND_ERR:
        case IBV_WC_LOC_ACCESS_ERR:
        case IBV_WC_LOC_RDD_VIOL_ERR:
        case IBV_WC_FATAL_ERR:
        case IBV_WC_RESP_TIMEOUT_ERR:
        case IBV_WC_GENERAL_ERR:
        case IBV_WC_TM_ERR:
        case IBV_WC_TM_RNDV_INCOMPLETE: return reason::internal_error;
    }
    return reason::internal_error;
}

const char* reason_from_verbs_errno(int err) {
    switch (err) {
        case ENODEV:
        case ENXIO:
        case ENOSYS:  // no uverbs in the kernel at all
            return reason::device_not_found;
        case ENOMEM:
        case ENOSPC: return reason::local_resources;
        case EINVAL: return reason::bad_target;
        default: return reason_from_errno(err);
    }
}

std::string wc_detail(const std::string& device, const ibv_wc& wc, const char* what) {
    return device + ": " + what + " completed with " + ibv_wc_status_str(wc.status) + " (status " +
           std::to_string(static_cast<int>(wc.status)) + ", vendor_err " + std::to_string(wc.vendor_err) + ")";
}

}  // namespace rocewatch
