// Rail resolution against the DGX Spark fixture; the RDMA session's refusals: budget,
// malformed requests, devices that are not there (this machine has no RDMA devices; the VM
// scenario 'probes' runs accepted sessions between two daemons over Soft-RoCE); the token;
// ending a session early (cancellable deadlines, the session host's ids).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "daemon/rules/rail_resolve.hpp"
#include "daemon/peering/probers.hpp"
#include "daemon/peering/rdma_runner.hpp"
#include "daemon/peering/session_host.hpp"
#include "daemon/peering/token.hpp"
#include "daemon/peering/ucx_session.hpp"
#include "probes/errors.hpp"
#include "daemon/sysfs/rdma_sysfs.hpp"
#include "test_env.hpp"

using namespace rocewatch;
using nlohmann::json;

namespace {

// The Spark: rocep1s0f0 (enp1s0f0np0, 192.168.100.11/24, GID 3), rocep1s0f1 (enp1s0f1np1,
// 192.168.200.11/24, GID 3) and the twin roceP2p1s0f0 (enP2p1s0f0np0, 192.168.100.15).
Snapshot spark() {
    Snapshot s;
    auto r = read_rdma_devices(rocewatch::testing::fixtures_dir() + "/sysfs/dgx-spark");
    s.devices = std::move(r.devices);
    auto link = [](std::string name, std::string addr) {
        Link l;
        l.name = std::move(name);
        l.addresses.push_back(Address{AF_INET, std::move(addr), 24, "global"});
        return l;
    };
    s.links = {link("enp1s0f0np0", "192.168.100.11"), link("enp1s0f1np1", "192.168.200.11")};
    for (auto& d : s.devices)
        for (auto& p : d.ports) {
            std::vector<std::string> v4;
            for (const auto& l : s.links)
                if (l.name == p.netdev)
                    for (const auto& a : l.addresses) v4.push_back(a.address);
            assign_roce_v2_gid(p, v4);
        }
    return s;
}

PeerRailConfig rail(std::string remote, std::string device = "", std::string iface = "", std::string local = "") {
    return PeerRailConfig{"rail0", std::move(iface), std::move(local), std::move(remote), std::move(device), ""};
}

}  // namespace

TEST(RailResolve, ByAddressFindsTheRoceV2GidHoldingIt) {
    auto s = spark();
    std::string why;
    auto c = find_rdma_port_by_address(s, "", "192.168.200.11", why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->device, "rocep1s0f1");
    EXPECT_EQ(c->port, 1u);
    EXPECT_EQ(c->gid_index, 3);
    EXPECT_EQ(c->netdev, "enp1s0f1np1");
    // The twin interface's address belongs to the twin device, not the rail.
    c = find_rdma_port_by_address(s, "", "192.168.100.15", why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->device, "roceP2p1s0f0");
    EXPECT_FALSE(find_rdma_port_by_address(s, "rocep1s0f0", "192.168.200.11", why));
    EXPECT_NE(why.find("no RoCE v2 GID holds 192.168.200.11 on rocep1s0f0"), std::string::npos) << why;
}

TEST(RailResolve, LocalEndInOrderOfWhatTheRailNames) {
    auto s = spark();
    std::string why;
    auto c = find_local_rail_port(s, rail("192.168.100.12", "", "", "192.168.100.11"), why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->device, "rocep1s0f0");
    EXPECT_EQ(c->gid_index, 3);
    c = find_local_rail_port(s, rail("192.168.200.12", "rocep1s0f1"), why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->device, "rocep1s0f1");
    EXPECT_EQ(c->gid_index, 3) << "the device's own RoCE v2 IPv4 GID";
    c = find_local_rail_port(s, rail("192.168.200.12", "", "enp1s0f1np1"), why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->device, "rocep1s0f1");
    // Nothing named: the subnet of the remote address picks the rail's own port, not the twin.
    c = find_local_rail_port(s, rail("192.168.100.12"), why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->device, "rocep1s0f0");
    EXPECT_FALSE(find_local_rail_port(s, rail("10.9.9.9"), why));
    EXPECT_NE(why.find("rail rail0: no RDMA port on the subnet of 10.9.9.9"), std::string::npos) << why;
    EXPECT_FALSE(find_local_rail_port(s, rail("192.168.100.12", "mlx5_9"), why));
    EXPECT_NE(why.find("no RDMA device mlx5_9"), std::string::npos) << why;
}

