// An RDMA probe session between two nodes, independent of the transport: see the header.
#include "probes/rdma_session.hpp"

#include <algorithm>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>

#include "probes/errors.hpp"
#include "probes/result.hpp"
#include "util/json_int.hpp"

namespace rocewatch {
namespace {

using nlohmann::json;

std::optional<uint64_t> read_u64(const std::string& path) {
    std::ifstream f(path);
    uint64_t v = 0;
    if (f >> v) return v;
    return std::nullopt;
}

std::string read_word(const std::string& path) {
    std::ifstream f(path);
    std::string s;
    f >> s;
    return s;
}

bool bandwidth_kind(ProbeKind k) { return k == ProbeKind::rdma_write_bw || k == ProbeKind::rdma_multirail_bw; }

std::optional<ProbeKind> session_kind(const std::string& s) {
    auto k = probe_kind_from_string(s);
    if (k && (bandwidth_kind(*k) || *k == ProbeKind::rdma_write_lat)) return k;
    return std::nullopt;
}

uint32_t buffer_for(uint32_t message_size) { return std::max<uint32_t>(2 * message_size, 1u << 20); }

// A refusal as the passive side answers it.
RdmaSessionAccept refuse(const std::string& reason, const std::string& detail) {
    return RdmaSessionAccept{json{{"reason", reason}, {"detail", detail}}, {}};
}

}  // namespace

RdmaTxCounter rdma_tx_counter(const std::string& sysfs_root, const std::string& device, uint8_t port, int gid_index) {
    const std::string dir = sysfs_root + "/class/infiniband/" + device + "/ports/" + std::to_string(port);
    if (read_u64(dir + "/counters/port_xmit_data")) return {dir + "/counters/port_xmit_data", 4, "port_xmit_data"};
    if (gid_index >= 0) {
        const auto ndev = read_word(dir + "/gid_attrs/ndevs/" + std::to_string(gid_index));
        if (!ndev.empty()) return {sysfs_root + "/class/net/" + ndev + "/statistics/tx_bytes", 1, ndev + " tx_bytes"};
    }
    return {};
}

std::optional<uint64_t> read_tx_counter(const RdmaTxCounter& c) {
    if (c.path.empty()) return std::nullopt;
    auto v = read_u64(c.path);
    if (!v) return std::nullopt;
    return *v * c.scale;
}

json rdma_session_request(const RdmaClientPlan& plan, const std::vector<json>& rail_endpoints, double timeout_seconds) {
    const bool lat = plan.kind == ProbeKind::rdma_write_lat;
    json rails = json::array();
    for (size_t i = 0; i < plan.rails.size(); ++i) {
        const auto& r = plan.rails[i];
        rails.push_back(json{{"name", r.name},
                             {"device", r.remote_device},
                             {"gid_index", r.remote_gid_index},
                             {"address", r.remote_address},
                             {"endpoints", i < rail_endpoints.size() ? rail_endpoints[i] : json::array()}});
    }
    return json{{"kind", to_string(plan.kind)},
                {"message_size", lat ? plan.lat.message_size : plan.bw.message_size},
                {"iterations", lat ? plan.lat.iterations : plan.bw.iterations},
                {"seconds", lat ? 0.0 : plan.bw.seconds},
                {"timeout", timeout_seconds},
                {"rails", rails}};
}

namespace {

// The active side's endpoints, one per QP per rail, and what the peer is sent of them.
struct ActiveRails {
    std::vector<std::unique_ptr<RdmaEndpoint>> owned;
    std::vector<RdmaRail> rails;
    std::vector<json> infos;
};

RdmaStatus open_active_rails(const RdmaClientPlan& plan, uint32_t qps, uint32_t size, ActiveRails& a) {
    for (const auto& rp : plan.rails) {
        RdmaRail rail;
        rail.name = rp.name;
        json infos = json::array();
        for (uint32_t q = 0; q < qps; ++q) {
            RdmaEndpointOptions o = rp.local;
            o.buffer_size = buffer_for(size);
            o.max_send_wr = std::max<uint32_t>(plan.bw.tx_depth + 8, 16);
            auto opened = RdmaEndpoint::open(o);
            if (!opened.endpoint) return {opened.status.reason, "rail " + rp.name + ": " + opened.status.detail};
            infos.push_back(opened.endpoint->info());
            rail.endpoints.push_back(opened.endpoint.get());
            a.owned.push_back(std::move(opened.endpoint));
        }
        a.infos.push_back(std::move(infos));
        a.rails.push_back(std::move(rail));
    }
    return {};
}

// Connects every endpoint to the one the peer's answer pairs it with.
RdmaStatus connect_to_answer(const json& rep, std::vector<RdmaRail>& rails) {
    const auto rr = rep.find("rails");
    if (rr == rep.end() || !rr->is_array() || rr->size() != rails.size())
        return {reason::protocol_error, "the peer answered for a different number of rails"};
    for (size_t i = 0; i < rails.size(); ++i) {
        const auto& r = (*rr)[i];
        const auto eps = r.is_object() ? r.find("endpoints") : r.end();
        if (eps == r.end() || !eps->is_array() || eps->size() != rails[i].endpoints.size())
            return {reason::protocol_error,
                    "rail " + rails[i].name + ": the peer answered for a different number of QPs"};
        for (size_t k = 0; k < eps->size(); ++k) {
            auto parsed = parse_endpoint_info((*eps)[k]);
            if (!parsed.info) return {reason::protocol_error, "rail " + rails[i].name + ": " + parsed.error};
            auto st = rails[i].endpoints[k]->connect(*parsed.info);
            if (!st.ok()) return {st.reason, "rail " + rails[i].name + ": " + st.detail};
            rails[i].remotes.push_back(*parsed.info);
        }
    }
    return {};
}

// The run itself, with each rail's transmit counter read around it (the exchange before
// may have crossed a rail, so only the data phase counts) and each rail's path.
ProbeResult run_counted(const RdmaClientPlan& plan, std::vector<RdmaRail>& rails, uint32_t qps, Deadline deadline) {
    std::vector<RdmaTxCounter> counters;
    std::vector<std::optional<uint64_t>> before;
    for (auto& rail : rails) {
        const auto& e = rail.endpoints[0]->info();
        counters.push_back(rdma_tx_counter(plan.sysfs_root, e.device, e.port, e.gid_index));
        before.push_back(read_tx_counter(counters.back()));
    }
    ProbeResult r;
    if (plan.kind == ProbeKind::rdma_write_lat)
        r = rdma_write_lat(*rails[0].endpoints[0], rails[0].remotes[0], plan.lat, deadline);
    else if (rails.size() == 1 && qps == 1)
        r = rdma_write_bw(*rails[0].endpoints[0], rails[0].remotes[0], plan.bw, deadline);
    else
        r = rdma_multirail_bw(rails, plan.bw, deadline);
    for (size_t i = 0; i < rails.size(); ++i) {
        r.info["rail." + rails[i].name + ".counter"] = counters[i].source.empty() ? "none" : counters[i].source;
        if (!before[i]) continue;
        if (auto after = read_tx_counter(counters[i]); after && *after >= *before[i])
            r.bytes_per_rail[rails[i].name] = *after - *before[i];
    }
    for (const auto& rail : rails) {
        const auto& e = rail.endpoints[0]->info();
        const auto& re = rail.remotes[0];
        r.info["rail." + rail.name + ".path"] = e.device + "/" + std::to_string(e.port) + " gid " +
                                                std::to_string(e.gid_index) + " -> " + re.device + "/" +
                                                std::to_string(re.port) + " gid " + std::to_string(re.gid_index);
    }
    return r;
}

}  // namespace

ProbeResult rdma_probe_run(const RdmaClientPlan& plan, const SessionExchange& exchange, Deadline deadline) {
    const auto t0 = SteadyClock::now();
    const ProbeKind kind = plan.kind;
    std::string granted_id;  // the peer's session, once granted: ended early if our side fails
    auto done = [&](ProbeResult r) {
        r.kind = kind;
        if (plan.rails.size() == 1 && r.rail.empty()) r.rail = plan.rails[0].name;
        if (!r.success) end_session(exchange, granted_id);
        r.duration_seconds = seconds_between(t0, SteadyClock::now());
        return r;
    };
    auto failed = [&](const RdmaStatus& st) { return done(failed_result(kind, st.reason, st.detail)); };
    try {
        if (!session_kind(to_string(kind)) || plan.rails.empty() ||
            (kind != ProbeKind::rdma_multirail_bw && plan.rails.size() != 1))
            return failed({reason::bad_target, "an RDMA probe needs one rail (all rails for multi-rail)"});
        const bool lat = kind == ProbeKind::rdma_write_lat;
        const uint32_t qps = lat ? 1 : std::max<uint32_t>(1, plan.qps_per_rail);
        ActiveRails a;
        if (auto st = open_active_rails(plan, qps, lat ? plan.lat.message_size : plan.bw.message_size, a); !st.ok())
            return failed(st);
        // The peer waits a little longer than we do, so it never gives up first.
        auto reply = exchange(rdma_session_request(plan, a.infos, deadline.remaining_seconds() + 2), deadline);
        if (!reply.body) return failed({reply.reason, reply.detail});
        const json& rep = *reply.body;
        if (!rep.is_object()) return failed({reason::protocol_error, "the peer's answer is not a JSON object"});
        if (rep.contains("reason"))
            return failed(
                {reason_from_peer(rep.value("reason", std::string())),
                 "peer: " + rep.value("detail", std::string("refused the RDMA session")).substr(0, kMaxPeerDetail)});
        granted_id = granted_session(rep);
        if (auto st = connect_to_answer(rep, a.rails); !st.ok()) return failed(st);
        return done(run_counted(plan, a.rails, qps, deadline));
    } catch (const std::exception& e) {
        return failed({reason::internal_error, e.what()});
    }
}

namespace {

// One rail of a peer's request: resolves our device, opens and connects an endpoint per
// remote one, and adds them to `owned` and `rail`; `infos` gets what the answer carries.
RdmaStatus open_passive_rail(const json& rj, bool lat, uint32_t size, const RdmaServeLimits& limits,
                             const RdmaDeviceResolver& resolve, RdmaRail& rail,
                             std::vector<std::unique_ptr<RdmaEndpoint>>& owned, json& infos) {
    if (!rj.is_object()) return {reason::protocol_error, "a rail is not a JSON object"};
    rail.name = rj.value("name", std::string());
    const auto eps = rj.find("endpoints");
    if (eps == rj.end() || !eps->is_array() || eps->empty())
        return {reason::protocol_error, "rail " + rail.name + ": endpoints missing"};
    const uint32_t max_qps = lat ? 1 : limits.max_qps_per_rail;
    if (eps->size() > max_qps)
        return {reason::bad_target, "rail " + rail.name + ": " + std::to_string(eps->size()) +
                                        " QPs; this daemon grants up to " + std::to_string(max_qps)};
    // -1 when absent (the resolver picks one); a float such as 2e120 has no int, and converting
    // it would be undefined (found by fuzz_rdma_session).
    const auto gid_index = json_int_or<int>(rj, "gid_index", -1, -1, std::numeric_limits<int>::max());
    if (!gid_index) return {reason::protocol_error, "rail " + rail.name + ": gid_index is not an integer from -1 up"};
    std::string why;
    auto base = resolve(rj.value("device", std::string()), *gid_index, rj.value("address", std::string()), why);
    if (!base) return {reason::device_not_found, "rail " + rail.name + ": " + why};
    infos = json::array();
    for (const auto& ej : *eps) {
        auto parsed = parse_endpoint_info(ej);
        if (!parsed.info) return {reason::protocol_error, "rail " + rail.name + ": " + parsed.error};
        RdmaEndpointOptions o = *base;
        o.retry_cnt = limits.retry_cnt;
        o.buffer_size = buffer_for(size);
        auto opened = RdmaEndpoint::open(o);
        if (!opened.endpoint) return {opened.status.reason, "rail " + rail.name + ": " + opened.status.detail};
        auto st = opened.endpoint->connect(*parsed.info);
        if (!st.ok()) return {st.reason, "rail " + rail.name + ": " + st.detail};
        infos.push_back(opened.endpoint->info());
        rail.endpoints.push_back(opened.endpoint.get());
        rail.remotes.push_back(*parsed.info);
        owned.push_back(std::move(opened.endpoint));
    }
    return {};
}

}  // namespace

RdmaSessionAccept rdma_session_accept(const json& req, const RdmaServeLimits& limits, const RdmaDeviceResolver& resolve,
                                      const std::atomic<bool>* cancel) {
    try {
        if (!req.is_object()) return refuse(reason::protocol_error, "the request is not a JSON object");
        const auto kind = session_kind(req.value("kind", std::string()));
        if (!kind) return refuse(reason::bad_target, "kind must be rdma_write_bw, rdma_write_lat or rdma_multirail_bw");
        const bool lat = *kind == ProbeKind::rdma_write_lat;
        std::string bad;
        const auto ask = read_session_ask(req, bad);
        if (!ask) return refuse(reason::protocol_error, bad);
        const uint32_t size = ask->message_size;
        const uint64_t iterations = ask->iterations;
        const double seconds = ask->seconds;
        const double timeout = ask->timeout;
        const SessionBudget budget{limits.max_message_size, limits.max_lat_iterations, limits.max_bw_seconds,
                                   limits.max_bw_iterations};
        if (auto why = session_over_budget(lat, size, iterations, seconds, budget); !why.empty())
            return refuse(reason::bad_target, why);
        if (timeout <= 0) return refuse(reason::protocol_error, "timeout missing");
        const auto rails_j = req.find("rails");
        if (rails_j == req.end() || !rails_j->is_array() || rails_j->empty())
            return refuse(reason::protocol_error, "rails missing");
        if (rails_j->size() > limits.max_rails || (*kind != ProbeKind::rdma_multirail_bw && rails_j->size() != 1))
            return refuse(reason::bad_target,
                          std::to_string(rails_j->size()) + " rails asked for a " + to_string(*kind) + " run");
        auto deadline = Deadline::after_seconds(std::min(timeout, limits.max_session_seconds));
        deadline.cancel = cancel;

        auto owned = std::make_shared<std::vector<std::unique_ptr<RdmaEndpoint>>>();
        auto rails = std::make_shared<std::vector<RdmaRail>>();
        json reply_rails = json::array();
        for (const auto& rj : *rails_j) {
            RdmaRail rail;
            json infos;
            if (auto st = open_passive_rail(rj, lat, size, limits, resolve, rail, *owned, infos); !st.ok())
                return refuse(st.reason, st.detail);
            reply_rails.push_back(json{{"name", rail.name}, {"endpoints", infos}});
            rails->push_back(std::move(rail));
        }
        const ProbeKind k = *kind;
        const RdmaLatSettings ls{size, iterations};
        RdmaSessionAccept a;
        a.reply = json{{"rails", reply_rails}};
        a.serve = [owned, rails, k, ls, deadline]() {
            ProbeResult r = k == ProbeKind::rdma_write_lat
                                ? rdma_write_lat_serve(*(*rails)[0].endpoints[0], (*rails)[0].remotes[0], ls, deadline)
                                : rdma_multirail_bw_serve(*rails, ls.message_size, deadline);
            r.kind = k;
            if (rails->size() == 1) r.rail = (*rails)[0].name;
            if (!r.success && deadline.cancelled()) {
                r.reason = reason::peer_closed;
                r.detail = "the peer ended the session (its side of the run failed)";
            }
            return r;
        };
        return a;
    } catch (const std::exception& e) {
        return refuse(reason::protocol_error, e.what());
    }
}

}  // namespace rocewatch
