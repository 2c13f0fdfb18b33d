// RDMA verbs probes without hardware: error mapping, and a device that does not exist.
#include <gtest/gtest.h>

#include <cerrno>

#include "probes/errors.hpp"
#include "probes/rdma.hpp"

using namespace rocewatch;

TEST(RdmaErrors, WcStatusMapping) {
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_SUCCESS), "");
    // Named after what was observed, not a guess: no ACK is not "unreachable" (TCP may work).
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_RETRY_EXC_ERR), "rdma_no_ack");
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_RNR_RETRY_EXC_ERR), "rdma_receiver_not_ready");
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_WR_FLUSH_ERR), "rdma_flushed");
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_REM_ACCESS_ERR), "rdma_remote_refused");
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_REM_INV_REQ_ERR), "rdma_remote_refused");
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_BAD_RESP_ERR), "protocol_error");
    // A completion that failed ran: none may read as "did not run" (peer_busy, skipped_busy).
    for (int s = IBV_WC_LOC_LEN_ERR; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s) {
        ProbeResult r;
        r.reason = reason_from_wc_status(static_cast<ibv_wc_status>(s));
        EXPECT_TRUE(probe_ran(r)) << s << " " << r.reason;
    }
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_LOC_PROT_ERR), reason::internal_error);
    EXPECT_STREQ(reason_from_wc_status(IBV_WC_FATAL_ERR), reason::internal_error);
    EXPECT_STREQ(reason_from_wc_status(static_cast<ibv_wc_status>(999)), reason::internal_error);
    // every status has a non-empty reason except success
    for (int s = IBV_WC_LOC_LEN_ERR; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s)
        EXPECT_STRNE(reason_from_wc_status(static_cast<ibv_wc_status>(s)), "") << s;
}

TEST(RdmaErrors, VerbsErrnoMapping) {
    EXPECT_STREQ(reason_from_verbs_errno(ENODEV), reason::device_not_found);
    EXPECT_STREQ(reason_from_verbs_errno(ENOSYS), reason::device_not_found);
    EXPECT_STREQ(reason_from_verbs_errno(ENOMEM), reason::local_resources);
    EXPECT_STREQ(reason_from_verbs_errno(EINVAL), reason::bad_target);
    EXPECT_STREQ(reason_from_verbs_errno(EPERM), reason::permission_denied);
    EXPECT_STREQ(reason_from_verbs_errno(ETIMEDOUT), reason::timeout);
}

TEST(RdmaEndpoint, MissingDeviceIsAReasonNotACrash) {
    RdmaEndpointOptions o;
    o.device = "no_such_rdma_device0";
    const auto opened = RdmaEndpoint::open(o);
    EXPECT_EQ(opened.endpoint, nullptr);
    EXPECT_EQ(opened.status.reason, reason::device_not_found);
    EXPECT_NE(opened.status.detail.find("no_such_rdma_device0"), std::string::npos) << opened.status.detail;
}

TEST(RdmaEndpoint, DefaultsFollowPerftest) {
    const RdmaBwSettings bw;
    EXPECT_EQ(bw.message_size, 64u * 1024);
    EXPECT_EQ(bw.tx_depth, 128u);
    EXPECT_EQ(bw.cq_mod, 100u);
    const RdmaEndpointOptions o;
    EXPECT_EQ(o.timeout, 14);
    EXPECT_EQ(o.retry_cnt, 7);
    EXPECT_EQ(o.rnr_retry, 7);
    EXPECT_GT(o.max_send_wr, bw.tx_depth);
}

TEST(RdmaProbes, EmptyMultirailFailsWithAReason) {
    std::vector<RdmaRail> none;
    const auto r = rdma_multirail_bw(none, RdmaBwSettings{}, Deadline::after_seconds(1));
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.kind, ProbeKind::rdma_multirail_bw);
    EXPECT_EQ(r.reason, reason::bad_target);
    std::vector<RdmaRail> unpaired(1);
    unpaired[0].name = "railA";
    const auto u = rdma_multirail_bw(unpaired, RdmaBwSettings{}, Deadline::after_seconds(1));
    EXPECT_FALSE(u.success);
    EXPECT_EQ(u.reason, reason::bad_target);
    EXPECT_GE(u.duration_seconds, 0);
}