// The busy-skip, the rules' link rate and the config comparison see the same port for a
// rail however it is named; a rail named by its local address alone was skipped by the
// busy-skip once.
TEST(RailResolve, UtilisationAndRateOfARailHoweverItIsNamed) {
    auto s = spark();
    for (auto& d : s.devices)
        for (auto& p : d.ports) {
            p.rate_gbps = 200.0;
            if (d.name == "rocep1s0f1") p.rates["port_rcv_data"] = 0.5 * 200e9 / 8;  // half the link, in bytes/s
        }
    const PeerRailConfig named[] = {
        rail("192.168.200.12", "rocep1s0f1"),
        rail("192.168.200.12", "", "enp1s0f1np1"),
        rail("192.168.200.12", "", "", "192.168.200.11"),
        rail("192.168.200.12"),
    };
    for (const auto& r : named) {
        SCOPED_TRACE("device '" + r.local_device + "' interface '" + r.local_interface + "' address '" +
                     r.local_address + "'");
        auto u = rail_utilisation(s, r);
        ASSERT_TRUE(u);
        EXPECT_DOUBLE_EQ(*u, 0.5);
        EXPECT_EQ(rail_rate_bps(s, r), 200e9);
        EXPECT_EQ(rail_netdev(s, r), "enp1s0f1np1");
    }
    PeerConfig peer{.name = "b",
                    .address = "10.0.0.2:9879",
                    .rails = {rail("192.168.100.12", "", "", "192.168.100.11"), named[2]}};
    auto busiest = probe_utilisation(s, peer, nullptr);
    ASSERT_TRUE(busiest) << "a run over all rails is as busy as the busiest";
    EXPECT_DOUBLE_EQ(*busiest, 0.5);
    EXPECT_EQ(probe_utilisation(s, peer, &peer.rails[0]), 0.0);
    EXPECT_FALSE(rail_utilisation(s, rail("10.9.9.9")));
    // A named device is the rail's hardware even when its address sits elsewhere (a veth).
    EXPECT_EQ(rail_rate_bps(s, rail("10.77.1.2", "rocep1s0f1", "", "10.77.1.1")), 200e9);
}

TEST(RailResolve, SessionPortByAddressOrDevice) {
    auto s = spark();
    std::string why;
    auto c = find_session_port(s, "", -1, "192.168.100.11", why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->device, "rocep1s0f0");
    c = find_session_port(s, "rocep1s0f1", 5, "", why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->gid_index, 5) << "the peer's explicit GID index wins";
    EXPECT_FALSE(find_session_port(s, "", -1, "", why));
}

namespace {

json request(const std::string& kind, uint32_t size, uint64_t iterations, double seconds,
             json rails = json::array({json{{"name", "rail0"},
                                            {"device", ""},
                                            {"gid_index", -1},
                                            {"address", "192.168.100.11"},
                                            {"endpoints", json::array({json::object()})}}})) {
    return json{{"kind", kind},       {"message_size", size}, {"iterations", iterations},
                {"seconds", seconds}, {"timeout", 10.0},      {"rails", rails}};
}

}  // namespace

