// RdmaEndpointInfo: JSON round trip, garbage rejected without a crash, agree() cases.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/errors.hpp"
#include "probes/rdma_info.hpp"
#include "probes/rdma_session.hpp"

using namespace rocewatch;
using nlohmann::json;

namespace {

RdmaEndpointInfo sample(const std::string& type = "RoCE v2", int mtu = 4096) {
    RdmaEndpointInfo i;
    i.device = "rxe0";
    i.port = 1;
    i.gid_index = 1;
    i.gid = *gid_from_string("0000:0000:0000:0000:0000:ffff:0a0a:0101");
    i.gid_type = type;
    i.qpn = 0x11;
    i.psn = 0xabcdef;
    i.rkey = 0xfffffffe;
    i.addr = 0x7f00deadbeef0000ull;
    i.size = 1u << 20;
    i.active_mtu = mtu;
    return i;
}

}  // namespace

TEST(RdmaGid, StringRoundTrip) {
    const std::string s = "fe80:0000:0000:0000:5054:00ff:fe12:3401";
    const auto g = gid_from_string(s);
    ASSERT_TRUE(g);
    EXPECT_EQ(gid_to_string(*g), s);
    EXPECT_EQ((*g)[0], 0xfe);
    EXPECT_EQ((*g)[15], 0x01);
    EXPECT_TRUE(gid_from_string("FE80:0000:0000:0000:5054:00FF:FE12:3401"));
    EXPECT_FALSE(gid_from_string("fe80::1"));
    EXPECT_FALSE(gid_from_string(""));
    EXPECT_FALSE(gid_from_string("fe80-0000:0000:0000:5054:00ff:fe12:3401"));
    EXPECT_FALSE(gid_from_string("fe80:0000:0000:0000:5054:00ff:fe12:34g1"));
    EXPECT_TRUE(gid_is_zero(*gid_from_string("0000:0000:0000:0000:0000:0000:0000:0000")));
    EXPECT_FALSE(gid_is_zero(*g));
}

TEST(RdmaInfo, JsonRoundTrip) {
    const auto in = sample();
    const json j = in;
    EXPECT_EQ(j["gid"], "0000:0000:0000:0000:0000:ffff:0a0a:0101");
    EXPECT_EQ(j["gid_type"], "RoCE v2");
    EXPECT_EQ(j["addr"].get<uint64_t>(), 0x7f00deadbeef0000ull);
    const auto back = parse_endpoint_info_text(j.dump());
    ASSERT_TRUE(back.info) << back.error;
    EXPECT_EQ(*back.info, in);
    EXPECT_EQ(j.get<RdmaEndpointInfo>(), in);  // the ADL hook
}

TEST(RdmaInfo, GarbageIsAnErrorNeverACrash) {
    for (const char* text : {"", "not json", "[]", "null", "42", "\"rxe0\"", "{}", "{\"device\":1}", "{\"device\":"}) {
        const auto p = parse_endpoint_info_text(text);
        EXPECT_FALSE(p.info) << text;
        EXPECT_FALSE(p.error.empty()) << text;
    }
    const json good = sample();
    struct Case {
        const char* key;
        json value;
        const char* says;
    };
    const Case cases[] = {
        {"device", "", "device"},
        {"device", 3, "device"},
        {"port", 0, "port"},
        {"port", 256, "port"},
        {"port", "1", "port"},
        {"gid_index", -2, "gid_index"},
        {"gid_index", 1.5, "gid_index"},
        {"gid", "fe80::1", "gid"},
        {"gid", nullptr, "gid"},
        {"qpn", 1 << 24, "qpn"},
        {"qpn", -1, "qpn"},
        {"psn", 1 << 24, "psn"},
        {"rkey", 1ull << 32, "rkey"},
        {"rkey", true, "rkey"},
        {"size", -5, "size"},
        {"active_mtu", 1500, "active_mtu"},
        {"active_mtu", 8192, "active_mtu"},
        {"addr", "0x10", "addr"},
        {"gid_type", json::array(), "gid_type"},
    };
    for (const auto& c : cases) {
        json j = good;
        j[c.key] = c.value;
        const auto p = parse_endpoint_info(j);
        EXPECT_FALSE(p.info) << c.key << "=" << c.value.dump();
        EXPECT_NE(p.error.find(c.says), std::string::npos) << p.error;
    }
    for (const char* key :
         {"device", "port", "gid_index", "gid", "gid_type", "qpn", "psn", "rkey", "addr", "size", "active_mtu"}) {
        json j = good;
        j.erase(key);
        const auto p = parse_endpoint_info(j);
        EXPECT_FALSE(p.info) << key;
        EXPECT_NE(p.error.find("missing"), std::string::npos) << p.error;
    }
    RdmaEndpointInfo out;
    EXPECT_THROW(from_json(json::array(), out), std::invalid_argument);
}

