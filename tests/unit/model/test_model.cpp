// Model helpers: health roll-up, string forms, the probe history.
#include <gtest/gtest.h>

#include <thread>

#include "daemon/model/config.hpp"
#include "daemon/model/driver_stats.hpp"
#include "daemon/model/probe.hpp"
#include "daemon/model/snapshot.hpp"

using namespace rocewatch;

TEST(Model, HealthIsWorstFiringAlert) {
    Snapshot s;
    EXPECT_EQ(overall_health(s), Health::healthy);
    s.alerts.push_back({.rule = "mtu_low", .severity = Severity::warning, .state = AlertState::firing});
    EXPECT_EQ(overall_health(s), Health::warning);
    s.alerts.push_back({.rule = "port_down", .severity = Severity::critical, .state = AlertState::pending});
    EXPECT_EQ(overall_health(s), Health::warning) << "pending alerts do not count yet";
    s.alerts.back().state = AlertState::firing;
    EXPECT_EQ(overall_health(s), Health::critical);
}

TEST(Model, SeverityRoundTrip) {
    for (auto sev : {Severity::info, Severity::warning, Severity::critical})
        EXPECT_EQ(severity_from_string(to_string(sev)), sev);
    EXPECT_FALSE(severity_from_string("fatal"));
}

TEST(Model, RuleSettingsDefaultWhenAbsent) {
    Config c;
    c.rules["mtu_low"].enabled = false;
    EXPECT_FALSE(rule_settings(c, "mtu_low").enabled);
    EXPECT_TRUE(rule_settings(c, "port_down").enabled);
}

// A long busy spell (the peer serving others, our rail busy) is one history entry that
// counts itself, so the last real run stays in the history for the verdicts.
TEST(ProbeBookHistory, ProbesThatDidNotRunCollapseAndLastRunFindsTheRealOne) {
    ProbeBook b;
    auto make = [](bool ok, std::string reason) {
        ProbeResult r;
        r.peer = "spark-b";
        r.rail = "rail0";
        r.kind = ProbeKind::rdma_write_bw;
        r.success = ok;
        r.reason = std::move(reason);
        return r;
    };
    const ProbeKey key{"spark-b", "rail0", ProbeKind::rdma_write_bw};
    b.add(make(true, ""));
    for (size_t i = 0; i < 3 * ProbeBook::kHistoryLimit; ++i) b.add(make(false, kReasonPeerBusy));
    const auto& h = b.results.at(key);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h.back().info.at("repeated"), std::to_string(3 * ProbeBook::kHistoryLimit));
    ASSERT_NE(last_run(h), nullptr);
    EXPECT_TRUE(last_run(h)->success);
    EXPECT_FALSE(probe_ran(*b.latest(key)));

    // A different reason is a new entry; a real run after them is kept as such.
    b.add(make(false, kReasonSkippedBusy));
    b.add(make(false, "timeout"));
    b.add(make(false, "timeout"));
    EXPECT_EQ(b.results.at(key).size(), 5u) << "failed runs are all kept";
    EXPECT_EQ(last_run(b.results.at(key))->reason, "timeout");
    EXPECT_EQ(last_run(std::deque<ProbeResult>{make(false, kReasonPeerBusy)}), nullptr);
}

// The driver statistics that mean something for lossless RoCE, by their mlx5 and bnxt_en
// names; anything else (veth's peer_ifindex, mlx5's rx_prio3_bytes) means nothing here.
TEST(DriverStats, MeaningsOfMlx5AndBnxtNames) {
    using K = DriverStatKind;
    const auto m = [](std::string_view n) { return driver_stat_meaning(n); };
    ASSERT_TRUE(m("rx_prio3_pause"));
    EXPECT_EQ(m("rx_prio3_pause")->kind, K::pause_frames);
    EXPECT_EQ(m("rx_prio3_pause")->direction, "rx");
    EXPECT_EQ(m("rx_prio3_pause")->priority, 3);
    EXPECT_EQ(m("tx_prio7_pause")->direction, "tx");
    EXPECT_EQ(m("tx_prio7_pause")->priority, 7);
    EXPECT_EQ(m("rx_pause_ctrl_phy")->priority, -1);
    EXPECT_EQ(m("tx_pause_frames")->priority, -1);
    EXPECT_EQ(m("rx_pfc_ena_frames_pri3")->priority, 3);
    EXPECT_EQ(m("tx_pause_storm_warning_events")->kind, K::pause_storm);
    EXPECT_EQ(m("tx_pause_storm_warning_events")->level, "warning");
    EXPECT_EQ(m("tx_pause_storm_error_events")->level, "error");
    EXPECT_EQ(m("rx_discards_phy")->kind, K::discards);
    EXPECT_EQ(m("rx_discards_phy")->priority, -1);
    EXPECT_EQ(m("rx_prio3_discards")->priority, 3);
    EXPECT_EQ(m("fec_uncorrectable_blocks")->kind, K::fec_blocks);
    EXPECT_EQ(m("fec_uncorrectable_blocks")->level, "uncorrectable");
    EXPECT_EQ(m("fec_corrected_blocks")->level, "corrected");
    for (const char* other : {"peer_ifindex", "rx_prio3_bytes", "rx_prio8_pause", "rx_prio3_pause_duration",
                              "rx_prio33_pause", "xx_prio3_pause", "rx_pfc_ena_frames_pri", "", "tx_discards_phy"})
        EXPECT_FALSE(m(other)) << other;
}