TEST(RdmaSession, ThePassiveSideGrantsNoMoreThanItsOwnBudget) {
    Config cfg;
    cfg.probes.rdma_bw.duration = std::chrono::seconds(2);
    cfg.probes.rdma_lat.count = 1000;
    auto s = spark();
    auto refused = [&](const json& req) {
        auto a = accept_rdma_session(cfg, s, req);
        EXPECT_FALSE(a.ok());
        return a.reply.value("reason", "") + ": " + a.reply.value("detail", "");
    };
    EXPECT_EQ(refused(request("rdma_write_bw", 65536, 0, 5)),
              "bad_target: a bandwidth run of 5 s; this daemon grants up to 2 s");
    EXPECT_EQ(refused(request("rdma_write_lat", 2, 5000, 0)),
              "bad_target: a latency run of 5000 iterations; this daemon grants 1..1000");
    EXPECT_EQ(refused(request("rdma_write_bw", 4u << 20, 0, 1)),
              "bad_target: message_size 4194304 is outside 1..65536 bytes that this daemon grants");
    EXPECT_EQ(refused(request("rdma_write_bw", 65536, 100, 0)),
              "bad_target: a bandwidth run of 100 messages per stream; this daemon grants timed runs only");
    EXPECT_EQ(refused(request("tcp_bw", 65536, 0, 1)),
              "bad_target: kind must be rdma_write_bw, rdma_write_lat or rdma_multirail_bw");
    auto five_qps = json::array(
        {json{{"name", "rail0"}, {"address", "192.168.100.11"}, {"endpoints", json::array({{}, {}, {}, {}, {}})}}});
    EXPECT_EQ(refused(request("rdma_write_bw", 65536, 0, 1, five_qps)),
              "bad_target: rail rail0: 5 QPs; this daemon grants up to 2");
    auto two_rails = json::array({five_qps[0], five_qps[0]});
    EXPECT_EQ(refused(request("rdma_write_lat", 2, 10, 0, two_rails)),
              "bad_target: 2 rails asked for a rdma_write_lat run");
}

TEST(RdmaSession, MalformedRequestsAndMissingDevicesAreNamed) {
    Config cfg;
    auto s = spark();
    auto refused = [&](const json& req) {
        auto a = accept_rdma_session(cfg, s, req);
        EXPECT_FALSE(a.ok());
        return a.reply.value("reason", "") + ": " + a.reply.value("detail", "");
    };
    EXPECT_EQ(refused(json::array()), "protocol_error: the request is not a JSON object");
    EXPECT_EQ(refused(json{{"kind", "rdma_write_lat"}, {"message_size", "two"}}).substr(0, 15), "protocol_error:");
    // Numbers a peer sends are whole and in range, or refused: a float or a wrapped integer
    // must never reach a cast (undefined behaviour) or a smaller budget check.
    for (const json& bad : {json(1e20), json(-1), json(2.5), json(uint64_t{1} << 40)}) {
        auto req = request("rdma_write_lat", 2, 10, 0);
        req["message_size"] = bad;
        EXPECT_EQ(refused(req), "protocol_error: message_size and iterations must be non-negative integers in range")
            << bad.dump();
    }
    auto float_iterations = request("rdma_write_lat", 2, 10, 0);
    float_iterations["iterations"] = 1e30;
    EXPECT_EQ(refused(float_iterations).substr(0, 15), "protocol_error:");
    auto no_rails = request("rdma_write_lat", 2, 10, 0);
    no_rails.erase("rails");
    EXPECT_EQ(refused(no_rails), "protocol_error: rails missing");
    auto elsewhere = json::array(
        {json{{"name", "rail0"}, {"address", "10.0.0.1"}, {"endpoints", json::array({json::object()})}}});
    EXPECT_EQ(refused(request("rdma_write_lat", 2, 10, 0, elsewhere)).substr(0, 47),
              "device_not_found: rail rail0: no RoCE v2 GID ho");
    // An endpoint info that does not parse is named before any device is touched.
    auto r = refused(request("rdma_write_lat", 2, 10, 0));
    EXPECT_EQ(r, "protocol_error: rail rail0: device: missing");
    // The fixture's device is in the snapshot, but this machine has no such verbs device.
    RdmaEndpointInfo remote;
    remote.device = "rocep1s0f0";
    remote.gid_index = 3;
    remote.gid = *gid_from_string("0000:0000:0000:0000:0000:ffff:c0a8:640c");
    remote.gid_type = "RoCE v2";
    remote.qpn = 0x11;
    remote.rkey = 7;
    remote.addr = 0x1000;
    remote.size = 4096;
    remote.active_mtu = 4096;
    auto good = json::array(
        {json{{"name", "rail0"}, {"address", "192.168.100.11"}, {"endpoints", json::array({json(remote)})}}});
    r = refused(request("rdma_write_lat", 2, 10, 0, good));
    EXPECT_EQ(r.substr(0, 30), "device_not_found: rail rail0: ") << r;
    EXPECT_NE(r.find("rocep1s0f0"), std::string::npos) << r;
}