TEST(RdmaAgree, SmallerMtuWins) {
    auto a = sample("RoCE v2", 4096);
    auto b = sample("RoCE v2", 1024);
    auto r = agree(a, b);
    ASSERT_TRUE(r.ok()) << r.detail;
    EXPECT_EQ(r.mtu, 1024);
    EXPECT_EQ(agree(b, a).mtu, 1024);
    EXPECT_EQ(agree(a, a).mtu, 4096);
}

TEST(RdmaAgree, GidTypesMustMatch) {
    const auto r = agree(sample("RoCE v2"), sample("IB/RoCE v1"));
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.reason, reason::gid_mismatch);
    EXPECT_NE(r.detail.find("RoCE v2"), std::string::npos);
    EXPECT_NE(r.detail.find("IB/RoCE v1"), std::string::npos);
}

TEST(RdmaAgree, UnusableGidIsAMismatch) {
    auto none = sample();
    none.gid_index = -1;
    EXPECT_EQ(agree(sample(), none).reason, reason::gid_mismatch);
    EXPECT_NE(agree(sample(), none).detail.find("remote"), std::string::npos);
    auto zero = sample();
    zero.gid = {};
    EXPECT_EQ(agree(zero, sample()).reason, reason::gid_mismatch);
    EXPECT_NE(agree(zero, sample()).detail.find("local"), std::string::npos);
    auto untyped = sample("");
    EXPECT_EQ(agree(sample(), untyped).reason, reason::gid_mismatch);
}

TEST(RdmaAgree, BadMtu) {
    auto bad = sample("RoCE v2", 0);
    EXPECT_EQ(agree(sample(), bad).reason, reason::bad_target);
    bad.active_mtu = 1500;
    EXPECT_EQ(agree(bad, sample()).reason, reason::bad_target);
}

// A rail's gid_index from the peer is an integer from -1 up, or the request is refused before
// any device is looked for: 2.2e120 has no int, and converting it was undefined behaviour
// (fuzz_rdma_session; its input is in tests/fuzz/regressions/rdma_session/float-gid-index).
TEST(RdmaSessionAccept, AGidIndexThatIsNoIntIsAProtocolError) {
    std::vector<int> asked;
    const rocewatch::RdmaDeviceResolver resolve =
        [&](const std::string&, int gid_index, const std::string&,
            std::string& why) -> std::optional<rocewatch::RdmaEndpointOptions> {
        asked.push_back(gid_index);
        why = "no device here";
        return std::nullopt;
    };
    const auto request = [](const nlohmann::json& gid_index) {
        nlohmann::json rail = {{"name", "r0"},
                               {"device", "rxe0"},
                               {"address", "10.10.1.2"},
                               {"endpoints", {{{"qpn", 17}}}}};
        if (!gid_index.is_null()) rail["gid_index"] = gid_index;
        return nlohmann::json{{"kind", "rdma_write_bw"}, {"message_size", 65536}, {"iterations", 10},
                              {"seconds", 2.0},          {"timeout", 12.5},       {"rails", {rail}}};
    };
    for (const auto& bad : {nlohmann::json(2.2e120), nlohmann::json(3.0), nlohmann::json(-2), nlohmann::json("3"),
                            nlohmann::json(uint64_t{1} << 40)}) {
        const auto a = rocewatch::rdma_session_accept(request(bad), rocewatch::RdmaServeLimits{}, resolve);
        EXPECT_FALSE(a.ok());
        EXPECT_EQ(a.reply.value("reason", ""), "protocol_error") << bad.dump() << ": " << a.reply.dump();
    }
    EXPECT_TRUE(asked.empty()) << "no device is looked for on a bad gid_index";
    for (const auto& good : {nlohmann::json(3), nlohmann::json(-1), nlohmann::json()}) {
        const auto a = rocewatch::rdma_session_accept(request(good), rocewatch::RdmaServeLimits{}, resolve);
        EXPECT_EQ(a.reply.value("reason", ""), "device_not_found") << good.dump() << ": " << a.reply.dump();
    }
    EXPECT_EQ(asked, (std::vector<int>{3, -1, -1}));
}
