// ProbeResult as JSON and back (api/probe_view): the one spelling the REST API, the UCX
// session child and the probe tools share.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/probe_view.hpp"

using namespace rocewatch;

namespace {

ProbeResult sample() {
    ProbeResult r;
    r.kind = ProbeKind::ucx_put_bw;
    r.peer = "spark-b";
    r.rail = "railA";
    r.success = true;
    r.duration_seconds = 1.25;
    r.bandwidth_bits_per_second = 93.5e9;
    r.bytes = 1 << 30;
    r.iterations = 16384;
    r.streams = 2;
    r.bytes_per_stream = {1u << 29, 1u << 29};
    r.bytes_per_rail = {{"railA", 600}, {"railB", 400}};
    r.info = {{"ucx_lanes", "tcp/rwp0"}, {"message_size", "65536"}};
    LatencyStats l;
    l.samples = 1000;
    l.used = 990;
    l.min = 1e-6;
    l.max = 9e-6;
    l.typical = 2e-6;
    l.mean = 2.5e-6;
    l.stddev = 0.5e-6;
    l.p99 = 5e-6;
    l.p99_9 = 8e-6;
    r.latency = l;
    return r;
}

}  // namespace

TEST(ProbeResultJson, RoundTrip) {
    const ProbeResult r = sample();
    const ProbeResult back = api::probe_result_from_json(api::probe_result_json(r), ProbeKind::tcp_lat);
    EXPECT_EQ(back.kind, r.kind);
    EXPECT_EQ(back.peer, r.peer);
    EXPECT_EQ(back.rail, r.rail);
    EXPECT_EQ(back.success, r.success);
    EXPECT_DOUBLE_EQ(back.duration_seconds, r.duration_seconds);
    EXPECT_EQ(back.bandwidth_bits_per_second, r.bandwidth_bits_per_second);
    EXPECT_EQ(back.bytes, r.bytes);
    EXPECT_EQ(back.iterations, r.iterations);
    EXPECT_EQ(back.streams, r.streams);
    EXPECT_EQ(back.bytes_per_stream, r.bytes_per_stream);
    EXPECT_EQ(back.bytes_per_rail, r.bytes_per_rail);
    EXPECT_EQ(back.info, r.info);
    ASSERT_TRUE(back.latency);
    EXPECT_DOUBLE_EQ(back.latency->p99_9, r.latency->p99_9);
    EXPECT_EQ(back.latency->used, r.latency->used);
    EXPECT_EQ(back.started, TimePoint{}) << "another process's clock is not taken over";
}

TEST(ProbeResultJson, FailedResultKeepsItsReason) {
    ProbeResult r;
    r.kind = ProbeKind::tcp_lat;
    r.reason = "timeout";
    r.detail = "no answer";
    const auto j = api::probe_result_json(r);
    EXPECT_TRUE(j["bandwidth_bytes_per_second"].is_null());
    EXPECT_TRUE(j["latency_seconds"].is_null());
    const auto back = api::probe_result_from_json(j, ProbeKind::ucx_put_lat);
    EXPECT_FALSE(back.success);
    EXPECT_EQ(back.reason, "timeout");
    EXPECT_EQ(back.detail, "no answer");
    EXPECT_FALSE(back.bandwidth_bits_per_second);
    EXPECT_FALSE(back.latency);
}

TEST(ProbeResultJson, ReaderTakesWhatItFinds) {
    const auto j = nlohmann::json::parse(R"({"success": true, "bytes": "many", "info": {"a": 1, "b": "x"},
                                             "bytes_per_stream": [1, "two", 3], "latency_seconds": 5})");
    const auto r = api::probe_result_from_json(j, ProbeKind::rdma_write_lat);
    EXPECT_EQ(r.kind, ProbeKind::rdma_write_lat) << "no kind in the document: the caller's";
    EXPECT_TRUE(r.success);
    // API version 2: a figure in `info` is a JSON number; it reads back as its decimal text.
    EXPECT_EQ(r.info, (std::map<std::string, std::string>{{"a", "1"}, {"b", "x"}}));
    EXPECT_EQ(r.bytes_per_stream, (std::vector<uint64_t>{1, 3}));
    EXPECT_FALSE(r.latency);
}

// API version 2 writes bytes per second and figures in `info` as numbers; the reader takes
// both that and what a peer of an older version sends (bits per second, strings).
TEST(ProbeResultJson, BytesPerSecondAndNumbersWithTheOldSpellingRead) {
    const auto j = api::probe_result_json(sample());
    EXPECT_EQ(j["bandwidth_bytes_per_second"], 93.5e9 / 8);
    EXPECT_FALSE(j.contains("bandwidth_bits_per_second"));
    EXPECT_EQ(j["info"]["message_size"], 65536);
    EXPECT_EQ(j["info"]["ucx_lanes"], "tcp/rwp0");
    EXPECT_TRUE(j.contains("started_at"));
    nlohmann::json old = {{"success", true}, {"bandwidth_bits_per_second", 8e9}, {"info", {{"gid_index", "3"}}}};
    const auto back = api::probe_result_from_json(old, ProbeKind::tcp_bw);
    EXPECT_EQ(back.bandwidth_bits_per_second, 8e9);
    EXPECT_EQ(back.info.at("gid_index"), "3");
}