// ---------------------------------------------------------------- SharedMap

TEST(SharedMap, CopiesShareOneMapUntilOneIsChanged) {
    SharedMap<uint64_t> a{{"port_rcv_data", 1}, {"symbol_error", 0}};
    const SharedMap<uint64_t> b = a;  // a snapshot carrying a's counters over
    EXPECT_TRUE(b.shares_with(a));
    EXPECT_EQ(&b.map(), &a.map()) << "no copy of the counters";
    a["port_rcv_data"] = 2;  // the one a copy shares is changed: it gets its own first
    EXPECT_FALSE(b.shares_with(a));
    EXPECT_EQ(b.at("port_rcv_data"), 1u) << "the copy keeps what it had";
    EXPECT_EQ(a.at("port_rcv_data"), 2u);

    SharedMap<uint64_t> c = b;  // a copy changed: copied first, the original untouched
    c["link_downed"] = 1;
    EXPECT_FALSE(b.contains("link_downed"));
    EXPECT_EQ(c.size(), 3u);

    // Made here and shared with nobody: changed in place, no copy per change.
    const auto* before = &a.map();
    a.emplace("link_downed", 0);
    a.edit()["symbol_error"] = 7;
    EXPECT_EQ(&a.map(), before);
}

TEST(SharedMap, AMapOnceSharedIsNeverChangedInPlaceByACopy) {
    SharedMap<double> made{{"np_cnp_sent", 1.0}};
    SharedMap<double> copy = made;
    {
        const SharedMap<double> gone = made;  // shares, then goes
    }
    copy["np_cnp_sent"] = 2.0;
    EXPECT_EQ(made.at("np_cnp_sent"), 1.0) << "a copy changing the map it shares changes only its own";
    made["np_cnp_sent"] = 3.0;  // the maker, alone on its map now: in place
    EXPECT_EQ(copy.at("np_cnp_sent"), 2.0);

    SharedMap<double> moved = std::move(made);  // a move hands the map on, with its ownership
    const auto* before = &moved.map();
    moved["np_cnp_sent"] = 4.0;
    EXPECT_EQ(&moved.map(), before);
}

TEST(SharedMap, EmptyClearedAndComparedAsAMap) {
    SharedMap<uint64_t> m;
    EXPECT_TRUE(m.empty());
    EXPECT_EQ(m.size(), 0u);
    EXPECT_EQ(m.begin(), m.end());
    EXPECT_FALSE(m.contains("x"));
    EXPECT_EQ(m.find("x"), m.end());
    EXPECT_THROW((void)m.at("x"), std::out_of_range);
    m = std::map<std::string, uint64_t>{{"x", 1}};
    const SharedMap<uint64_t> kept = m;
    m.clear();
    EXPECT_TRUE(m.empty());
    EXPECT_EQ(kept.at("x"), 1u) << "clearing one drops its share only";
    EXPECT_EQ(kept, (std::map<std::string, uint64_t>{{"x", 1}}));
    EXPECT_EQ(m, SharedMap<uint64_t>{});
    EXPECT_FALSE(m == kept);
}

// Every map holds a name as a view of the one copy in the process's table: the ports of a
// model, and a port's counters, rates and trend series, share their names.
TEST(FlatMap, NamesAreHeldOnceForTheProcess) {
    const std::size_t before = CounterNames::size();
    FlatMap<uint64_t> a;
    FlatMap<double> b;
    {
        std::string name = "rx_icrc_encapsulated_test";  // past the short-string buffer
        a.insert_or_assign(name, 1);
        b[name] = 2.0;
        name.assign("overwritten_overwritten_x");  // the maps did not keep the caller's string
    }
    ASSERT_EQ(a.begin()->first, "rx_icrc_encapsulated_test");
    EXPECT_EQ(a.begin()->first.view().data(), b.begin()->first.view().data()) << "one copy of the name";
    EXPECT_EQ(a.begin()->first.view().data(), CounterNames::intern("rx_icrc_encapsulated_test").data());
    EXPECT_EQ(CounterNames::size(), before + 1);
    (void)a.find("not_held");  // a lookup adds nothing
    EXPECT_EQ(CounterNames::size(), before + 1);
    EXPECT_TRUE(CounterNames::has_room("rx_icrc_encapsulated_test"));
}