TEST(RdmaSession, TheActiveSideFailsLocallyWithoutAskingThePeer) {
    Config cfg;
    auto s = spark();
    ProbeJob job{PeerConfig{"spark-b", "192.168.100.12:9879", {rail("192.168.100.12", "rocep1s0f0")}},
                 rail("192.168.100.12", "rocep1s0f0"), ProbeKind::rdma_write_lat, std::nullopt};
    int asked = 0;
    auto exchange = [&](const json&, Deadline) {
        ++asked;
        return SessionReply{};
    };
    auto r = run_rdma_job(cfg, &s, job, exchange, Deadline::after(std::chrono::seconds(5)));
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.reason, reason::device_not_found) << r.detail;  // no verbs device here
    EXPECT_EQ(asked, 0);
    job.rail = rail("10.9.9.9");
    r = run_rdma_job(cfg, &s, job, exchange, Deadline::after(std::chrono::seconds(5)));
    EXPECT_EQ(r.reason, reason::device_not_found);
    EXPECT_NE(r.detail.find("no RDMA port on the subnet of 10.9.9.9"), std::string::npos) << r.detail;
    r = run_rdma_job(cfg, nullptr, job, exchange, Deadline::after(std::chrono::seconds(5)));
    EXPECT_EQ(r.detail, "no snapshot yet");
    EXPECT_EQ(asked, 0);
}

// ---- the peer-probing token: token file, else the systemd credential

namespace {

struct TokenDir {
    std::string path;
    TokenDir() {
        char tmpl[] = "/tmp/rw-token-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TokenDir() { std::filesystem::remove_all(path); }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path + "/" + name) << text;
        return path + "/" + name;
    }
};

const std::string kHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

}  // namespace

TEST(ProbeToken, TokenFileWinsOverCredential) {
    TokenDir d;
    const auto file = d.write("file.token", "  " + kHex + "\n");
    d.write(kTokenCredential, std::string(64, 'f'));
    auto t = find_probe_token(file, d.path);
    ASSERT_TRUE(t.token) << t.why;
    EXPECT_EQ(token_to_hex(*t.token), kHex);
    EXPECT_EQ(t.source, file);
}

TEST(ProbeToken, CredentialWhenNoTokenFile) {
    TokenDir d;
    const auto cred = d.write(kTokenCredential, kHex + "\n");
    auto t = find_probe_token("", d.path);
    ASSERT_TRUE(t.token) << t.why;
    EXPECT_EQ(token_to_hex(*t.token), kHex);
    EXPECT_EQ(t.source, cred);
}

TEST(ProbeToken, NeitherSaysWhereToPutIt) {
    TokenDir d;  // a credentials directory without our credential
    for (const std::string& dir : {std::string(), d.path}) {
        auto t = find_probe_token("", dir);
        EXPECT_FALSE(t.token);
        EXPECT_NE(t.why.find("no [probes] token_file configured"), std::string::npos) << t.why;
        EXPECT_NE(t.why.find("/etc/credstore/rocewatch-peer-token"), std::string::npos) << t.why;
    }
}

TEST(ProbeToken, BadFilesAreNamed) {
    TokenDir d;
    auto missing = find_probe_token(d.path + "/nope", "");
    EXPECT_FALSE(missing.token);
    EXPECT_EQ(missing.why, "token file " + d.path + "/nope cannot be read (No such file or directory)");

    const auto short_one = d.write("short", "abcd");
    auto bad = find_probe_token(short_one, "");
    EXPECT_FALSE(bad.token);
    EXPECT_EQ(bad.why, "token file " + short_one + " does not hold 64 hex digits");

    // A garbled credential is not passed over for "none": it says what is wrong with it.
    const auto cred = d.write(kTokenCredential, "not hex");
    auto garbled = find_probe_token("", d.path);
    EXPECT_FALSE(garbled.token);
    EXPECT_EQ(garbled.why, "token file " + cred + " does not hold 64 hex digits");
}

