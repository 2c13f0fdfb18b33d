// UCX probes without a peer machine: exchange data (JSON), status mapping, the checks
// connect() makes before UCX sees an address, and a loopback run between two endpoints of
// this process over UCX_TLS=tcp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <future>
#include <limits>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "probes/errors.hpp"
#include "probes/ucx.hpp"
#include "probes/ucx_info.hpp"

using namespace rocewatch;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

UcxEndpointInfo sample() {
    UcxEndpointInfo i;
    i.ucx_version = "1.13.1";
    i.worker_address = {0x20, 0xfb, 0xa6, 0x00, 0xff, 0x01};
    i.addr = 0x7f00'1234'5000ull;
    i.size = 1u << 20;
    i.rkey = {0x01, 0x02, 0xab};
    return i;
}

json sample_json() { return json(sample()); }

}  // namespace

TEST(UcxInfo, JsonRoundTrip) {
    const auto j = sample_json();
    EXPECT_EQ(j["worker_address"], "20fba600ff01");
    EXPECT_EQ(j["rkey"], "0102ab");
    EXPECT_EQ(j["addr"], 0x7f00'1234'5000ull);
    const auto p = parse_ucx_endpoint_info(j);
    ASSERT_TRUE(p.info) << p.error;
    EXPECT_EQ(*p.info, sample());
    const auto t = parse_ucx_endpoint_info_text(j.dump());
    ASSERT_TRUE(t.info) << t.error;
    EXPECT_EQ(*t.info, sample());
    // The largest addr survives (it is a pointer in the peer's address space).
    auto big = sample_json();
    big["addr"] = std::numeric_limits<uint64_t>::max();
    ASSERT_TRUE(parse_ucx_endpoint_info(big).info);
}

TEST(UcxInfo, ParseErrorsNameTheField) {
    struct Case {
        const char* name;
        std::function<void(json&)> spoil;
        const char* expect;
    };
    const std::vector<Case> cases = {
        {"missing version", [](json& j) { j.erase("ucx_version"); }, "ucx_version: missing"},
        {"empty version", [](json& j) { j["ucx_version"] = ""; }, "ucx_version: empty"},
        {"long version", [](json& j) { j["ucx_version"] = std::string(100, '1'); }, "ucx_version: too long"},
        {"version not string", [](json& j) { j["ucx_version"] = 1.13; }, "ucx_version: not a string"},
        {"address odd", [](json& j) { j["worker_address"] = "abc"; }, "worker_address: not hex"},
        {"address not hex", [](json& j) { j["worker_address"] = "zz"; }, "worker_address: not hex"},
        {"address empty", [](json& j) { j["worker_address"] = ""; }, "worker_address: empty"},
        {"address too long", [](json& j) { j["worker_address"] = std::string(2 * kUcxMaxWorkerAddress + 2, 'a'); },
         "worker_address: too long"},
        {"address as bytes",
         [](json& j) {
             j["worker_address"] = json::array({1, 2});
         },
         "worker_address: not a string"},
        {"rkey missing", [](json& j) { j.erase("rkey"); }, "rkey: missing"},
        {"rkey too long", [](json& j) { j["rkey"] = std::string(2 * kUcxMaxRkey + 2, '0'); }, "rkey: too long"},
        {"addr negative", [](json& j) { j["addr"] = -1; }, "addr: out of range"},
        {"addr float", [](json& j) { j["addr"] = 1.5; }, "addr: not an integer"},
        {"addr string", [](json& j) { j["addr"] = "140000"; }, "addr: not an integer"},
        {"addr null", [](json& j) { j["addr"] = 0; }, "addr: null"},
        {"size zero", [](json& j) { j["size"] = 0; }, "size: zero"},
        {"size too big", [](json& j) { j["size"] = uint64_t{1} << 32; }, "size: out of range"},
        {"size bool", [](json& j) { j["size"] = true; }, "size: not an integer"},
    };
    for (const auto& c : cases) {
        auto j = sample_json();
        c.spoil(j);
        const auto p = parse_ucx_endpoint_info(j);
        EXPECT_FALSE(p.info) << c.name;
        EXPECT_EQ(p.error, c.expect) << c.name;
    }
}

TEST(UcxInfo, ParseNeverThrows) {
    for (const char* text : {"", "{", "null", "[]", "42", "\"x\"", "{\"ucx_version\":{}}", "\xff\xfe", "[[[[[[[[[["}) {
        UcxEndpointInfoParse p;
        EXPECT_NO_THROW(p = parse_ucx_endpoint_info_text(text)) << text;
        EXPECT_FALSE(p.info) << text;
        EXPECT_FALSE(p.error.empty()) << text;
    }
    for (const json& j : {json(nullptr), json::array(), json(1), json("s"), json::object()}) {
        UcxEndpointInfoParse p;
        EXPECT_NO_THROW(p = parse_ucx_endpoint_info(j));
        EXPECT_FALSE(p.info);
    }
    EXPECT_EQ(parse_ucx_endpoint_info_text("[]").error, "endpoint info: not a JSON object");
    EXPECT_EQ(parse_ucx_endpoint_info_text("{").error, "endpoint info: not JSON");
}