// A name's id stands for the one held copy: the same id for the same name, from any thread,
// and name(id) is that copy.
TEST(CounterNames, AnIdNamesTheHeldCopy) {
    const CounterNames::Id a = CounterNames::id("np_cnp_sent_id_test");
    const CounterNames::Id b = CounterNames::id(std::string("rp_cnp_handled_id_test_long_name"));
    EXPECT_NE(a, b);
    EXPECT_EQ(CounterNames::id("np_cnp_sent_id_test"), a);
    EXPECT_EQ(CounterNames::name(a), "np_cnp_sent_id_test");
    EXPECT_EQ(CounterNames::name(b).data(), CounterNames::intern("rp_cnp_handled_id_test_long_name").data());
    // Past a chunk of the id table (256 names), from four threads at once.
    std::vector<std::thread> threads;
    std::vector<std::vector<CounterNames::Id>> ids(4);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([t, &ids] {
            for (int i = 0; i < 300; ++i) ids[t].push_back(CounterNames::id("id_test_" + std::to_string(i)));
        });
    for (auto& t : threads) t.join();
    for (int i = 0; i < 300; ++i) {
        EXPECT_EQ(CounterNames::name(ids[0][i]), "id_test_" + std::to_string(i));
        for (int t = 1; t < 4; ++t) EXPECT_EQ(ids[t][i], ids[0][i]);
    }
}

TEST(CounterName, ReadsComparesAndOrdersAsItsNameNotItsId) {
    const CounterName late("zz_name_test_b");  // held first: the smaller id
    const CounterName early("zz_name_test_a");
    EXPECT_EQ(late.view(), "zz_name_test_b");
    EXPECT_EQ(std::string_view(early), "zz_name_test_a");
    EXPECT_LT(early, late) << "a FlatMap is sorted by name";
    EXPECT_LT(early, std::string_view("zz_name_test_aa"));
    EXPECT_EQ(late, CounterName("zz_name_test_b"));
    EXPECT_EQ(late, std::string_view("zz_name_test_b"));
    EXPECT_NE(late, early);
    EXPECT_EQ(sizeof(FlatMap<uint64_t>::value_type), 16u) << "4-byte name, 8-byte value";
}

TEST(FlatMap, AppendTakesOnlyANameThatSortsLast) {
    FlatMap<uint64_t> m;
    m.append("b", 1);
    m.append("c", 2);
    EXPECT_THROW(m.append("a", 3), std::logic_error);
    EXPECT_THROW(m.append("c", 4), std::logic_error) << "a name held already";
    EXPECT_EQ(m, (FlatMap<uint64_t>{{"b", 1}, {"c", 2}}));
}

TEST(FlatMap, KeepsNamesSortedHoweverTheyCome) {
    FlatMap<uint64_t> m;
    m.insert_or_assign("port_rcv_data", 1);  // in listing order: appended
    m.insert_or_assign("port_xmit_data", 2);
    m.insert_or_assign("link_downed", 3);  // out of order: put in its place
    m["symbol_error"] = 4;
    m.insert_or_assign("port_rcv_data", 5);  // there already: replaced
    EXPECT_FALSE(m.emplace("link_downed", 9).second) << "emplace leaves what is there";
    EXPECT_TRUE(m.emplace("excessive_buffer_overrun_errors", 6).second);
    std::vector<std::pair<std::string, uint64_t>> seen(m.begin(), m.end());
    EXPECT_EQ(seen, (std::vector<std::pair<std::string, uint64_t>>{{"excessive_buffer_overrun_errors", 6},
                                                                   {"link_downed", 3},
                                                                   {"port_rcv_data", 5},
                                                                   {"port_xmit_data", 2},
                                                                   {"symbol_error", 4}}));
    EXPECT_EQ(m.at("port_xmit_data"), 2u);
    EXPECT_EQ(m.find("port_xmit"), m.end()) << "a prefix is not a name";
    EXPECT_FALSE(m.contains("zzz"));
    EXPECT_THROW((void)m.at("aaa"), std::out_of_range);
    EXPECT_EQ(m.erase("link_downed"), 1u);
    EXPECT_EQ(m.erase("link_downed"), 0u);
    EXPECT_EQ(m.size(), 4u);
    EXPECT_EQ(m, (FlatMap<uint64_t>{{"symbol_error", 4},
                                    {"port_xmit_data", 2},
                                    {"port_rcv_data", 5},
                                    {"excessive_buffer_overrun_errors", 6}}))
        << "built in any order, the same map";
    const std::map<std::string, uint64_t> as_map(m.begin(), m.end());
    EXPECT_EQ(FlatMap<uint64_t>(as_map), m);
}