// The UCX session's passive side refuses, before it spawns a child, whatever is over this
// daemon's own [probes.ucx_*] settings (the same budget check as the RDMA session's).
TEST(UcxSession, RefusesWhatOurConfigDoesNotGrant) {
    Config cfg;
    cfg.probes.ucx_lat.count = 200;
    cfg.probes.ucx_lat.size = 8;
    cfg.probes.ucx_bw.duration = std::chrono::seconds(2);
    cfg.probes.ucx_bw.message_size = 65536;
    auto refused = [&](json req) {
        req["timeout"] = 10;
        req["endpoint"] = json::object();
        auto a = accept_ucx_session(cfg, req, "/nonexistent/rocewatchd");
        EXPECT_FALSE(a.ok());
        return a.reply.value("reason", "") + ": " + a.reply.value("detail", "");
    };
    EXPECT_EQ(refused({{"kind", "ucx_put_lat"}, {"message_size", 8}, {"iterations", 201}}),
              "bad_target: a latency run of 201 iterations; this daemon grants 1..200");
    EXPECT_EQ(refused({{"kind", "ucx_put_lat"}, {"message_size", 9}, {"iterations", 10}}),
              "bad_target: message_size 9 is outside 1..8 bytes that this daemon grants");
    EXPECT_EQ(refused({{"kind", "ucx_put_bw"}, {"message_size", 65536}, {"seconds", 2.5}}),
              "bad_target: a bandwidth run of 2.5 s; this daemon grants up to 2 s");
    EXPECT_EQ(refused({{"kind", "ucx_put_bw"}, {"message_size", 65536}, {"iterations", 1000}}),
              "bad_target: a bandwidth run of 1000 messages per stream; this daemon grants timed runs only");
    EXPECT_EQ(refused({{"kind", "rdma_write_bw"}, {"message_size", 65536}, {"seconds", 1}}),
              "bad_target: kind must be ucx_put_bw or ucx_put_lat");
    // Within the budget it goes on to start the session child: here there is none to start.
    EXPECT_EQ(refused({{"kind", "ucx_put_bw"}, {"message_size", 65536}, {"seconds", 2}}).substr(0, 16),
              "local_resources:");
}

// ---------------------------------------------------------------- ending a session early

TEST(Deadline, CancelFlagPullsItIn) {
    std::atomic<bool> flag{false};
    Deadline d = Deadline::after(std::chrono::seconds(30));
    d.cancel = &flag;
    EXPECT_FALSE(d.expired());
    EXPECT_GT(d.remaining_seconds(), 29.0);
    EXPECT_EQ(d.wait_slice(), std::chrono::duration_cast<SteadyClock::duration>(Deadline::kCancelSlice));
    // min() keeps the flag whichever side holds it.
    EXPECT_EQ(Deadline::after(std::chrono::seconds(60)).min(d).cancel, &flag);
    EXPECT_EQ(d.min(Deadline::after(std::chrono::seconds(1))).cancel, &flag);
    flag = true;
    EXPECT_TRUE(d.expired());
    EXPECT_TRUE(d.cancelled());
    EXPECT_EQ(d.remaining_seconds(), 0.0);
    const timespec ts = d.remaining_timespec();
    EXPECT_EQ(ts.tv_sec, 0);
    EXPECT_EQ(ts.tv_nsec, 0);
    // Without a flag a wait may block for all that is left.
    const Deadline plain = Deadline::after(std::chrono::seconds(30));
    EXPECT_GT(plain.wait_slice(), std::chrono::seconds(29));
    EXPECT_FALSE(plain.cancelled());
}