TEST(UcxStatusMapping, Reasons) {
    EXPECT_STREQ(reason_from_ucs_status(UCS_OK), "");
    EXPECT_STREQ(reason_from_ucs_status(UCS_INPROGRESS), "");
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_UNREACHABLE), reason::peer_unreachable);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_ENDPOINT_TIMEOUT), reason::peer_unreachable);
    EXPECT_STREQ(reason_from_ucs_status(static_cast<ucs_status_t>(UCS_ERR_FIRST_LINK_FAILURE - 1)),
                 reason::peer_unreachable);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_CONNECTION_RESET), reason::peer_closed);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_CANCELED), reason::peer_closed);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_REJECTED), reason::connection_refused);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_TIMED_OUT), reason::timeout);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_NO_DEVICE), reason::device_not_found);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_NO_MEMORY), reason::local_resources);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_INVALID_PARAM), reason::bad_target);
    EXPECT_STREQ(reason_from_ucs_status(UCS_ERR_SHMEM_SEGMENT), reason::internal_error);
}

// ---- real UCX in this process (no root: tcp over loopback)

namespace {

UcxEndpointOptions loopback() {
    UcxEndpointOptions o;
    o.transports = "tcp";
    o.net_devices = "lo";
    o.buffer_size = 256 * 1024;
    return o;
}

}  // namespace

TEST(UcxEndpoint, OpenDescribesItself) {
    auto o = UcxEndpoint::open(loopback());
    ASSERT_TRUE(o.endpoint) << o.status.reason << ": " << o.status.detail;
    const auto& info = o.endpoint->info();
    EXPECT_EQ(info.ucx_version, ucx_runtime_version());
    EXPECT_FALSE(info.ucx_version.empty());
    EXPECT_FALSE(info.worker_address.empty());
    EXPECT_FALSE(info.rkey.empty());
    EXPECT_EQ(info.size, 256u * 1024);
    EXPECT_EQ(info.addr, reinterpret_cast<uintptr_t>(o.endpoint->buffer()));
    // What it sends survives the exchange format.
    const auto p = parse_ucx_endpoint_info(json(info));
    ASSERT_TRUE(p.info) << p.error;
    EXPECT_EQ(*p.info, info);
    EXPECT_FALSE(o.endpoint->connected());
    EXPECT_EQ(o.endpoint->lanes(), "");
}

TEST(UcxEndpoint, MemoryEventsOffUnlessConfigured) {
    // open() ran in an earlier test or runs here; either way the decision is made once.
    auto o = UcxEndpoint::open(loopback());
    ASSERT_TRUE(o.endpoint);
    const std::string said = ucx_disable_memory_hooks();
    EXPECT_FALSE(said.empty());
    // Endpoints keep working with events off (no registration cache).
    auto again = UcxEndpoint::open(loopback());
    EXPECT_TRUE(again.endpoint) << again.status.detail;
}

TEST(UcxEndpoint, UnknownTransportFailsCleanly) {
    auto o = loopback();
    o.transports = "no_such_transport";
    const auto r = UcxEndpoint::open(o);
    EXPECT_FALSE(r.endpoint);
    EXPECT_FALSE(r.status.ok());
    EXPECT_FALSE(r.status.detail.empty());
}

TEST(UcxEndpoint, ConnectRefusesBogusInfoBeforeUcxSeesIt) {
    auto o = UcxEndpoint::open(loopback());
    ASSERT_TRUE(o.endpoint);
    auto& ep = *o.endpoint;
    auto remote = ep.info();
    remote.worker_address.clear();
    auto st = ep.connect(remote);
    EXPECT_EQ(st.reason, reason::bad_target) << st.detail;
    remote = ep.info();
    remote.rkey.clear();
    st = ep.connect(remote);
    EXPECT_EQ(st.reason, reason::bad_target) << st.detail;
    remote = ep.info();
    remote.ucx_version = "2.0.0";
    st = ep.connect(remote);
    EXPECT_EQ(st.reason, reason::ucx_version_mismatch) << st.detail;
    EXPECT_NE(st.detail.find("2.0.0"), std::string::npos);
    EXPECT_FALSE(ep.connected());
}