TEST(SessionEnd, RequestAndGrantedIdRoundTrip) {
    std::vector<json> sent;
    SessionExchange exchange = [&](const json& request, Deadline d) {
        sent.push_back(request);
        EXPECT_LE(d.remaining_seconds(), 1.0);  // best effort, a second at most
        return SessionReply{json{{"ended", true}}, "", ""};
    };
    EXPECT_EQ(granted_session(json{{"rails", json::array()}, {"session", "0123456789abcdef"}}), "0123456789abcdef");
    EXPECT_EQ(granted_session(json{{"rails", json::array()}}), "");  // a CLI's passive side names none
    EXPECT_EQ(granted_session(json{{"session", 42}}), "");           // not a string: none
    EXPECT_EQ(granted_session(json::array()), "");
    end_session(exchange, "");
    EXPECT_TRUE(sent.empty()) << "nothing is sent without an id";
    end_session(exchange, "0123456789abcdef");
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(end_session_request(sent[0]), "0123456789abcdef");
    EXPECT_EQ(end_session_request(json{{"kind", "rdma_write_bw"}}), "");
    EXPECT_EQ(end_session_request(json{{"end_session", 7}}), "");
    // A transport that throws does not reach the caller.
    end_session([](const json&, Deadline) -> SessionReply { throw std::runtime_error("down"); }, "ab");
}

TEST(SessionHost, AnEndedSessionFreesTheHostAtOnce) {
    SessionHost host;
    ASSERT_TRUE(host.try_claim());
    const std::string id = host.id();
    EXPECT_EQ(id.size(), 16u);
    EXPECT_FALSE(host.try_claim()) << "one session at a time";
    Deadline d = Deadline::after(std::chrono::seconds(30));
    d.cancel = host.cancel_flag();
    std::promise<double> waited;
    auto f = waited.get_future();
    host.run([d, &waited] {
        const auto t0 = SteadyClock::now();
        while (!d.expired()) std::this_thread::sleep_for(d.wait_slice());
        waited.set_value(std::chrono::duration<double>(SteadyClock::now() - t0).count());
    });
    EXPECT_FALSE(host.cancel("ffffffffffffffff")) << "another session's id ends nothing";
    EXPECT_FALSE(host.cancel(""));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(host.busy());
    EXPECT_TRUE(host.cancel(id));
    ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    EXPECT_LT(f.get(), 5.0);
    for (int i = 0; i < 100 && host.busy(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_FALSE(host.busy());
    EXPECT_FALSE(host.cancel(id)) << "an ended session cannot be ended again";
    // The next claim is a fresh session: new id, flag down.
    ASSERT_TRUE(host.try_claim());
    EXPECT_NE(host.id(), id);
    EXPECT_FALSE(host.cancel_flag()->load());
    host.release();
}

TEST(SessionHost, StopEndsTheRunningSession) {
    SessionHost host;
    ASSERT_TRUE(host.try_claim());
    Deadline d = Deadline::after(std::chrono::seconds(30));
    d.cancel = host.cancel_flag();
    host.run([d] {
        while (!d.expired()) std::this_thread::sleep_for(d.wait_slice());
    });
    const auto t0 = SteadyClock::now();
    host.stop();
    EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - t0).count(), 5.0);
    EXPECT_FALSE(host.try_claim()) << "a stopped host takes no more sessions";
}

// Where the data port binds, and when that keeps peers' rail probes out: the host of listen
// unless probes.data_listen says otherwise; a warning only for a one-address listen it inherits.
TEST(DataPort, BindsListensHostUnlessDataListenIsSet) {
    ProbesConfig p;
    EXPECT_EQ(data_listen_host(p, "10.1.2.3"), "10.1.2.3");
    EXPECT_EQ(data_listen_host(p, ""), "");
    const auto inherited = data_port_reach_warning(p, "10.1.2.3");
    ASSERT_TRUE(inherited);
    EXPECT_NE(inherited->find("listens on 10.1.2.3 only"), std::string::npos) << *inherited;
    EXPECT_NE(inherited->find("probes.data_listen = \"\""), std::string::npos) << *inherited;
    for (const char* every : {"", "0.0.0.0", "::"}) EXPECT_EQ(data_port_reach_warning(p, every), std::nullopt) << every;
    p.data_listen = "";
    EXPECT_EQ(data_listen_host(p, "10.1.2.3"), "");
    EXPECT_EQ(data_port_reach_warning(p, "10.1.2.3"), std::nullopt);
    p.data_listen = "192.168.100.11";  // a rail's address, chosen for the data port
    EXPECT_EQ(data_listen_host(p, "10.1.2.3"), "192.168.100.11");
    EXPECT_EQ(data_port_reach_warning(p, "10.1.2.3"), std::nullopt);
}