TEST(UcxEndpoint, StrictVersionPolicy) {
    auto opt = loopback();
    opt.require_same_version = true;
    auto o = UcxEndpoint::open(opt);
    ASSERT_TRUE(o.endpoint);
    auto remote = o.endpoint->info();
    remote.ucx_version += ".1";
    const auto st = o.endpoint->connect(remote);
    EXPECT_EQ(st.reason, reason::ucx_version_mismatch) << st.detail;
}

TEST(UcxEndpoint, ProbesOnAnUnconnectedEndpointFail) {
    auto o = UcxEndpoint::open(loopback());
    ASSERT_TRUE(o.endpoint);
    const auto bw = ucx_put_bw(*o.endpoint, o.endpoint->info(), UcxBwSettings{}, Deadline::after(1s));
    EXPECT_FALSE(bw.success);
    EXPECT_EQ(bw.reason, reason::bad_target);
    EXPECT_EQ(bw.kind, ProbeKind::ucx_put_bw);
    const auto lat = ucx_put_lat(*o.endpoint, o.endpoint->info(), UcxLatSettings{}, Deadline::after(1s));
    EXPECT_FALSE(lat.success);
    EXPECT_EQ(lat.kind, ProbeKind::ucx_put_lat);
    const auto serve = ucx_put_bw_serve(*o.endpoint, Deadline::after(1s));
    EXPECT_FALSE(serve.success);
    EXPECT_LT(serve.duration_seconds, 0.5);
}

// Two endpoints of this process, each side on its own thread as the daemon runs them.
TEST(UcxEndpoint, LoopbackPutLatencyAndBandwidth) {
    auto a = UcxEndpoint::open(loopback());
    auto b = UcxEndpoint::open(loopback());
    ASSERT_TRUE(a.endpoint && b.endpoint);
    auto& ea = *a.endpoint;
    auto& eb = *b.endpoint;
    // connect() does not wait for the peer; the probes wire up while the serve side progresses.
    const auto sa = ea.connect(eb.info());
    const auto sb = eb.connect(ea.info());
    ASSERT_TRUE(sa.ok()) << sa.reason << ": " << sa.detail;
    ASSERT_TRUE(sb.ok()) << sb.reason << ": " << sb.detail;
    EXPECT_TRUE(ea.connected());
    EXPECT_EQ(ea.remote(), eb.info());

    UcxLatSettings ls;
    ls.iterations = 200;
    auto serve = std::async(std::launch::async,
                            [&] { return ucx_put_lat_serve(eb, ea.info(), ls, Deadline::after(5s)); });
    const auto lat = ucx_put_lat(ea, eb.info(), ls, Deadline::after(5s));
    const auto lat_served = serve.get();
    ASSERT_TRUE(lat.success) << lat.reason << ": " << lat.detail;
    ASSERT_TRUE(lat_served.success) << lat_served.reason << ": " << lat_served.detail;
    ASSERT_TRUE(lat.latency);
    EXPECT_NE(lat.info.at("ucx_lanes").find("tcp/lo"), std::string::npos) << ea.lanes_detail();
    EXPECT_EQ(lat.latency->samples, 200u);
    EXPECT_GT(lat.latency->typical, 0);
    EXPECT_LT(lat.latency->typical, 0.01);
    EXPECT_EQ(lat.iterations, 200u);
    EXPECT_EQ(lat_served.iterations, 200u);

    UcxBwSettings bs;
    bs.message_size = 64 * 1024;
    bs.iterations = 200;
    auto bserve = std::async(std::launch::async, [&] { return ucx_put_bw_serve(eb, Deadline::after(5s)); });
    const auto bw = ucx_put_bw(ea, eb.info(), bs, Deadline::after(5s));
    const auto bw_served = bserve.get();
    ASSERT_TRUE(bw.success) << bw.reason << ": " << bw.detail;
    ASSERT_TRUE(bw_served.success) << bw_served.reason << ": " << bw_served.detail;
    EXPECT_EQ(bw.bytes, 200u * 64 * 1024);
    EXPECT_EQ(bw_served.bytes, bw.bytes);
    EXPECT_EQ(bw_served.iterations, 200u);
    ASSERT_TRUE(bw.bandwidth_bits_per_second);
    EXPECT_GT(*bw.bandwidth_bits_per_second, 0);
    EXPECT_EQ(bw.info.at("local_ucx_version"), ucx_runtime_version());
    EXPECT_EQ(bw.info.at("remote_ucx_version"), ucx_runtime_version());

    // A message larger than the buffers is refused before anything is put.
    bs.message_size = 1u << 30;
    const auto too_big = ucx_put_bw(ea, eb.info(), bs, Deadline::after(1s));
    EXPECT_EQ(too_big.reason, reason::bad_target);
}
