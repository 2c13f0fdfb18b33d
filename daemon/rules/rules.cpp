// The pure rules: a snapshot and a config in, plain-words findings out.
#include "daemon/rules/rules.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "daemon/model/probe.hpp"
#include "daemon/rules/cabling.hpp"
#include "daemon/model/dcb.hpp"
#include "daemon/model/driver_stats.hpp"
#include "daemon/model/rdma_port.hpp"
#include "daemon/rules/ipv4.hpp"
#include "daemon/rules/probe_paths.hpp"
#include "daemon/rules/rail_resolve.hpp"

namespace rocewatch {
namespace {

// ---------------------------------------------------------------- what is judged

struct JudgedPort {
    const RdmaDevice* dev = nullptr;
    const RdmaPort* port = nullptr;
    std::string object;  // "rocep1s0f0/1"
    std::string netdev;  // "" when unknown
    NicFamily family = NicFamily::roce;
    bool roce = true;      // an Ethernet port of a CA: the RoCE rules (GIDs, bonds) apply
    bool ethernet = true;  // RoCE, iWARP, usNIC: the netdev rules (up, MTU, flaps, subnets) apply
};

// One RoCE netdev's link and the priority its RoCE v2 goes out at (0 without DCB).
struct RoceLink {
    const JudgedPort* jp;
    const Link* link;
    int priority;
    bool pfc_on;  // PFC reported on for that priority
};

struct Context {
    const Snapshot& s;
    const Config& c;
    std::vector<JudgedPort> ports;
    std::vector<std::string> missing_rails;
    // Netdevs held to the up/MTU/flap rules: judged RoCE ports' netdevs, then
    // expect.interfaces; each once.
    std::vector<std::string> netdevs;
    std::set<std::string> expected_interfaces;
    // The snapshot's links by name: rules look netdevs up for every port, and at 128 NICs a
    // walk of the links for each cost a tenth of the rules' time.
    std::unordered_map<std::string_view, const Link*> links_by_name;
    // Each judged RoCE netdev once, with its link (those without a link left out): nine rules
    // walk them, and at 128 NICs each building its own cost a seventh of the rules' time.
    std::vector<RoceLink> roce_links;

    const Link* link(const std::string& name) const {
        const auto it = links_by_name.find(name);
        return it == links_by_name.end() ? nullptr : it->second;
    }
};

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

std::string port_netdev(const RdmaDevice& d, const RdmaPort& p) {
    if (!p.netdev.empty()) return p.netdev;
    // Single-port devices name their netdev at device level only on some drivers.
    if (d.ports.size() == 1 && d.netdevs.size() == 1) return d.netdevs.front();
    return "";
}

Context make_context(const Snapshot& s, const Config& c) {
    Context ctx{.s = s, .c = c};
    ctx.links_by_name.reserve(s.links.size());
    for (const auto& l : s.links) ctx.links_by_name.emplace(l.name, &l);  // the first of a name, as find_link
    const auto& ignore = c.expect.ignore_devices;
    std::vector<const RdmaDevice*> devices;
    if (!c.expect.rails.empty()) {
        for (const auto& name : c.expect.rails) {
            if (contains(ignore, name)) continue;
            if (const auto* d = find_device(s, name))
                devices.push_back(d);
            else
                ctx.missing_rails.push_back(name);
        }
    } else {
        for (const auto& d : s.devices)
            if (!contains(ignore, d.name)) devices.push_back(&d);
    }
    std::unordered_set<std::string> listed;  // ctx.netdevs, for the look-up
    for (const auto* d : devices) {
        for (const auto& p : d->ports) {
            const NicFamily family = nic_family(*d, p);
            JudgedPort jp{.dev = d,
                          .port = &p,
                          .object = d->name + "/" + std::to_string(p.port),
                          .netdev = port_netdev(*d, p),
                          .family = family,
                          .roce = family == NicFamily::roce,
                          .ethernet = family != NicFamily::infiniband};
            if (jp.ethernet && !jp.netdev.empty() && listed.insert(jp.netdev).second) ctx.netdevs.push_back(jp.netdev);
            ctx.ports.push_back(std::move(jp));
        }
    }
    for (const auto& name : c.expect.interfaces) {
        ctx.expected_interfaces.insert(name);
        if (listed.insert(name).second) ctx.netdevs.push_back(name);
    }
    return ctx;
}

// ---------------------------------------------------------------- wording helpers

std::string num(double v) {
    char buf[64];
    // Whole numbers and large rates read best without decimals; small rates keep two.
    if (std::isfinite(v) && std::fabs(v) < 1e15 && (v == std::floor(v) || std::fabs(v) >= 100))
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else
        std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

std::string num(uint64_t v) { return std::to_string(v); }

std::string plural(uint64_t n, const char* one, const char* many) { return num(n) + " " + (n == 1 ? one : many); }

std::string window_words(Duration d) {
    using namespace std::chrono;
    const auto ms = d.count();
    if (ms > 0 && ms % 3'600'000 == 0) return plural(static_cast<uint64_t>(ms / 3'600'000), "hour", "hours");
    if (ms > 0 && ms % 60'000 == 0) return plural(static_cast<uint64_t>(ms / 60'000), "minute", "minutes");
    return num(static_cast<double>(ms) / 1000.0) + " seconds";
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
    std::string out;
    for (const auto& x : v) {
        if (!out.empty()) out += sep;
        out += x;
    }
    return out;
}

std::string port_words(const JudgedPort& jp) {
    std::string w = "RDMA port " + jp.object;
    if (!jp.netdev.empty()) w += " (" + jp.netdev + ")";
    return w;
}

Finding make(const char* rule, Severity sev, std::string object, std::string summary, std::string action,
             std::map<std::string, std::string> details = {}) {
    return Finding{.rule = rule,
                   .object = std::move(object),
                   .severity = sev,
                   .summary = std::move(summary),
                   .action = std::move(action),
                   .details = std::move(details)};
}

struct V4 {
    uint32_t address = 0;
    int prefixlen = 32;
    std::string text;  // "192.168.100.11/24"
};

// IPv4 addresses worth comparing: not host scope (127/8), not zeroconf (169.254/16,
// which every interface may share by design).
std::vector<V4> ipv4_of(const Link& l) {
    std::vector<V4> out;
    for (const auto& a : l.addresses) {
        if (a.family != AF_INET || a.scope == "host") continue;
        auto v = ipv4::parse(a.address);
        if (!v || ipv4::is_link_local(*v)) continue;
        out.push_back({*v, a.prefixlen, a.address + "/" + std::to_string(a.prefixlen)});
    }
    return out;
}

bool is_bond(const Link* l) { return l && (l->kind == "bond" || l->bond.has_value()); }

// Whether a bond slave carries traffic: the bond's own MII view when it has one.
bool slave_up(const Link& l) {
    if (l.slave && !l.slave->mii_status.empty()) return l.slave->mii_status == "up";
    return l.carrier && (l.operstate == "up" || l.operstate == "unknown");
}

std::vector<const Link*> bond_slaves(const Snapshot& s, const Link& bond) {
    std::vector<const Link*> out;
    auto add = [&](const Link* l) {
        if (l && std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
    };
    if (bond.bond)
        for (const auto& name : bond.bond->slaves) add(find_link(s, name));
    for (const auto& l : s.links)
        if (l.master == bond.name) add(&l);
    return out;
}

// Largest RoCE MTU a netdev MTU allows: the kernel (iboe_get_mtu) takes off 96 bytes of
// headers (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4) and rounds down to an IB MTU.
constexpr int kRoceHeaderBytes = 96;
int roce_mtu_for(uint32_t netdev_mtu) {
    const long usable = static_cast<long>(netdev_mtu) - kRoceHeaderBytes;
    for (int m : {4096, 2048, 1024, 512, 256})
        if (usable >= m) return m;
    return 0;
}

// ---------------------------------------------------------------- InfiniBand

bool is_ib(const JudgedPort& jp) { return jp.family == NicFamily::infiniband; }

// `ibstat mlx4_0 1`: the InfiniBand view of one port.
std::string ibstat(const JudgedPort& jp) {
    return "`ibstat " + jp.dev->name + " " + std::to_string(jp.port->port) + "`";
}

// Where to look at a link's cable and its far end, in the words of the port's family.
std::string link_check(const JudgedPort& jp) {
    if (is_ib(jp)) return ibstat(jp) + ", `iblinkinfo` (both ends of every link: width, speed, state)";
    const std::string nd = jp.netdev.empty() ? "the port's netdev" : jp.netdev;
    return jp.netdev.empty() ? "`ethtool` and `ethtool -m` on the port's netdev (`rdma link show " + jp.object + "`)"
                             : "`ethtool " + nd + "`, `ethtool -m " + nd + "`";
}

// An InfiniBand port that is physically up but INIT (2) or ARMED (3): waiting for a subnet
// manager to configure (INIT) or activate (ARMED) it.
bool ib_waits_for_sm(const RdmaPort& p) {
    const bool init_or_armed = p.state ? (*p.state == 2 || *p.state == 3)
                                       : (p.state_name == "INIT" || p.state_name == "ARMED");
    const bool link_up = p.phys_state ? *p.phys_state == 5
                                      : (p.phys_state_name.empty() || p.phys_state_name == "LinkUp");
    return init_or_armed && link_up;
}

std::string port_down_action(const JudgedPort& jp, bool link_up) {
    const auto& p = *jp.port;
    const bool disabled = p.phys_state == 3 || p.phys_state_name == "Disabled";
    const bool polling = p.phys_state == 2 || p.phys_state_name == "Polling";
    std::string action;
    if (is_ib(jp)) {
        if (disabled)
            action = "The port is disabled: enable it on the switch or from the subnet manager (`ibportstate`) and "
                     "check " +
                     ibstat(jp) + ".";
        else if (polling)
            action = "No link partner: check the cable and the switch port (" + link_check(jp) + ").";
        else if (link_up)
            action = "The physical link is up but the port is not ACTIVE: check the subnet manager (`sminfo`, "
                     "`systemctl status opensm`) and " +
                     ibstat(jp) + ".";
        else
            action = "Check " + link_check(jp) + ", `dmesg | grep -i " + jp.dev->name +
                     "`, the cable and the switch port; check that a subnet manager runs (`sminfo`).";
        return action + " Verify with " + ibstat(jp) + ".";
    }
    const std::string nd = jp.netdev.empty() ? "<netdev>" : jp.netdev;
    if (disabled)
        action = "The port is disabled, usually because its netdev is administratively down: `ip link set " + nd +
                 " up`.";
    else if (polling)
        action = "No link partner: check the cable and transceiver (" + link_check(jp) +
                 ") and that the peer's port is up.";
    else
        action = "Check `ibstat " + jp.dev->name + "`, `dmesg | grep -i " + jp.dev->name +
                 "`, the cable and the peer's port; `ip link set " + nd + " up` if the netdev is down.";
    return action + " Verify with `ibdev2netdev` or `rdma link show " + jp.object + "`.";
}

// ---------------------------------------------------------------- the rules

using Findings = std::vector<Finding>;

// No RDMA device at all: a wrong --sysfs-root, or the driver (or ib_core) not loaded. Every
// port rule is silent then, so without this the node would pass as healthy. With expect.rails
// set, port_down names each missing device instead; devices all in expect.ignore_devices are
// left out on purpose and are not this.
void rule_no_rdma_device(const Context& ctx, Severity sev, Findings& out) {
    if (!ctx.s.devices.empty() || !ctx.c.expect.rails.empty()) return;
    // A read that failed or never returned (a wedged driver) found nothing either: that is the
    // sysfs collector's failure, reported as such, not a missing driver.
    for (const auto& c : ctx.s.collectors)
        if (c.name == "sysfs" && !c.success) return;
    const std::string dir = (ctx.c.daemon.sysfs_root.empty() ? std::string("/sys") : ctx.c.daemon.sysfs_root) +
                            "/class/infiniband";
    out.push_back(make("no_rdma_device", sev, "class/infiniband",
                       "No RDMA device on this node: " + dir +
                           " lists none, so no port, GID or counter can be judged and RDMA jobs cannot run here",
                       "Check that the RDMA driver is loaded (`lsmod | grep -E 'mlx5_ib|irdma|bnxt_re|rdma_rxe'`, "
                       "`dmesg | grep -i -E 'mlx5|infiniband'`) and what `rdma link show` and `ls " +
                           dir +
                           "` list; load it (`modprobe mlx5_ib`) or, for Soft-RoCE, `rdma link add rxe0 type rxe "
                           "netdev <netdev>`. If rocewatchd runs with --sysfs-root, check that it points at a sysfs "
                           "tree. On a node without RDMA on purpose, turn this rule off: [rules.no_rdma_device] "
                           "enabled = false.",
                       {{"expected", "at least one RDMA device"}, {"actual", "none"}, {"directory", dir}}));
}

void rule_port_down(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& name : ctx.missing_rails)
        out.push_back(make("port_down", sev, name, "RDMA device " + name + " listed in expect.rails is not present",
                           "Check that the driver is loaded (`lsmod | grep mlx5`, `dmesg | grep -i mlx5`) and what "
                           "`rdma link show` lists; if the device was renamed, update expect.rails.",
                           {{"expected", "present"}, {"actual", "missing"}}));
    for (const auto& jp : ctx.ports) {
        const auto& p = *jp.port;
        // Unreadable state is not judged: an unknown is not a "down".
        if (port_up(p).value_or(true)) continue;
        const bool link_up = p.phys_state ? *p.phys_state == 5 : p.phys_state_name == "LinkUp";

        const std::string state = state_words(p);
        const std::string phys = phys_state_words(p);
        // INIT / ARMED with the link up is the subnet manager's business, said by its own rule.
        if (jp.family == NicFamily::infiniband && ib_waits_for_sm(p)) continue;
        const std::string action = port_down_action(jp, link_up);
        out.push_back(make("port_down", sev, jp.object, port_words(jp) + " is not up: " + state + ", " + phys, action,
                           {{"state", state},
                            {"phys_state", phys},
                            {"expected", "state 4: ACTIVE, phys_state 5: LinkUp"},
                            {"netdev", jp.netdev}}));
    }
}

void rule_ib_port_not_active_no_sm(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& jp : ctx.ports) {
        const auto& p = *jp.port;
        if (!is_ib(jp) || !ib_waits_for_sm(p)) continue;
        const bool armed = p.state ? *p.state == 3 : p.state_name == "ARMED";
        std::string summary = "InfiniBand " + port_words(jp) + " has its link up (" + phys_state_words(p) +
                              ") but is " + state_words(p) + ": ";
        summary += armed ? "a subnet manager configured it but has not activated it"
                         : "no subnet manager has configured it";
        if (p.sm_lid && *p.sm_lid == 0) summary += " (sm_lid 0: no subnet manager seen)";
        std::string action =
            armed ? "The subnet manager stopped between configuring and activating the port: check its log "
                    "(`/var/log/opensm.log`) and `sminfo`; restarting it (`systemctl restart opensm`) activates "
                    "ARMED ports."
                  : "Run a subnet manager on the fabric: `systemctl enable --now opensm` on one node, or enable the "
                    "SM on a managed switch; `sminfo` must answer.";
        action += " Then " + ibstat(jp) + " shows State: Active and a non-zero SM lid; `iblinkinfo` shows the fabric.";
        auto hex = [](const std::optional<uint32_t>& v) {
            if (!v) return std::string("?");
            char buf[16];
            std::snprintf(buf, sizeof buf, "0x%x", *v);
            return std::string(buf);
        };
        out.push_back(make("ib_port_not_active_no_sm", sev, jp.object, summary, action,
                           {{"state", state_words(p)},
                            {"phys_state", phys_state_words(p)},
                            {"lid", hex(p.lid)},
                            {"sm_lid", hex(p.sm_lid)},
                            {"expected", "state 4: ACTIVE, configured by a subnet manager"}}));
    }
}

void rule_netdev_down(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& name : ctx.netdevs) {
        const Link* l = ctx.link(name);
        if (!l) {
            // An RDMA port's netdev that netlink does not show is a collector gap, not a
            // verdict; an interface the operator listed must exist.
            if (ctx.expected_interfaces.count(name))
                out.push_back(make("netdev_down", sev, name,
                                   "Interface " + name + " listed in expect.interfaces does not exist",
                                   "Check `ip link show` for the interface name (it may have been renamed) and "
                                   "the driver; update expect.interfaces if the name changed.",
                                   {{"expected", "present"}, {"actual", "missing"}}));
            continue;
        }
        const bool oper_ok = l->operstate == "up" || l->operstate == "unknown";
        if (l->admin_up && l->carrier && oper_ok) continue;

        std::string why;
        std::string action;
        if (!l->admin_up) {
            why = "administratively down";
            action = "Bring it up: `ip link set " + name +
                     " up` (and make it persistent in netplan or "
                     "NetworkManager).";
        } else if (!l->carrier) {
            why = "up but has no carrier (no link)";
            action = "Check the cable and transceiver (`ethtool " + name + "`, `ethtool -m " + name +
                     "`) and that the peer's port is up.";
        } else {
            why = "operationally " + l->operstate;
            action = is_bond(l)
                         ? "The bond has no working slave: check its slaves (`cat /proc/net/bonding/" + name + "`)."
                         : "Check `ip link show " + name + "` and `dmesg | grep " + name +
                               "`; a lower device it depends on is down or it waits for authentication.";
        }
        out.push_back(make("netdev_down", sev, name, "Interface " + name + " is " + why, action,
                           {{"operstate", l->operstate.empty() ? "?" : l->operstate},
                            {"admin_up", l->admin_up ? "yes" : "no"},
                            {"carrier", l->carrier ? "yes" : "no"},
                            {"expected", "admin up, carrier, operstate up"}}));
    }
}

void rule_port_rate_low(const Context& ctx, Severity sev, Findings& out) {
    const auto& want = ctx.c.expect.port_rate_gbps;
    if (!want) return;
    for (const auto& jp : ctx.ports) {
        const auto& p = *jp.port;
        // A down port reports a meaningless rate; port_down speaks for it.
        if (!p.rate_gbps || (p.state && *p.state != 4)) continue;
        if (*p.rate_gbps >= *want) continue;
        std::string action =
            "The link negotiated a lower speed or width. Check the cable's rating and the peer's port (" +
            link_check(jp) + "); reseat or replace the cable";
        if (is_ib(jp))
            action += ".";
        else
            action += "; make sure neither end forces a lower speed (`ethtool -s " +
                      (jp.netdev.empty() ? std::string("<netdev>") : jp.netdev) + " autoneg on`).";
        out.push_back(
            make("port_rate_low", sev, jp.object,
                 port_words(jp) + " links at " + num(*p.rate_gbps) + " Gb/s, expected " + num(*want) + " Gb/s", action,
                 {{"expected_rate_bytes_per_second", num(*want * 1e9 / 8)},
                  {"actual_rate_bytes_per_second", num(*p.rate_gbps * 1e9 / 8)},
                  {"rate", p.rate_text}}));
    }
}

void rule_mtu_low(const Context& ctx, Severity sev, Findings& out) {
    const uint32_t want = ctx.c.expect.mtu;
    if (want == 0) return;
    for (const auto& name : ctx.netdevs) {
        const Link* l = ctx.link(name);
        if (!l || l->mtu == 0 || l->mtu >= want) continue;
        // A bond sets its slaves' MTU, so the fix goes on the master.
        const bool via_bond = !l->master.empty() && is_bond(ctx.link(l->master));
        const std::string target = via_bond ? l->master : name;
        std::string action = "`ip link set " + target + " mtu " + num(uint64_t(want)) + "`";
        if (via_bond) action += " (" + name + " is a slave of " + l->master + ", which sets its slaves' MTU)";
        action += ", and the same on the peer: both ends must match. Make it persistent (netplan `mtu: " +
                  num(uint64_t(want)) + "`).";
        // What RoCE may carry is said for a netdev a RoCE port runs over, not for an expected
        // interface without one.
        const bool roce = std::ranges::any_of(ctx.ports,
                                              [&](const JudgedPort& jp) { return jp.roce && jp.netdev == name; });
        std::string summary = "Interface " + name + " has MTU " + num(uint64_t(l->mtu)) + ", expected " +
                              num(uint64_t(want)) + ": TCP over a fast link is throttled";
        std::map<std::string, std::string> details{{"expected_mtu", num(uint64_t(want))},
                                                   {"actual_mtu", num(uint64_t(l->mtu))}};
        if (roce) {
            const std::string allowed = num(uint64_t(roce_mtu_for(l->mtu)));
            summary += " and RoCE packets are limited to " + allowed + " bytes";
            details.emplace("roce_mtu_allowed", allowed);
        }
        out.push_back(make("mtu_low", sev, name, std::move(summary), action, std::move(details)));
    }
}

// PFC and the priority RoCE v2 goes out at, from the DCB tables the driver reports (dcbnl).
// A netdev whose driver has no DCB (veth, virtio_net, rxe's parents) is not judged.
void rule_pfc_off_roce_priority(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& jp : ctx.ports) {
        if (!jp.roce || jp.netdev.empty()) continue;
        const Link* l = ctx.link(jp.netdev);
        if (!l || !l->dcb || l->dcb->error != 0 || !l->dcb->ieee.pfc_enabled) continue;
        const DcbIeee& d = l->dcb->ieee;
        const auto roce = roce_priority(d, jp.port->rdma_cm_default_tos.value_or(0));
        if (pfc_on(d, roce.priority)) continue;
        std::string on;
        for (int p : pfc_priorities(d)) on += (on.empty() ? "" : ",") + std::to_string(p);
        const std::string n = jp.netdev, prio = std::to_string(roce.priority);
        const std::string summary =
            on.empty() ? "PFC is off on every priority of " + n + ": RoCE v2 traffic (priority " + prio +
                             ") is lossy, so congestion drops its packets and RDMA recovers by go-back-N retransmission"
                       : "PFC is on for priorities " + on + " of " + n + " but RoCE v2 traffic goes out at priority " +
                             prio + " (" + roce.how + "): its packets are not paused and are dropped under congestion";
        const std::string action =
            "Give RoCE a lossless priority end to end: trust DSCP and map RoCE's DSCP to it (`dcb app add dev " + n +
            " dscp-prio 26:3`, with `default_roce_tos` 106 under /sys/kernel/config/rdma_cm/" + jp.dev->name +
            "/ports/1/, NCCL_IB_TC=106), turn PFC on for it (`dcb pfc set dev " + n +
            " prio-pfc 3:on`, or mlnx_qos -i " + n +
            " --pfc 0,0,0,1,0,0,0,0), and the same on the switch ports; if this fabric runs RoCE lossy on "
            "purpose (ECN only), disable this rule ([rules.pfc_off_roce_priority] enabled = false).";
        out.push_back(make("pfc_off_roce_priority", sev, n, summary, action,
                           {{"pfc_enabled_priorities", on.empty() ? "none" : on},
                            {"roce_priority", prio},
                            {"roce_priority_reason", roce.how},
                            {"device", jp.dev->name}}));
    }
}

// ---------------------------------------------------------------- pause frames (driver stats)

// What Context::roce_links holds, from the judged ports.
std::vector<RoceLink> roce_links(const Context& ctx) {
    std::vector<RoceLink> out;
    std::unordered_set<std::string_view> seen;
    for (const auto& jp : ctx.ports) {
        if (!jp.roce || jp.netdev.empty() || !seen.insert(jp.netdev).second) continue;
        const Link* l = ctx.link(jp.netdev);
        if (!l) continue;
        const DcbIeee* d = l->dcb && l->dcb->error == 0 ? &l->dcb->ieee : nullptr;
        const int prio = d ? roce_priority(*d, jp.port->rdma_cm_default_tos.value_or(0)).priority : 0;
        out.push_back({&jp, l, prio, d && pfc_on(*d, prio)});
    }
    return out;
}

// PFC on RoCE's priority with ECN off there (at either point) where the driver exposes ECN:
// congestion is then handled by pause frames alone, which spread back hop by hop.
void rule_ecn_off_pfc_on(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& rl : ctx.roce_links) {
        const JudgedPort& jp = *rl.jp;
        const RdmaPort& p = *jp.port;
        if (!p.ecn_rp_enabled && !p.ecn_np_enabled) continue;
        if (!rl.pfc_on) continue;  // no DCB, or lossy RoCE: pfc_off_roce_priority's finding
        const auto off = [&](const std::optional<uint8_t>& bits) { return bits && ((*bits >> rl.priority) & 1u) == 0; };
        const bool rp_off = off(p.ecn_rp_enabled), np_off = off(p.ecn_np_enabled);
        if (!rp_off && !np_off) continue;
        const std::string n = jp.netdev, prio = std::to_string(rl.priority);
        const std::string points = rp_off && np_off ? "the reaction and notification points"
                                   : rp_off ? "the reaction point (roce_rp: this node does not slow down on CNPs)"
                                            : "the notification point (roce_np: this node sends no CNPs for "
                                              "ECN-marked packets)";
        std::string cmds;
        const auto turn_on = [&](bool is_off, const char* point) {
            if (is_off)
                cmds += std::string(cmds.empty() ? "" : " and ") + "`echo 1 > /sys/class/net/" + n + "/ecn/" + point +
                        "/enable/" + prio + "`";
        };
        turn_on(rp_off, "roce_rp");
        turn_on(np_off, "roce_np");
        out.push_back(
            make("ecn_off_pfc_on", sev, n,
                 "ECN is off at " + points + " for priority " + prio + " of " + n + ", while PFC is on for it: RoCE " +
                     "congestion is left to pause frames alone, which spread back through the fabric " +
                     "(head-of-line blocking, pause storms) instead of slowing the senders (DCQCN)",
                 "Turn ECN on for priority " + prio + " at both points: " + cmds +
                     " (or mlnx_qos / the driver's persistent settings), the same on the peers, and ECN marking on " +
                     "the switch queue of that priority; DCQCN needs all three.",
                 {{"roce_priority", prio},
                  {"ecn_rp", p.ecn_rp_enabled ? (rp_off ? "off" : "on") : "unknown"},
                  {"ecn_np", p.ecn_np_enabled ? (np_off ? "off" : "on") : "unknown"},
                  {"device", jp.dev->name}}));
    }
}

void rule_pause_storm(const Context& ctx, Severity sev, Findings& out) {
    const std::string window = window_words(ctx.c.thresholds.counter_window);
    for (const auto& rl : ctx.roce_links) {
        uint64_t warnings = 0, errors = 0;
        for (const auto& [name, inc] : rl.link->driver_stat_increase)
            if (auto m = driver_stat_meaning(name); m && m->kind == DriverStatKind::pause_storm)
                (m->level == "error" ? errors : warnings) += inc;
        if (warnings == 0 && errors == 0) continue;
        const std::string n = rl.link->name;
        std::string summary = "The NIC of " + n + " detected a pause storm: it kept sending pause frames past its " +
                              "storm threshold (" + num(warnings) + " warning and " + num(errors) +
                              " error events in the last " + window + "), so it could not drain what it received";
        if (errors > 0)
            summary += "; on error events it stopped sending pause frames to protect the fabric, so packets to this "
                       "port were dropped meanwhile";
        out.push_back(make("pause_storm", sev, n, summary,
                           "The receive path of this host stalled: look for NIC, PCIe (AER) or driver errors in "
                           "`dmesg`, and for a CPU, memory or IRQ problem on the node; the storm watchdog's timeout "
                           "is `ethtool --get-tunable " +
                               n +
                               " pfc-prevention-tout`. A node with recurring storms stalls the fabric around it: "
                               "drain it until the cause is found.",
                           {{"warning_events", num(warnings)}, {"error_events", num(errors)}, {"window", window}}));
    }
}

void rule_pause_frames_high(const Context& ctx, Severity sev, Findings& out) {
    const double limit = ctx.c.thresholds.pause_frames_per_second;
    if (limit <= 0) return;
    for (const auto& rl : ctx.roce_links) {
        // Per priority where the driver counts priorities, else all priorities together.
        std::map<std::string, std::pair<std::string, double>> worst;  // direction -> (name, rate)
        std::set<std::string> per_priority;
        for (const auto& [name, rate] : rl.link->driver_stat_rates)
            if (auto m = driver_stat_meaning(name); m && m->kind == DriverStatKind::pause_frames && m->priority >= 0)
                per_priority.insert(m->direction);
        for (const auto& [name, rate] : rl.link->driver_stat_rates) {
            auto m = driver_stat_meaning(name);
            if (!m || m->kind != DriverStatKind::pause_frames || rate <= limit) continue;
            if (m->priority < 0 && per_priority.count(m->direction)) continue;
            auto& w = worst[m->direction];
            if (rate > w.second) w = {name, rate};
        }
        for (const auto& [dir, w] : worst) {
            const std::string n = rl.link->name;
            const auto m = driver_stat_meaning(w.first);
            const std::string at = m->priority >= 0 ? " at priority " + std::to_string(m->priority) : "";
            const bool rx = dir == "rx";
            const bool roce_prio = m->priority < 0 || m->priority == rl.priority;
            std::string summary =
                n + (rx ? " receives " : " sends ") + num(w.second) + " pause frames/s" + at + " (" + w.first + "): " +
                (rx ? "the switch or peer keeps pausing this node's sends, a congested path downstream"
                    : "this node cannot take in what arrives at line rate and keeps pausing the switch, which "
                      "spreads back to every sender");
            if (!roce_prio) summary += " (RoCE goes out at priority " + std::to_string(rl.priority) + ")";
            out.push_back(
                make("pause_frames_high", sev, n, summary,
                     rx ? "Find the congested hop (switch port counters on the path), turn ECN on so that senders slow "
                          "down before pauses are needed (DCQCN; see ecn_off_pfc_on), and spread the traffic over more "
                          "rails or fewer senders per receiver."
                        : "Check this host's receive path: the PCIe link of the NIC (`lspci -vv`: width and speed as "
                          "rated), rx_out_of_buffer in the RDMA counters, IRQ and CPU affinity of the receiving "
                          "application; and that ECN is on so that senders slow down first.",
                     {{"counter", w.first},
                      {"per_second", num(w.second)},
                      {"threshold_per_second", num(limit)},
                      {"direction", dir},
                      {"roce_priority", std::to_string(rl.priority)}}));
        }
    }
}

// ethtool's per-lane FEC counts as "0=12,1=40,...", lanes numbered from 0 as the kernel does;
// "" where the driver counts no lanes.
std::string per_lane(const std::vector<uint64_t>& counts) {
    std::string out;
    for (size_t i = 0; i < counts.size(); ++i)
        out += (out.empty() ? "" : ",") + std::to_string(i) + "=" + num(counts[i]);
    return out;
}

// FEC codewords the port could not correct inside the counter window: frames lost on the wire.
void rule_fec_uncorrectable(const Context& ctx, Severity sev, Findings& out) {
    const std::string window = window_words(ctx.c.thresholds.counter_window);
    for (const auto& rl : ctx.roce_links) {
        const auto& inc = rl.link->driver_stat_increase;
        auto it = inc.find("fec_uncorrectable_blocks");
        if (it == inc.end() || it->second == 0) continue;
        const std::string n = rl.link->name;
        std::map<std::string, std::string> details{{"increase", num(it->second)}, {"window", window}};
        std::string lanes;
        if (rl.link->phy) {
            const PhyLink& p = *rl.link->phy;
            if (!p.fec_active.empty()) details["fec_mode"] = p.fec_active;
            lanes = per_lane(p.fec_uncorrectable_blocks_lanes);
            if (!lanes.empty()) details["uncorrectable_per_lane"] = lanes;
        }
        if (auto c = inc.find("fec_corrected_blocks"); c != inc.end()) details["corrected_increase"] = num(c->second);
        out.push_back(make("fec_uncorrectable", sev, n,
                           n + " had " + num(it->second) + " FEC codewords it could not correct in the last " + window +
                               ": frames are being lost on the wire, which RoCE pays for with retransmissions" +
                               (lanes.empty() ? "" : " (uncorrectable per lane since start: " + lanes + ")"),
                           "The physical link is failing: check the module's receive power and temperature (`ethtool "
                           "-m " +
                               n +
                               "`), reseat or replace the cable or transceiver (a lane that counts alone "
                               "points at it), check the switch port's counters at the other end, and that both ends "
                               "use the same FEC mode (`ethtool --show-fec " +
                               n + "`).",
                           std::move(details)));
    }
}

// ---------------------------------------------------------------- transceiver modules

std::string dbm(double mw) {
    if (mw <= 0) return "no light";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f dBm", 10 * std::log10(mw));
    return buf;
}

std::string module_words(const Transceiver& t) {
    std::string w = t.type.empty() ? "module" : t.type + " module";
    if (!t.vendor.empty() || !t.part_number.empty())
        w += " " + t.vendor + (t.vendor.empty() ? "" : " ") + t.part_number;
    return w;
}

// The RoCE links whose module reports monitors, with the module.
template <class Fn>
void for_each_module(const Context& ctx, Fn&& fn) {
    for (const auto& rl : ctx.roce_links) {
        const auto& m = rl.link->module;
        if (m && m->error == 0 && m->diagnostics) fn(*rl.link, *m);
    }
}

// A lane's receive power under the module's own low warning level (critical under its low
// alarm): too little light arrives (dirty or damaged fibre, a bent cable, a failing laser at the
// other end). Only the lanes the link uses are judged where ethtool says how many it uses.
void rule_module_rx_power_low(const Context& ctx, Severity sev, Findings& out) {
    for_each_module(ctx, [&](const Link& l, const Transceiver& t) {
        const auto& th = t.rx_power_thresholds;
        if (!th.low_warning && !th.low_alarm) return;
        size_t used = t.lanes.size();
        if (l.phy && l.phy->lanes) used = std::min<size_t>(used, *l.phy->lanes);
        std::vector<std::string> low;
        bool alarm = false;
        for (size_t i = 0; i < used; ++i) {
            const auto& rx = t.lanes[i].rx_power_mw;
            if (!rx) continue;
            const bool under_alarm = th.low_alarm && *rx < *th.low_alarm;
            if (!under_alarm && !(th.low_warning && *rx < *th.low_warning)) continue;
            alarm = alarm || under_alarm;
            low.push_back("lane " + std::to_string(i + 1) + " " + dbm(*rx));
        }
        if (low.empty()) return;
        const double level = alarm ? *th.low_alarm : *th.low_warning;
        const std::string n = l.name;
        out.push_back(
            make("module_rx_power_low", alarm ? sev : (sev == Severity::critical ? Severity::warning : sev), n,
                 n + "'s " + module_words(t) + " receives too little light: " + join(low) +
                     ", under the module's low " + (alarm ? "alarm" : "warning") + " level of " + dbm(level) +
                     ": the link is losing margin and bit errors (then FEC corrections, then drops) follow",
                 "Clean and reseat the fibre at both ends (inspect the connector), check the cable for bends and its "
                 "length against the module's reach, and the far end's transmit power (`ethtool -m` on the peer or the "
                 "switch's transceiver view); a single dark lane points at that lane's fibre or the far laser. Here: "
                 "`ethtool -m " +
                     n + "`.",
                 {{"lanes", join(low)},
                  {"level", alarm ? "low_alarm" : "low_warning"},
                  {"threshold_dbm", dbm(level)},
                  {"module", module_words(t)},
                  {"serial", t.serial}}));
    });
}

// The module at or past its own high temperature warning (critical at its alarm): lasers
// drift and age fast there, and the module may shut down.
void rule_module_temperature_high(const Context& ctx, Severity sev, Findings& out) {
    for_each_module(ctx, [&](const Link& l, const Transceiver& t) {
        const auto& th = t.temperature_thresholds;
        if (!t.temperature_c) return;
        const bool alarm = th.high_alarm && *t.temperature_c >= *th.high_alarm;
        if (!alarm && !(th.high_warning && *t.temperature_c >= *th.high_warning)) return;
        const double level = alarm ? *th.high_alarm : *th.high_warning;
        const std::string n = l.name;
        out.push_back(make("module_temperature_high",
                           alarm ? sev : (sev == Severity::critical ? Severity::warning : sev), n,
                           n + "'s " + module_words(t) + " is at " + num(*t.temperature_c) +
                               " °C, at or over its high " + (alarm ? "alarm" : "warning") + " level of " + num(level) +
                               " °C: it will lose optical margin and may shut its laser down",
                           "Check the airflow over the NIC (fans, blanking panels, a blocked intake), the chassis "
                           "and inlet temperatures, and that the module's power class suits the port; replace the "
                           "module if its neighbours run much cooler. Here: `ethtool -m " +
                               n + "`.",
                           {{"temperature_celsius", num(*t.temperature_c)},
                            {"level", alarm ? "high_alarm" : "high_warning"},
                            {"threshold_celsius", num(level)},
                            {"module", module_words(t)},
                            {"serial", t.serial}}));
    });
}

// The link negotiated less than the module is made for (a 100G module at 40G or 25G): a port
// forced to a lower speed, autonegotiation with a lesser far end, or lanes that did not come up.
// Only where the module states its signalling rate per lane (SFF-8636, SFF-8472; CMIS states
// applications instead, not judged), taken at the Ethernet lane speed at or under it.
void rule_link_speed_below_module(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& rl : ctx.roce_links) {
        const Link& l = *rl.link;
        const auto& m = l.module;
        if (!l.phy || !l.phy->speed_mbps || !m || m->error != 0) continue;
        // SFF-8636/8472 state a rate per lane (taken at the Ethernet lane speed under it);
        // CMIS states applications, of which the fastest is what the module is made for.
        double module_gbps = 0;
        std::string made_of;
        if (m->nominal_lane_gbps && m->media_lanes) {
            double lane_gbps = 0;
            for (const double step : {1.0, 10.0, 25.0, 50.0, 100.0})
                if (*m->nominal_lane_gbps >= step) lane_gbps = step;
            module_gbps = lane_gbps * *m->media_lanes;
            made_of = plural(*m->media_lanes, "lane", "lanes") + " of " + num(lane_gbps) + " Gb/s";
        } else if (m->fastest_application_gbps) {
            module_gbps = *m->fastest_application_gbps;
            made_of = "its fastest application, " + m->fastest_application;
        }
        const double speed_gbps = *l.phy->speed_mbps / 1000.0;
        if (module_gbps == 0 || speed_gbps >= module_gbps) continue;
        const std::string n = l.name;
        const std::string lanes = l.phy->lanes ? " on " + plural(*l.phy->lanes, "lane", "lanes") : "";
        std::map<std::string, std::string> details{{"speed_gbps", num(speed_gbps)},
                                                   {"module_gbps", num(module_gbps)},
                                                   {"lanes", l.phy->lanes ? std::to_string(*l.phy->lanes) : "unknown"},
                                                   {"module", module_words(*m)}};
        if (m->media_lanes) details["module_lanes"] = std::to_string(*m->media_lanes);
        if (!m->fastest_application.empty()) details["module_application"] = m->fastest_application;
        out.push_back(make(
            "link_speed_below_module", sev, n,
            n + " negotiated " + num(speed_gbps) + " Gb/s" + lanes + " while its " + module_words(*m) +
                " is made for " + num(module_gbps) + " Gb/s (" + made_of + "): RDMA over this rail gets at most " +
                num(speed_gbps) + " Gb/s",
            "Check what both ends advertise and negotiated (`ethtool " + n +
                "`: a speed forced on either side, autonegotiation off on one), that the switch port is configured "
                "for the module's speed and not split, and the lanes' receive power (`ethtool -m " +
                n +
                "`); reseat the module. Where the port is split by design (a breakout cable), disable this rule "
                "for it.",
            std::move(details)));
    }
}

// Frames that arrived with a bad FCS inside the counter window: corrupted on the wire (or by
// the NIC), each one a RoCE packet lost and retransmitted.
void rule_fcs_errors(const Context& ctx, Severity sev, Findings& out) {
    const std::string window = window_words(ctx.c.thresholds.counter_window);
    for (const auto& rl : ctx.roce_links) {
        const auto& inc = rl.link->driver_stat_increase;
        auto it = inc.find("eth-mac/FrameCheckSequenceErrors");
        if (it == inc.end() || it->second == 0) continue;
        const std::string n = rl.link->name;
        std::map<std::string, std::string> details{{"increase", num(it->second)}, {"window", window}};
        if (auto sym = inc.find("eth-phy/SymbolErrorDuringCarrier"); sym != inc.end())
            details["symbol_errors_increase"] = num(sym->second);
        out.push_back(make("fcs_errors", sev, n,
                           n + " received " + plural(it->second, "frame", "frames") +
                               " with a bad checksum (FCS) in the last " + window +
                               ": corrupted on the wire, each a lost RoCE packet that must be sent again",
                           "Check the physical link: the module's receive power (`ethtool -m " + n +
                               "`), FEC counters (`ethtool -I --show-fec " + n +
                               "`), then clean or reseat the cable and module; errors at the switch port's other end "
                               "too mean the cable, here only means this end.",
                           std::move(details)));
    }
}

// FEC correcting so many errors that the bit error rate before it passes thresholds.pre_fec_ber:
// nothing is lost yet, but the margin is going, and uncorrectable codewords come next.
void rule_fec_corrected_high(const Context& ctx, Severity sev, Findings& out) {
    const std::string window = window_words(ctx.c.thresholds.counter_window);
    const double window_s = std::chrono::duration<double>(ctx.c.thresholds.counter_window).count();
    const double limit = ctx.c.thresholds.pre_fec_ber;
    for (const auto& rl : ctx.roce_links) {
        const Link& l = *rl.link;
        if (!l.phy || !l.phy->speed_mbps || window_s <= 0) continue;
        const auto& inc = l.driver_stat_increase;
        auto bits = inc.find("fec_corrected_bits");
        auto blocks = inc.find("fec_corrected_blocks");
        const bool exact = bits != inc.end();
        const uint64_t errors = exact ? bits->second : blocks != inc.end() ? blocks->second : 0;
        if (errors == 0) continue;
        const double ber = static_cast<double>(errors) / (*l.phy->speed_mbps * 1e6 * window_s);
        if (ber < limit) continue;
        char ber_text[32], limit_text[32];
        std::snprintf(ber_text, sizeof ber_text, "%.1e", ber);
        std::snprintf(limit_text, sizeof limit_text, "%.1e", limit);
        const std::string n = l.name;
        std::map<std::string, std::string> details{{"pre_fec_ber", ber_text},
                                                   {"threshold", limit_text},
                                                   {"window", window},
                                                   {"counted", exact ? "corrected_bits" : "corrected_blocks"},
                                                   {"increase", num(errors)}};
        if (!l.phy->fec_active.empty()) details["fec_mode"] = l.phy->fec_active;
        if (const std::string lanes = per_lane(l.phy->fec_corrected_blocks_lanes); !lanes.empty())
            details["corrected_per_lane"] = lanes;
        out.push_back(make(
            "fec_corrected_high", sev, n,
            n + "'s FEC corrected " + num(errors) + (exact ? " bit errors" : " codewords") + " in the last " + window +
                ": a bit error rate before FEC of " + (exact ? "" : "at least ") + ber_text + ", over " + limit_text +
                ". Nothing is lost yet, but the link is degrading, and uncorrectable codewords (lost frames) come next",
            "Look at the module while the link still works: receive power and temperature per lane (`ethtool -m " + n +
                "`), then clean or reseat the fibre, or replace the cable or transceiver; a lane that corrects far "
                "more than the others points at it (corrected per lane since start: `ethtool -I --show-fec " +
                n + "`).",
            std::move(details)));
    }
}

void rule_discards_with_pfc(const Context& ctx, Severity sev, Findings& out) {
    const std::string window = window_words(ctx.c.thresholds.counter_window);
    for (const auto& rl : ctx.roce_links) {
        if (!rl.pfc_on) continue;
        // The drops at RoCE's priority where the driver counts them per priority, else at the port.
        std::string counter;
        uint64_t inc = 0;
        for (const auto& [name, v] : rl.link->driver_stat_increase) {
            auto m = driver_stat_meaning(name);
            if (!m || m->kind != DriverStatKind::discards) continue;
            if (m->priority == rl.priority || (m->priority < 0 && counter.empty())) {
                counter = name;
                inc = v;
            }
        }
        if (inc == 0) continue;
        const std::string n = rl.link->name, prio = std::to_string(rl.priority);
        out.push_back(make(
            "discards_with_pfc", sev, n,
            n + " dropped " + num(inc) + " received packets in the last " + window + " (" + counter +
                ") although PFC is on for RoCE's priority " + prio +
                ": a pause came too late (buffer headroom short for the cable), or the other end does not honour it",
            "Check that the switch port facing " + n + " has PFC on for priority " + prio +
                " (and the peer: `dcb pfc show dev " + n +
                "` on both), that the receive buffer headroom fits the "
                "cable length and MTU (`mlnx_qos -i " +
                n +
                "` buffer_size / cable_len), and which priority the "
                "drops are in (`ethtool -S " +
                n + " | grep discards`).",
            {{"counter", counter}, {"increase", num(inc)}, {"window", window}, {"roce_priority", prio}}));
    }
}

// rdma_cm's configfs default_roce_mode set to RoCE v1 on a RoCE port: rdma_cm applications
// then resolve RoCE v1 GIDs, which carry no IP header (not routable, no DSCP, so no ECN or
// DSCP-based priority) and meet peers that use RoCE v2 not at all.
void rule_rdma_cm_roce_v1(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& jp : ctx.ports) {
        const RdmaPort& p = *jp.port;
        if (!jp.roce || p.rdma_cm_default_mode != "IB/RoCE v1") continue;
        const std::string dir = "/sys/kernel/config/rdma_cm/" + jp.dev->name + "/ports/" + std::to_string(p.port);
        out.push_back(make("rdma_cm_roce_v1", sev, jp.object,
                           "rdma_cm connects over " + jp.object + " with RoCE v1 (" + dir +
                               "/default_roce_mode): its packets carry no IP header, so they are not routed, get no "
                               "DSCP (no ECN, no DSCP-based priority), and cannot reach peers that use RoCE v2",
                           "`echo \"RoCE v2\" > " + dir +
                               "/default_roce_mode` (and make it persistent where the directory is made at boot); "
                               "rdma_cm applications (NVMe-oF, iSER, SMB Direct, UCX's rdmacm) then use the RoCE "
                               "v2 GIDs as perftest -x and NCCL do.",
                           {{"default_roce_mode", p.rdma_cm_default_mode}, {"configfs", dir}}));
    }
}

void rule_roce_mtu_low(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& jp : ctx.ports) {
        const auto& p = *jp.port;
        if (!p.active_mtu) continue;
        const std::optional<int> want = ctx.c.expect.roce_active_mtu ? ctx.c.expect.roce_active_mtu : p.max_mtu;
        if (!want || *p.active_mtu >= *want) continue;

        std::map<std::string, std::string> details{{"expected_active_mtu", num(uint64_t(*want))},
                                                   {"active_mtu", num(uint64_t(*p.active_mtu))}};
        if (p.max_mtu) details["max_mtu"] = num(uint64_t(*p.max_mtu));
        const int needed = *want + kRoceHeaderBytes;
        std::string action;
        const Link* l = jp.ethernet && !jp.netdev.empty() ? ctx.link(jp.netdev) : nullptr;
        if (l && l->mtu > 0 && !jp.roce) {
            // iWARP and usNIC carry RDMA in TCP or UDP: no RoCE headers to make room for.
            details["netdev_mtu"] = num(uint64_t(l->mtu));
            action = "The RDMA MTU of " + std::string(to_string(jp.family)) + " follows the netdev MTU (" + jp.netdev +
                     " has " + num(uint64_t(l->mtu)) + "): run `ip link set " + jp.netdev +
                     " mtu 9000` on both nodes, then check `ibv_devinfo -d " + jp.dev->name + "`.";
        } else if (l && l->mtu > 0) {
            details["netdev_mtu"] = num(uint64_t(l->mtu));
            if (static_cast<int>(l->mtu) < needed)
                action = "The RoCE MTU follows the netdev MTU: " + num(uint64_t(*want)) +
                         " needs a netdev MTU of at least " + num(uint64_t(needed)) + " (" + num(uint64_t(*want)) +
                         " plus " + num(uint64_t(kRoceHeaderBytes)) + " bytes of RoCE headers), " + jp.netdev +
                         " has " + num(uint64_t(l->mtu)) + ". Run `ip link set " + jp.netdev +
                         " mtu 9000` on both nodes, then check `ibv_devinfo -d " + jp.dev->name + "`.";
            else
                action = jp.netdev + " already has MTU " + num(uint64_t(l->mtu)) + ", enough for " +
                         num(uint64_t(*want)) + ": bounce the link (`ip link set " + jp.netdev +
                         " down && ip link set " + jp.netdev + " up`) and check `ibv_devinfo -d " + jp.dev->name +
                         "`; the peer must allow the same MTU.";
        } else if (jp.family == NicFamily::infiniband) {
            action = "On InfiniBand the subnet manager sets the MTU: raise it in the partition configuration "
                     "(opensm partitions.conf, `mtu=5` for 4096) and check `ibv_devinfo -d " +
                     jp.dev->name + "`.";
        } else {
            action = "Raise the MTU of the port's netdev (9000 allows RoCE MTU 4096) on both nodes, then check "
                     "`ibv_devinfo -d " +
                     jp.dev->name + "`.";
        }
        out.push_back(make("roce_mtu_low", sev, jp.object,
                           port_words(jp) + " runs RDMA MTU " + num(uint64_t(*p.active_mtu)) + ", expected " +
                               num(uint64_t(*want)) + ": every message is cut into smaller packets",
                           action, std::move(details)));
    }
}

void rule_no_roce_v2_gid(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& jp : ctx.ports) {
        if (!jp.roce || jp.netdev.empty()) continue;
        const Link* l = ctx.link(jp.netdev);
        if (!l) continue;
        const auto addrs = ipv4_of(*l);
        const auto& p = *jp.port;
        if (addrs.empty()) {
            // A rail the operator named must be reachable by IP. An enslaved netdev is the
            // bond rule's business (its address lives on the bond).
            if (!l->master.empty() || !contains(ctx.c.expect.rails, jp.dev->name) || p.roce_v2_ipv4_gid_index) continue;
            out.push_back(make("no_roce_v2_gid", sev, jp.object,
                               port_words(jp) + " is a rail but has no IPv4 RoCE v2 GID: " + jp.netdev +
                                   " holds no IPv4 address, so peers cannot reach it by IP (rdma_cm, perftest -x, "
                                   "NCCL, UCX)",
                               "Give " + jp.netdev + " its rail address (`ip addr add <address>/<prefix> dev " +
                                   jp.netdev + "`); the kernel then adds the RoCE v2 GID that RDMA by IP uses.",
                               {{"netdev", jp.netdev}, {"ipv4_addresses", "none"}}));
            continue;
        }

        std::vector<std::string> missing;
        std::vector<std::string> v2;
        for (const auto& g : p.gids)
            if (g.type == "RoCE v2" && !g.ipv4.empty()) v2.push_back(std::to_string(g.index) + "=" + g.ipv4);
        for (const auto& a : addrs) {
            const std::string addr = ipv4::format(a.address);
            const bool held = std::any_of(p.gids.begin(), p.gids.end(),
                                          [&](const GidEntry& g) { return g.type == "RoCE v2" && g.ipv4 == addr; });
            if (!held) missing.push_back(a.text);
        }
        if (missing.empty() && p.roce_v2_ipv4_gid_index) continue;
        if (missing.empty()) missing.push_back(addrs.front().text);  // index unset though an entry exists

        const std::string first = missing.front().substr(0, missing.front().find('/'));
        out.push_back(make("no_roce_v2_gid", sev, jp.object,
                           port_words(jp) + " has no RoCE v2 GID for " + join(missing) +
                               ": RDMA connections to this address (rdma_cm, perftest, NCCL, UCX) will fail",
                           "The kernel adds one RoCE v2 GID per IP address of the netdev. Check `show_gids " +
                               jp.dev->name + "` (or `grep . /sys/class/infiniband/" + jp.dev->name + "/ports/" +
                               std::to_string(p.port) + "/gid_attrs/types/*`); make sure " + jp.netdev +
                               " is not enslaved to a bond, then re-add the "
                               "address (`ip addr del " +
                               missing.front() + " dev " + jp.netdev + " && ip addr add " + missing.front() + " dev " +
                               jp.netdev + "`). Once a RoCE v2 entry holds " + first +
                               ", both ends must use its index: `ib_write_bw -d " + jp.dev->name + " -x <index>`.",
                           {{"netdev", jp.netdev},
                            {"ipv4_without_gid", join(missing)},
                            {"roce_v2_ipv4_gids", v2.empty() ? "none" : join(v2)},
                            {"roce_v2_ipv4_gid_index",
                             p.roce_v2_ipv4_gid_index ? std::to_string(*p.roce_v2_ipv4_gid_index) : "unset"}}));
    }
}

// The IPv4 address the netlink history last saw `netdev` lose, "" when none.
std::string former_ipv4(const Snapshot& s, const std::string& netdev) {
    for (auto it = s.link_events.rbegin(); it != s.link_events.rend(); ++it)
        if (it->link == netdev && it->what == "address_removed" && it->address.find(':') == std::string::npos)
            return it->address;
    return "";
}

void rule_gid_on_bond(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& jp : ctx.ports) {
        if (!jp.roce) continue;
        const Link* own = jp.netdev.empty() ? nullptr : ctx.link(jp.netdev);
        // RoCE LAG: the RDMA device sits on the bond itself (mlx5_bond_0 -> bond0); its GIDs
        // belong on the bond and RDMA works.
        if (is_bond(own)) continue;

        std::string bond;
        if (own && !own->master.empty() && is_bond(ctx.link(own->master))) bond = own->master;
        std::vector<std::string> on_bond;
        for (const auto& g : jp.port->gids) {
            if (g.netdev.empty() || g.netdev == jp.netdev || !is_bond(ctx.link(g.netdev))) continue;
            on_bond.push_back(std::to_string(g.index));
            if (bond.empty()) bond = g.netdev;
        }
        if (bond.empty()) continue;

        const std::string nd = jp.netdev.empty() ? "<netdev>" : jp.netdev;
        std::string summary = port_words(jp) + ": ";
        if (own && own->master == bond) summary += nd + " is enslaved to " + bond;
        if (!on_bond.empty()) {
            if (own && own->master == bond) summary += " and ";
            summary += "its GID entries point at " + bond;
        }
        summary += "; RDMA on " + jp.dev->name + " (memory registration, connections) fails";

        // The rail's own former address, where the netlink history saw it go (enslaving a
        // link removes its addresses); else the bond's, which can go back to one former slave
        // only, the others needing their own.
        std::string addr_hint = "<ip>/<prefix>";
        std::string addr_note;
        const std::string former = former_ipv4(ctx.s, nd);
        if (!former.empty()) {
            addr_hint = former;
            addr_note = ", the address it held before";
        } else if (const Link* b = ctx.link(bond); b) {
            if (auto a = ipv4_of(*b); !a.empty()) {
                const bool first_slave = b->bond && !b->bond->slaves.empty() && b->bond->slaves.front() == nd;
                if (first_slave)
                    addr_hint = a.front().text;
                else
                    addr_note = "; " + bond + " holds " + a.front().text + " now, and each rail wants its own subnet";
            }
        }
        out.push_back(
            make("gid_on_bond", sev, jp.object, summary,
                 "To use RDMA on " + jp.dev->name +
                     ", release the interface from the bond on both nodes: `ip link set " + nd +
                     " nomaster` (`ip link delete " + bond + "` when no longer needed), give " + nd +
                     " its address back (`ip addr add " + addr_hint + " dev " + nd + "`" + addr_note +
                     ") and check `show_gids` points at " + nd +
                     ". Or configure RoCE LAG (mlx5 bond offload) so RDMA runs on the bond. Bonding for TCP can stay "
                     "on interfaces RDMA does not use.",
                 {{"bond", bond},
                  {"netdev", jp.netdev},
                  {"former_address", former.empty() ? "unknown" : former},
                  {"gid_indices_on_bond", on_bond.empty() ? "none" : join(on_bond)},
                  {"expected_gid_netdev", jp.netdev}}));
    }
}

void for_each_bond(const Snapshot& s, auto&& fn) {
    for (const auto& l : s.links)
        if (is_bond(&l)) fn(l, bond_slaves(s, l));
}

void rule_bond_slave_down(const Context& ctx, Severity sev, Findings& out) {
    for_each_bond(ctx.s, [&](const Link& bond, const std::vector<const Link*>& slaves) {
        const auto up = static_cast<size_t>(
            std::count_if(slaves.begin(), slaves.end(), [](const Link* l) { return slave_up(*l); }));
        for (const Link* sl : slaves) {
            if (slave_up(*sl)) continue;
            // Losing redundancy is a warning; losing the last link is the rule's full severity.
            const Severity s = up == 0 ? sev : Severity::warning;
            const std::string mii = sl->slave && !sl->slave->mii_status.empty() ? sl->slave->mii_status : "n/a";
            out.push_back(
                make("bond_slave_down", s, sl->name,
                     "Bond " + bond.name + " slave " + sl->name + " is down (MII " + mii + "): " + bond.name +
                         (up == 0 ? " has no working link left"
                                  : " runs on " + num(uint64_t(up)) + " of " + num(uint64_t(slaves.size())) + " links"),
                     "Check `cat /proc/net/bonding/" + bond.name + "`, bring the slave up (`ip link set " + sl->name +
                         " up`) and check its cable and the peer's port (`ethtool " + sl->name + "`).",
                     {{"bond", bond.name},
                      {"mii_status", mii},
                      {"slaves_up", num(uint64_t(up))},
                      {"slaves", num(uint64_t(slaves.size()))}}));
        }
    });
}

void rule_bond_degraded(const Context& ctx, Severity sev, Findings& out) {
    for_each_bond(ctx.s, [&](const Link& bond, const std::vector<const Link*>& slaves) {
        std::vector<std::string> down;
        for (const Link* sl : slaves)
            if (!slave_up(*sl)) down.push_back(sl->name);
        if (down.empty()) return;
        const size_t up = slaves.size() - down.size();
        out.push_back(
            make("bond_degraded", sev, bond.name,
                 "Bond " + bond.name + " is degraded: " + num(uint64_t(up)) + " of " + num(uint64_t(slaves.size())) +
                     " slaves up (" + join(down) + " down)",
                 "Bandwidth and redundancy are reduced. Check `cat /proc/net/bonding/" + bond.name +
                     "` and bring the down slaves back (`ip link set " + down.front() + " up`, cable, peer port).",
                 {{"slaves_up", num(uint64_t(up))}, {"slaves", num(uint64_t(slaves.size()))}, {"down", join(down)}}));
    });
}

void rule_bond_link_failures(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& l : ctx.s.links) {
        if (!l.slave || !l.slave->link_failure_increase || *l.slave->link_failure_increase == 0) continue;
        const uint64_t n = *l.slave->link_failure_increase;
        const std::string bond = l.master.empty() ? "its bond" : l.master;
        out.push_back(make("bond_link_failures", sev, l.name,
                           "Bond slave " + l.name + " (of " + bond + ") lost its link " + plural(n, "time", "times") +
                               " in the last " + window_words(ctx.c.thresholds.counter_window),
                           "An unstable link: check the cable and transceiver (`ethtool -m " + l.name +
                               "`), the peer's port, and `dmesg | grep -i " + l.name + "`.",
                           {{"bond", l.master},
                            {"link_failures_in_window", num(n)},
                            {"window", window_words(ctx.c.thresholds.counter_window)},
                            {"link_failure_count",
                             l.slave->link_failure_count ? num(uint64_t(*l.slave->link_failure_count)) : "?"}}));
    }
}

void rule_bond_mode_reorders(const Context& ctx, Severity sev, Findings& out) {
    for_each_bond(ctx.s, [&](const Link& bond, const std::vector<const Link*>& slaves) {
        if (!bond.bond || (bond.bond->mode != "balance-rr" && bond.bond->mode != "0")) return;
        std::string release;
        std::string enslave;
        for (const Link* sl : slaves) {
            release += "ip link set " + sl->name + " nomaster; ";
            enslave += "; ip link set " + sl->name + " master " + bond.name;
        }
        out.push_back(
            make("bond_mode_reorders", sev, bond.name,
                 "Bond " + bond.name +
                     " uses balance-rr: packets of one TCP connection alternate between links and "
                     "arrive out of order, which throttles TCP",
                 "For direct-connected nodes use balance-xor with xmit_hash_policy layer3+4 (the mode changes only "
                 "with the bond down and empty): `ip link set " +
                     bond.name + " down; " + release + "ip link set " + bond.name +
                     " type bond mode balance-xor xmit_hash_policy layer3+4" + enslave + "; ip link set " + bond.name +
                     " up` (netplan: `mode: balance-xor`, `transmit-hash-policy: layer3+4`). One TCP stream "
                     "still uses one link only; parallel streams spread across both.",
                 {{"mode", bond.bond->mode},
                  {"expected_mode", "balance-xor"},
                  {"xmit_hash_policy", bond.bond->xmit_hash_policy}}));
    });
}

void rule_subnet_overlap(const Context& ctx, Severity sev, Findings& out) {
    // Every link's addresses parsed once: each RDMA netdev is held against all of them.
    std::vector<std::pair<const Link*, std::vector<V4>>> v4;
    for (const auto& other : ctx.s.links)
        if (other.name != "lo")
            if (auto a = ipv4_of(other); !a.empty()) v4.emplace_back(&other, std::move(a));
    std::set<std::string> done;
    for (const auto& jp : ctx.ports) {
        if (!jp.ethernet || jp.netdev.empty() || !done.insert(jp.netdev).second) continue;
        const Link* l = ctx.link(jp.netdev);
        if (!l) continue;
        const auto mine = ipv4_of(*l);
        if (mine.empty()) continue;

        std::vector<std::string> conflicts;
        std::string first_cmd;
        bool other_rail = false;
        for (const auto& [o, addrs] : v4) {
            const Link& other = *o;
            // The bond that holds the netdev (or, for RoCE LAG, its slaves) is the same path.
            if (other.name == l->name || other.name == l->master || other.master == l->name) continue;
            for (const auto& theirs : addrs) {
                const bool hit = std::any_of(mine.begin(), mine.end(), [&](const V4& m) {
                    return ipv4::overlap(m.address, m.prefixlen, theirs.address, theirs.prefixlen);
                });
                if (!hit) continue;
                conflicts.push_back(other.name + " " + theirs.text);
                if (first_cmd.empty()) first_cmd = "ip addr del " + theirs.text + " dev " + other.name;
                if (contains(ctx.netdevs, other.name)) other_rail = true;
            }
        }
        if (conflicts.empty()) continue;

        std::vector<std::string> my_text;
        for (const auto& m : mine) my_text.push_back(m.text);
        std::string action = "Remove the address that does not belong there (`" + first_cmd +
                             "`) or move it to another subnet";
        if (other_rail) action += "; give each RDMA rail its own subnet (e.g. 192.168.100.0/24 and 192.168.200.0/24)";
        action += ". If both must stay, pin UCX to the RDMA device: `UCX_NET_DEVICES=" + jp.dev->name + ":" +
                  std::to_string(jp.port->port) + "`.";
        out.push_back(
            make("subnet_overlap", sev, jp.netdev,
                 "Interface " + jp.netdev + " (" + join(my_text) + ") shares its subnet with " + join(conflicts) +
                     ": traffic and UCX may pick the wrong interface",
                 action,
                 {{"addresses", join(my_text)}, {"conflicts", join(conflicts)}, {"rdma_device", jp.dev->name}}));
    }
}

// Counters any increase of which is fatal (NVSentinel's list, plus rxe's names for the
// same two retry failures).
struct CounterAdvice {
    const char* name;
    const char* meaning;
    const char* action;
};

constexpr CounterAdvice kFatalCounters[] = {
    {"link_downed", "the link went down and recovered",
     "Check the cable and transceiver (`ethtool -m NETDEV`) and the peer's port; see also link_flapping."},
    {"excessive_buffer_overrun_errors", "receive buffers overran",
     "Lossless flow control is missing or misconfigured: check PFC on the RoCE priority on both ends and the "
     "switch (`mlnx_qos -i NETDEV`)."},
    {"local_link_integrity_errors", "the physical link exceeded its error limit",
     "Reseat or replace the cable or transceiver (`ethtool -m NETDEV` for optical power)."},
    {"rnr_nak_retry_err", "the peer was not ready to receive too many times",
     "The receiving application does not post receive buffers fast enough; check the peer application."},
    {"req_transport_retries_exceeded", "requests got no acknowledgement after all retries",
     "The peer or the path stopped answering: check the peer's port, that both ends use the same GID index "
     "and MTU, and packet loss on the path."},
    {"retry_exceeded_err", "requests got no acknowledgement after all retries (Soft-RoCE)",
     "The peer or the path stopped answering: check the peer, GID index and MTU on both ends."},
    {"retry_rnr_exceeded_err", "the peer was not ready to receive too many times (Soft-RoCE)",
     "The receiving application does not post receive buffers fast enough; check the peer application."},
};

// Counters whose rise is worth a warning but not an outage.
constexpr CounterAdvice kRisingCounters[] = {
    {"port_rcv_errors", "received packets were malformed",
     "Check the cable and transceiver (`ethtool -m NETDEV`) and that both ends use the same MTU."},
    {"port_xmit_discards", "outgoing packets were discarded",
     "The port could not send: congestion without working PFC/ECN, or the link went down. Check "
     "`mlnx_qos -i NETDEV` and the switch."},
    // Not on NVSentinel's list, but each increment is a link retrain that stalls traffic.
    {"link_error_recovery", "the link retrained after errors",
     "Check the cable and transceiver (`ethtool -m NETDEV`) and the peer's port."},
};

// Admin-downs of `netdev` the netlink history saw within `window` of the snapshot.
uint64_t admin_downs_within(const Snapshot& s, const std::string& netdev, Duration window) {
    if (netdev.empty()) return 0;
    uint64_t n = 0;
    for (const auto& e : s.link_events)
        if (e.link == netdev && e.what == "admin_down" && e.at + window >= s.collected_at) ++n;
    return n;
}

void replace_all(std::string& s, std::string_view from, const std::string& to) {
    for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
        s.replace(pos, from.size(), to);
}

// Advice written for Ethernet ("`ethtool -m NETDEV`"), in the words of the port's family:
// an InfiniBand port has no netdev, its cable is seen through ibstat/iblinkinfo and its
// lossless flow control is the fabric's credit scheme, not PFC.
std::string with_netdev(const char* text, const JudgedPort& jp) {
    std::string s = text;
    if (is_ib(jp)) {
        replace_all(s, "`ethtool -m NETDEV` for optical power and temperature", ibstat(jp) + ", `iblinkinfo`");
        replace_all(s, "`ethtool -m NETDEV`", ibstat(jp) + ", `iblinkinfo`");
        replace_all(s, "(`mlnx_qos -i NETDEV`)", "(the subnet manager's QoS and VL settings, `perfquery`)");
        replace_all(s, "`mlnx_qos -i NETDEV`", "the subnet manager's QoS and VL settings (`perfquery`)");
        replace_all(s, "check PFC on the RoCE priority on both ends and the switch",
                    "check the VL arbitration and buffer settings of both ends and the switch");
        replace_all(s, "enable PFC or ECN for the RoCE priority on both ends and the switch",
                    "check the fabric's congestion control and QoS");
        replace_all(s, "the RoCE path", "the path");
        replace_all(s, "congestion without working PFC/ECN", "congestion");
        replace_all(s, "NETDEV", jp.dev->name);
        return s;
    }
    replace_all(s, "NETDEV", jp.netdev.empty() ? "<netdev>" : jp.netdev);
    return s;
}

void rule_error_counters(const Context& ctx, Severity sev, Findings& out) {
    const auto& t = ctx.c.thresholds;
    const std::string window = window_words(t.counter_window);
    const double window_hours = std::chrono::duration<double>(t.counter_window).count() / 3600.0;
    for (const auto& jp : ctx.ports) {
        const auto& p = *jp.port;
        auto counter_finding = [&](Severity s, const std::string& counter, std::string summary, std::string action,
                                   std::map<std::string, std::string> details) {
            details["counter"] = counter;
            out.push_back(make("error_counters", s, jp.object + ":" + counter, std::move(summary), std::move(action),
                               std::move(details)));
        };
        // ACK timeouts and rising receive errors degrade; they are not the outage the others are.
        const Severity warn = Severity::warning;

        for (const auto& c : kFatalCounters) {
            auto it = p.window_increase.find(c.name);
            if (it == p.window_increase.end() || it->second == 0) continue;
            uint64_t increase = it->second;
            std::map<std::string, std::string> details{{"increase", num(increase)},
                                                       {"window", window},
                                                       {"expected", "0"}};
            // A link taken down on purpose (to enslave it, to change its MTU) downs the port
            // once: each admin-down the netlink history saw inside the window accounts for one.
            uint64_t planned = 0;
            if (std::string_view(c.name) == "link_downed") {
                planned = admin_downs_within(ctx.s, jp.netdev, t.counter_window);
                if (planned >= increase) continue;
                if (planned > 0) {
                    increase -= planned;
                    details["increase"] = num(increase);
                    details["admin_downs"] = num(planned);
                }
            }
            counter_finding(sev, c.name,
                            port_words(jp) + ": " + c.name + " rose by " + num(increase) + " in the last " + window +
                                " (" + c.meaning + ")" +
                                (planned > 0 ? ", not counting " + plural(planned, "admin-down", "admin-downs") +
                                                   " of " + jp.netdev
                                             : ""),
                            with_netdev(c.action, jp), std::move(details));
        }

        if (auto it = p.window_increase.find("symbol_error"); it != p.window_increase.end() && window_hours > 0) {
            const double per_hour = static_cast<double>(it->second) / window_hours;
            if (per_hour > t.symbol_error_per_hour)
                counter_finding(sev, "symbol_error",
                                port_words(jp) + ": " + num(per_hour) + " symbol errors per hour (threshold " +
                                    num(t.symbol_error_per_hour) + "/hour): the bit error rate is too high",
                                with_netdev("Reseat or replace the cable or transceiver (`ethtool -m NETDEV` for "
                                            "optical power and temperature), and check the peer's port.",
                                            jp),
                                {{"per_hour", num(per_hour)},
                                 {"threshold_per_hour", num(t.symbol_error_per_hour)},
                                 {"increase", num(it->second)},
                                 {"window", window}});
        }

        if (auto it = p.rates.find("local_ack_timeout_err");
            it != p.rates.end() && it->second > t.local_ack_timeout_per_second)
            counter_finding(warn, "local_ack_timeout_err",
                            port_words(jp) + ": " + num(it->second) + " ACK timeouts per second (threshold " +
                                num(t.local_ack_timeout_per_second) + "/s): packets are being lost and retransmitted",
                            with_netdev("Packet loss on the RoCE path: enable PFC or ECN for the RoCE priority on "
                                        "both ends and the switch (`mlnx_qos -i NETDEV`), check for drops and for "
                                        "MTU mismatches.",
                                        jp),
                            {{"per_second", num(it->second)},
                             {"threshold_per_second", num(t.local_ack_timeout_per_second)}});

        for (const auto& c : kRisingCounters) {
            auto it = p.window_increase.find(c.name);
            if (it == p.window_increase.end() || it->second == 0) continue;
            counter_finding(warn, c.name,
                            port_words(jp) + ": " + c.name + " rose by " + num(it->second) + " in the last " + window +
                                " (" + c.meaning + ")",
                            with_netdev(c.action, jp),
                            {{"increase", num(it->second)}, {"window", window}, {"expected", "0"}});
        }
    }
}

void rule_congestion(const Context& ctx, Severity sev, Findings& out) {
    const auto& t = ctx.c.thresholds;
    struct Check {
        const char* name;
        const char* words;
        double threshold;
    };
    const Check checks[] = {
        {"np_cnp_sent", "congestion notifications sent (this node receives marked packets)", t.cnp_per_second},
        {"rp_cnp_handled", "congestion notifications handled (this node's sends are being slowed)", t.cnp_per_second},
        {"np_ecn_marked_roce_packets", "ECN-marked RoCE packets received", t.ecn_marked_per_second},
    };
    for (const auto& jp : ctx.ports) {
        std::vector<std::string> over;
        std::map<std::string, std::string> details;
        for (const auto& c : checks) {
            auto it = jp.port->rates.find(c.name);
            if (it == jp.port->rates.end() || it->second <= c.threshold) continue;
            over.push_back(num(it->second) + "/s " + c.words);
            details[std::string(c.name) + "_per_second"] = num(it->second);
            details[std::string(c.name) + "_threshold"] = num(c.threshold);
        }
        if (over.empty()) continue;
        const std::string settings = is_ib(jp) ? "the fabric's congestion control settings (the subnet manager's)"
                                               : "the PFC/ECN settings on both ends (`mlnx_qos -i " +
                                                     (jp.netdev.empty() ? std::string("<netdev>") : jp.netdev) + "`)";
        out.push_back(make("congestion", sev, jp.object, port_words(jp) + " is congested: " + join(over, "; "),
                           std::string("A link on the path is oversubscribed and ") +
                               (is_ib(jp) ? "the fabric's congestion control" : "DCQCN") +
                               " is throttling senders. Check switch port utilisation and " + settings +
                               "; spread traffic over more rails or fewer senders per receiver.",
                           std::move(details)));
    }
}

void rule_link_flapping(const Context& ctx, Severity sev, Findings& out) {
    const auto& t = ctx.c.thresholds;
    if (t.flap_transitions == 0) return;
    // The rails' netdevs, every bond slave, and the netdevs [cluster] rails names as rails (a
    // TCP-only node's rails carry its mesh probes).
    std::vector<std::string> names = ctx.netdevs;
    for (const auto& l : ctx.s.links)
        if (l.slave && !contains(names, l.name)) names.push_back(l.name);
    for (const auto& name : ctx.c.cluster.rails)
        if (!contains(names, name)) names.push_back(name);
    for (const auto& name : names) {
        const Link* l = ctx.link(name);
        if (!l || l->transitions_in_window < t.flap_transitions) continue;
        const std::string window = window_words(t.flap_window);
        out.push_back(make("link_flapping", sev, name,
                           "Interface " + name + " is flapping: " + num(uint64_t(l->transitions_in_window)) +
                               " carrier changes in the last " + window + " (threshold " +
                               num(uint64_t(t.flap_transitions)) + ")",
                           "The link keeps going down and up: reseat or replace the cable or transceiver (`ethtool "
                           "-m " +
                               name + "`), check the peer's port and `dmesg | grep -i " + name +
                               "`; make sure autonegotiation agrees on both ends.",
                           {{"transitions_in_window", num(uint64_t(l->transitions_in_window))},
                            {"threshold", num(uint64_t(t.flap_transitions))},
                            {"window", window}}));
    }
}

void rule_peermem_missing(const Context& ctx, Severity sev, Findings& out) {
    const auto& h = ctx.s.host;
    // GPUDirect RDMA only matters where there is RDMA to do.
    if (!h.nvidia_gpu_present || h.nvidia_peermem_loaded || ctx.ports.empty()) return;
    out.push_back(
        make("peermem_missing", sev, "nvidia_peermem",
             "An NVIDIA GPU is present but nvidia_peermem is not loaded: GPUDirect RDMA is off, and GPU buffers "
             "bounce through host memory (3.5-4.9 Gbps instead of 80+)",
             "`modprobe nvidia_peermem`, and load it at boot (`echo nvidia_peermem > "
             "/etc/modules-load.d/nvidia-peermem.conf`). If modprobe fails with 'Invalid argument', this platform does "
             "not support GPUDirect RDMA (e.g. DGX Spark's unified memory): register host-pinned buffers "
             "(cudaHostAlloc) instead and disable this rule ([rules.peermem_missing] enabled = false).",
             {{"nvidia_gpu_present", "yes"}, {"nvidia_peermem_loaded", "no"}}));
}

// A collector that failed, or sysfs files it could not read: the rules that need what they
// hold are silent, so without this a node whose driver returns EIO on its counters, or whose
// sysfs reads hang, would pass as healthy (and `--once` would exit 0).
void rule_collector_errors(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& c : ctx.s.collectors) {
        if (c.name != "sysfs" && c.name != "netlink") continue;
        const std::string first = c.errors.empty() ? c.last_error : c.errors.front();
        const bool sysfs = c.name == "sysfs";
        const std::string needs = sysfs ? "devices, ports, GID tables and counters" : "links, addresses and bonds";
        if (!c.success) {
            out.push_back(make(
                "collector_errors", sev, c.name,
                "The " + c.name + " collector failed this round (" + first + "): the " + needs +
                    " it reads are not current, so the verdicts that need them are missing or stale",
                sysfs ? "A sysfs read that does not return is a wedged driver or firmware: check `dmesg | grep -i -E "
                        "'mlx5|infiniband|timeout'` and the device's health (`devlink health show`). If rocewatchd "
                        "runs with --sysfs-root, check that the tree is readable."
                      : "Check that rocewatchd may open netlink sockets (the unit's RestrictAddressFamilies keeps "
                        "AF_NETLINK) and the journal for the netlink error; `ip -d link show` should work here.",
                {{"collector", c.name}, {"error", first}}));
            continue;
        }
        if (c.read_errors == 0) continue;
        const bool one = c.read_errors == 1;
        out.push_back(make(
            "collector_errors", sev, c.name,
            plural(c.read_errors, "file", "files") + " the " + c.name +
                " collector reads could not be read or parsed this round (" + first + (one ? "" : ", and more") +
                (one ? "): the value it holds is missing" : "): the values they hold are missing") +
                ", so the verdicts that need them are incomplete",
            "Read the file by hand (`cat FILE`) and check `dmesg` for the driver's errors at that time; a file that "
            "fails with EIO or EINVAL is often a counter the firmware does not serve. If that is expected on this "
            "hardware, give the rule a delay or turn it off ([rules.collector_errors] for = \"10m\" or enabled = "
            "false). `GET /api/v1/status` lists the first few dozen files that failed (collectors[].errors), and the "
            "journal each one once.",
            {{"collector", c.name}, {"read_errors", num(c.read_errors)}, {"first_error", first}}));
    }
}

// ---------------------------------------------------------------- probe rules
//
// Over the probe book (latest result per peer, rail and kind). Rules over RDMA and UCX
// results see none until those probes exist; they are tested on synthetic results.

std::string probe_object(const ProbeKey& k) {
    return k.peer + (k.rail.empty() ? "" : "/" + k.rail) + ":" + to_string(k.kind);
}

// The rate a probe could reach: its rail's, or for a run over all rails (multi-rail, UCX's
// own lanes) the sum of every rail's; nullopt when any is unknown.
std::optional<double> local_rate_bps(const Context& ctx, const ProbeKey& k) {
    for (const auto& p : ctx.c.peers) {
        if (p.name != k.peer) continue;
        if (!k.rail.empty()) {
            for (const auto& r : p.rails)
                if (r.name == k.rail) return rail_rate_bps(ctx.s, r);
            return std::nullopt;
        }
        if (!is_peer_level_kind(k.kind) || p.rails.empty()) return std::nullopt;
        double sum = 0;
        for (const auto& r : p.rails) {
            auto rate = rail_rate_bps(ctx.s, r);
            if (!rate) return std::nullopt;
            sum += *rate;
        }
        return sum;
    }
    return std::nullopt;
}

// Every failing probe path gets one verdict (probe_paths.hpp); each of these rules words its own.
std::vector<PathVerdict> path_verdicts(const Context& ctx, const char* rule) {
    std::vector<PathVerdict> v;
    if (!ctx.s.probes) return v;
    for (auto& p : judge_probe_paths(*ctx.s.probes))
        if (p.rule == rule) v.push_back(std::move(p));
    return v;
}

std::string kinds_and_reasons(const std::vector<const ProbeResult*>& v) {
    std::vector<std::string> words;
    for (const auto* r : v) words.push_back(std::string(to_string(r->kind)) + ": " + r->reason);
    return join(words);
}

std::string reasons_of(const std::vector<const ProbeResult*>& v) {
    std::vector<std::string> words;
    for (const auto* r : v)
        if (!contains(words, r->reason)) words.push_back(r->reason);
    return join(words);
}

std::string over(const std::string& rail) { return rail.empty() ? "" : " over " + rail; }

// "reason" or "reason: detail", what a failed probe saw, for a summary's parentheses.
std::string what_failed(const ProbeResult& r) { return r.detail.empty() ? r.reason : r.reason + ": " + r.detail; }

void rule_peer_unreachable(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& v : path_verdicts(ctx, "peer_unreachable")) {
        const std::string why = reasons_of(v.failed);
        out.push_back(
            make("peer_unreachable", sev, v.peer,
                 "Peer " + v.peer + " is unreachable: its last probes failed (" + why + ")" +
                     (v.rails.empty() ? "" : " on every rail (" + join(v.rails) + ")"),
                 "Check that rocewatchd runs on " + v.peer +
                     " and that its HTTP and probe data ports "
                     "are reachable from here (routes, firewall, the rail links themselves).",
                 {{"reason", why}, {"failed_probes", std::to_string(v.failed.size())}, {"rails", join(v.rails)}}));
    }
}

void rule_rail_unreachable(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& v : path_verdicts(ctx, "rail_unreachable")) {
        out.push_back(
            make("rail_unreachable", sev, v.peer + "/" + v.rail,
                 "Every probe to " + v.peer + " over rail " + v.rail + " fails (" + kinds_and_reasons(v.failed) +
                     ") while other paths to " + v.peer + " pass: the rail to that peer is down",
                 "Check the rail on both ends: the link and its carrier, the peer's address on the rail "
                 "(`ip -br addr` on " +
                     v.peer +
                     "), its RoCE v2 GID, the VLAN and the switch port; `ping -I <rail netdev>` the peer's rail "
                     "address.",
                 {{"reason", reasons_of(v.failed)}, {"failed_probes", std::to_string(v.failed.size())}}));
    }
}

void rule_rdma_fails_tcp_works(const Context& ctx, Severity sev, Findings& out) {
    const auto cabling = judge_cabling(ctx.s, ctx.c);
    for (const auto& v : path_verdicts(ctx, "rdma_fails_tcp_works")) {
        // Where the cabling checks know why (TCP answered by the peer's wrong NIC), they say it,
        // rather than send people to the RDMA set-up.
        const Finding* cause = nullptr;
        for (const auto& f : cabling)
            if (f.object == v.peer + "/" + v.rail && f.rule != "rail_subnet_mismatch") cause = &f;
        for (const auto* r : v.failed) {
            const ProbeKey k{r->peer, r->rail, r->kind};
            if (cause) {
                out.push_back(make("rdma_fails_tcp_works", sev, probe_object(k),
                                   "RDMA to " + v.peer + over(v.rail) + " fails (" + what_failed(*r) +
                                       ") while TCP works, but TCP reached the peer's wrong NIC (" + cause->rule +
                                       "): " + cause->summary,
                                   cause->action, {{"reason", r->reason}, {"cause", cause->rule}}));
                continue;
            }
            out.push_back(make("rdma_fails_tcp_works", sev, probe_object(k),
                               "RDMA to " + v.peer + over(v.rail) + " fails (" + what_failed(*r) +
                                   ") while TCP over the same path works: the network carries IP, so the fault is "
                                   "in the RDMA set-up",
                               "Check the GID index (a RoCE v2 GID holding the rail's IPv4 address on both ends), "
                               "the RoCE MTU on both ends, and the QP settings (path MTU, GID type, PFC/ECN for "
                               "lossless traffic); `show_gids` on both nodes.",
                               {{"reason", r->reason}}));
        }
    }
}

void rule_tcp_fails_rdma_works(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& v : path_verdicts(ctx, "tcp_fails_rdma_works")) {
        for (const auto* r : v.failed) {
            const ProbeKey k{r->peer, r->rail, r->kind};
            out.push_back(make("tcp_fails_rdma_works", sev, probe_object(k),
                               "TCP to " + v.peer + over(v.rail) + " fails (" + what_failed(*r) +
                                   ") while RDMA over the same path works: the RDMA port answers, so the fault is "
                                   "in IP or in the peer's daemon",
                               "Check the peer's probe data port and firewall (nftables/iptables on both ends), that "
                               "rocewatchd runs on " +
                                   v.peer +
                                   ", and the rail netdev's address and routes on both ends (the TCP probe is bound "
                                   "to the rail's interface).",
                               {{"reason", r->reason}}));
        }
    }
}

// What to do about a failed probe, where its reason says more than "read the detail".
std::string probe_failed_action(const std::string& reason, const std::string& peer) {
    if (reason == "version_mismatch")
        return "Run the same rocewatch version here and on " + peer +
               ": the two speak different peer protocols (the detail names both), so no probe runs between them. "
               "In a rolling upgrade this clears once both run the new version.";
    if (reason == "auth_refused")
        return peer + " refused this node's peer token: give both nodes the same token (probes.token_file, or the "
                      "rocewatch-peer-token credential) and restart the daemon where it changed.";
    return "Read the probe's detail (GET /api/v1/probes); the reason names what was observed. "
           "Run the probe again on demand (POST /api/v1/probes/run) after a change.";
}

void rule_probe_failed(const Context& ctx, Severity sev, Findings& out) {
    for (const auto& v : path_verdicts(ctx, "probe_failed")) {
        for (const auto* r : v.failed) {
            const ProbeKey k{r->peer, r->rail, r->kind};
            out.push_back(make("probe_failed", sev, probe_object(k),
                               std::string(to_string(r->kind)) + " to " + v.peer + over(v.rail) + " fails (" +
                                   r->reason + ")" + (r->detail.empty() ? "" : ": " + r->detail),
                               probe_failed_action(r->reason, v.peer), {{"reason", r->reason}}));
        }
    }
}

void rule_probe_bandwidth_low(const Context& ctx, Severity sev, Findings& out) {
    if (!ctx.s.probes) return;
    for (const auto& [k, results] : ctx.s.probes->results) {
        const ProbeResult* run = is_bandwidth_kind(k.kind) ? last_run(results) : nullptr;
        if (!run) continue;
        const ProbeResult& r = *run;
        if (!r.success || !r.bandwidth_bits_per_second) continue;
        auto rate = local_rate_bps(ctx, k);
        if (!rate) continue;
        const double want = *rate * ctx.c.probes.bw_fraction_of_link;
        if (*r.bandwidth_bits_per_second >= want) continue;
        out.push_back(
            make("probe_bandwidth_low", sev, probe_object(k),
                 std::string(to_string(k.kind)) + " to " + k.peer + (k.rail.empty() ? "" : " over " + k.rail) +
                     " measured " + num(*r.bandwidth_bits_per_second / 1e9) + " Gbps, below " +
                     num(ctx.c.probes.bw_fraction_of_link * 100) + "% of the " + num(*rate / 1e9) + " Gbps link",
                 "Check MTU on both ends (9000 for 100G), the link rate, error and congestion counters, "
                 "and whether other traffic shared the link during the probe.",
                 {{"measured_bytes_per_second", num(*r.bandwidth_bits_per_second / 8)},
                  {"link_bytes_per_second", num(*rate / 8)}}));
    }
}

void rule_probe_latency_high(const Context& ctx, Severity sev, Findings& out) {
    if (!ctx.s.probes) return;
    for (const auto& [k, results] : ctx.s.probes->results) {
        const ProbeResult* run = last_run(results);
        if (!run) continue;
        const ProbeResult& r = *run;
        const LatencyThreshold t = latency_threshold(ctx.c.probes, k.kind);
        const double limit = t.seconds;
        if (!r.success || !r.latency || r.latency->p99 <= limit) continue;
        out.push_back(make("probe_latency_high", sev, probe_object(k),
                           std::string(to_string(k.kind)) + " to " + k.peer +
                               (k.rail.empty() ? "" : " over " + k.rail) + ": p99 latency " +
                               num(r.latency->p99 * 1e6) + " us above " + std::to_string(std::llround(limit * 1e6)) +
                               " us (" + t.key + ")",
                           "Look for congestion (CNP/ECN counters), retransmissions, a saturated link or a busy "
                           "peer CPU; compare with the other rails.",
                           {{"p99_seconds", std::to_string(r.latency->p99)},
                            {"typical_seconds", std::to_string(r.latency->typical)}}));
    }
}

void rule_rail_imbalance(const Context& ctx, Severity sev, Findings& out) {
    if (!ctx.s.probes) return;
    for (const auto& [k, results] : ctx.s.probes->results) {
        const ProbeResult* run = last_run(results);
        if (!run) continue;
        const ProbeResult& r = *run;
        if (!r.success || r.bytes_per_rail.size() < 2) continue;
        uint64_t total = 0, top = 0;
        std::string top_rail;
        for (const auto& [rail, b] : r.bytes_per_rail) {
            total += b;
            if (b > top) {
                top = b;
                top_rail = rail;
            }
        }
        if (total == 0 || static_cast<double>(top) <= 0.9 * static_cast<double>(total)) continue;
        const bool ucx = is_ucx_kind(k.kind);
        auto lanes = r.info.find("ucx_lanes");
        out.push_back(
            make("rail_imbalance", sev, probe_object(k),
                 "Rail " + top_rail + " carried " + num(100.0 * static_cast<double>(top) / static_cast<double>(total)) +
                     "% of a " + std::to_string(r.bytes_per_rail.size()) + "-rail " + to_string(k.kind) + " run to " +
                     k.peer + ": the other rails sat idle" +
                     (ucx && lanes != r.info.end() ? " (UCX lanes: " + lanes->second + ")" : ""),
                 ucx ? "UCX put its traffic on one rail, as NIXL would: list every rail's device in UCX_NET_DEVICES "
                       "(e.g. mlx5_0:1,mlx5_1:1) and raise UCX_MAX_RNDV_RAILS / UCX_MAX_EAGER_RAILS to the number "
                       "of rails; check that every rail has a RoCE v2 GID."
                     : "Check that every rail is up with an address and a RoCE v2 GID, that the application "
                       "(UCX_NET_DEVICES, NCCL_IB_HCA) lists all rails, and the routing of each rail's subnet.",
                 {{"top_rail", top_rail}}));
    }
}

void rule_ucx_version_mismatch(const Context& ctx, Severity sev, Findings& out) {
    if (!ctx.s.probes) return;
    for (const auto& [name, p] : ctx.s.probes->peers) {
        if (!p.hello || p.hello->ucx_version.empty() || ctx.s.host.ucx_version.empty() ||
            p.hello->ucx_version == ctx.s.host.ucx_version)
            continue;
        out.push_back(make("ucx_version_mismatch", sev, name,
                           "UCX " + ctx.s.host.ucx_version + " here, " + p.hello->ucx_version + " on " + name +
                               ": UCX peers of different versions may not connect, or pick different transports",
                           "Install the same UCX version on both nodes (and the same NIXL/NCCL build).",
                           {{"local", ctx.s.host.ucx_version}, {"peer", p.hello->ucx_version}}));
    }
}

// The lossless RoCE settings of one rail against the peer's end, where both ends know them:
// RoCE's priority, the PFC priorities, and ECN at RoCE's priority. Appends the differences
// in words and their details; true when there was one.
bool compare_lossless(const Snapshot& s, const std::string& netdev, const PeerInterfaceInfo& theirs,
                      std::vector<std::string>& diffs, std::map<std::string, std::string>& details) {
    const Link* mine = find_link(s, netdev);
    const RdmaPort* port = roce_port_for_netdev(s, netdev);
    const DcbIeee* dcb = mine && mine->dcb && mine->dcb->error == 0 ? &mine->dcb->ieee : nullptr;
    const auto set_words = [](uint8_t bits) {
        const auto prios = priorities_in(bits);
        std::string w;
        for (int p : prios) w += (w.empty() ? "" : ",") + std::to_string(p);
        return prios.empty() ? std::string("none") : w;
    };
    const size_t before = diffs.size();
    std::optional<int> my_prio;
    if (dcb) my_prio = roce_priority(*dcb, port ? port->rdma_cm_default_tos.value_or(0) : 0).priority;
    if (my_prio && theirs.roce_priority && *my_prio != *theirs.roce_priority) {
        diffs.push_back("RoCE v2 at priority " + std::to_string(*my_prio) + " here, " +
                        std::to_string(*theirs.roce_priority) + " there");
        details["local_roce_priority"] = std::to_string(*my_prio);
        details["peer_roce_priority"] = std::to_string(*theirs.roce_priority);
    }
    if (dcb && dcb->pfc_enabled && theirs.pfc_enabled && *dcb->pfc_enabled != *theirs.pfc_enabled) {
        diffs.push_back("PFC on priorities " + set_words(*dcb->pfc_enabled) + " here, " +
                        set_words(*theirs.pfc_enabled) + " there");
        details["local_pfc_priorities"] = set_words(*dcb->pfc_enabled);
        details["peer_pfc_priorities"] = set_words(*theirs.pfc_enabled);
    }
    // ECN at the priority RoCE uses at this end (where both ends agree on it, or only we know).
    if (port && my_prio && (!theirs.roce_priority || *theirs.roce_priority == *my_prio)) {
        const int prio = *my_prio;
        const auto on = [prio](uint8_t bits) { return ((bits >> prio) & 1u) != 0; };
        for (const auto& [point, mine_bits, their_bits] :
             {std::tuple{"rp", port->ecn_rp_enabled, theirs.ecn_rp_enabled},
              std::tuple{"np", port->ecn_np_enabled, theirs.ecn_np_enabled}}) {
            if (!mine_bits || !their_bits || on(*mine_bits) == on(*their_bits)) continue;
            const std::string p = point;
            diffs.push_back("ECN at the " + std::string(p == "rp" ? "reaction" : "notification") +
                            " point for priority " + std::to_string(prio) + (on(*mine_bits) ? " on" : " off") +
                            " here, " + (on(*their_bits) ? "on" : "off") + " there");
            details["local_ecn_" + p] = on(*mine_bits) ? "on" : "off";
            details["peer_ecn_" + p] = on(*their_bits) ? "on" : "off";
        }
    }
    return diffs.size() > before;
}

void rule_peer_config_mismatch(const Context& ctx, Severity sev, Findings& out) {
    if (!ctx.s.probes) return;
    for (const auto& peer : ctx.c.peers) {
        auto it = ctx.s.probes->peers.find(peer.name);
        if (it == ctx.s.probes->peers.end() || !it->second.hello) continue;
        const PeerHello& h = *it->second.hello;
        for (const auto& rail : peer.rails) {
            auto ai = h.address_interface.find(rail.remote_address);
            const std::string netdev = rail_netdev(ctx.s, rail);
            if (ai == h.address_interface.end() || netdev.empty()) continue;
            const Link* mine = ctx.link(netdev);
            const auto& theirs = h.interfaces.at(ai->second);
            if (!mine) continue;
            std::vector<std::string> diffs;
            std::map<std::string, std::string> details;
            if (theirs.mtu && *theirs.mtu != mine->mtu) {
                diffs.push_back("MTU " + std::to_string(mine->mtu) + " here, " + std::to_string(*theirs.mtu) +
                                " there");
                details["local_mtu"] = std::to_string(mine->mtu);
                details["peer_mtu"] = std::to_string(*theirs.mtu);
            }
            std::set<std::string> my_types;
            for (const auto& d : ctx.s.devices)
                for (const auto& p : d.ports)
                    if (p.netdev == netdev)
                        for (const auto& g : p.gids)
                            if (!g.type.empty()) my_types.insert(g.type);
            std::set<std::string> their_types(theirs.gid_types.begin(), theirs.gid_types.end());
            if (!my_types.empty() && !their_types.empty() && my_types != their_types) {
                diffs.push_back("GID types {" + join({my_types.begin(), my_types.end()}) + "} here, {" +
                                join(theirs.gid_types) + "} there");
                details["local_gid_types"] = join({my_types.begin(), my_types.end()});
                details["peer_gid_types"] = join(theirs.gid_types);
            }
            const bool basic = !diffs.empty();
            const bool lossless = compare_lossless(ctx.s, netdev, theirs, diffs, details);
            if (diffs.empty()) continue;
            std::string action;
            if (basic)
                action = "Set the same MTU (9000) and RoCE mode on both ends of the rail; a smaller MTU on one end "
                         "caps the path, and RoCE v1 vs v2 cannot talk.";
            if (lossless)
                action += std::string(basic ? " " : "") +
                          "Give both ends of the rail the same lossless set-up: RoCE v2 at the same priority (DSCP "
                          "trust and the same DSCP-to-priority APP entries), PFC on that priority and no other "
                          "difference, ECN on at both points for it; compare `dcb pfc show dev " +
                          netdev + "` and `dcb app show dev " + netdev +
                          "` on both nodes, and the switch ports between them. A priority paused at one end only "
                          "drops there under congestion.";
            out.push_back(make("peer_config_mismatch", sev, peer.name + "/" + rail.name,
                               "Rail " + rail.name + " to " + peer.name + ": " + join(diffs, "; "), action,
                               std::move(details)));
        }
    }
}

// ---------------------------------------------------------------- cabling (cabling.hpp)

void cabling_rule(const Context& ctx, const char* rule, Severity sev, Findings& out) {
    for (auto& f : judge_cabling(ctx.s, ctx.c))
        if (f.rule == rule) {
            f.severity = sev;
            out.push_back(std::move(f));
        }
}
void rule_rails_crossed(const Context& ctx, Severity sev, Findings& out) {
    cabling_rule(ctx, "rails_crossed", sev, out);
}
void rule_arp_answered_by_wrong_nic(const Context& ctx, Severity sev, Findings& out) {
    cabling_rule(ctx, "arp_answered_by_wrong_nic", sev, out);
}
void rule_rail_subnet_mismatch(const Context& ctx, Severity sev, Findings& out) {
    cabling_rule(ctx, "rail_subnet_mismatch", sev, out);
}

// ---------------------------------------------------------------- the table

using RuleFn = void (*)(const Context&, Severity, Findings&);

struct RuleDef {
    const char* id;
    Severity severity;
    Scope scope;  // what its findings point at: this node, a peer, or the path to one
    const char* description;
    RuleFn fn;
};

constexpr RuleDef kRules[] = {
    {"no_rdma_device", Severity::critical, Scope::node,
     "no RDMA device in the sysfs root's class/infiniband (driver not loaded or a wrong --sysfs-root) while "
     "expect.rails "
     "is unset",
     rule_no_rdma_device},
    {"port_down", Severity::critical, Scope::node, "RDMA port not ACTIVE/LinkUp, or an expected rail missing",
     rule_port_down},
    {"ib_port_not_active_no_sm", Severity::critical, Scope::node,
     "InfiniBand port with its link up but INIT or ARMED: no subnet manager has configured or activated it",
     rule_ib_port_not_active_no_sm},
    {"netdev_down", Severity::critical, Scope::node,
     "netdev of an RDMA port (or expected interface) admin down, no carrier or not up", rule_netdev_down},
    {"port_rate_low", Severity::warning, Scope::node, "RDMA port rate below expect.port_rate_gbps", rule_port_rate_low},
    {"mtu_low", Severity::warning, Scope::node, "netdev MTU below expect.mtu", rule_mtu_low},
    {"roce_mtu_low", Severity::warning, Scope::node, "RDMA active_mtu below expect.roce_active_mtu (default: max_mtu)",
     rule_roce_mtu_low},
    {"no_roce_v2_gid", Severity::critical, Scope::node, "netdev IPv4 address without a RoCE v2 GID entry",
     rule_no_roce_v2_gid},
    {"pfc_off_roce_priority", Severity::warning, Scope::node,
     "the driver reports DCB and PFC is off on the priority RoCE v2 goes out at (DCB APP table at rdma_cm's "
     "default_roce_tos, else ToS 0)",
     rule_pfc_off_roce_priority},
    {"rdma_cm_roce_v1", Severity::warning, Scope::node,
     "rdma_cm's configfs default_roce_mode is RoCE v1 on a RoCE port (not routable, no DSCP)", rule_rdma_cm_roce_v1},
    {"ecn_off_pfc_on", Severity::warning, Scope::node,
     "PFC is on for RoCE v2's priority while ECN is off there at the reaction or notification point "
     "(class/net/<netdev>/ecn/roce_{rp,np}, where the driver has them): pause frames alone, pause storms ahead",
     rule_ecn_off_pfc_on},
    {"pause_storm", Severity::critical, Scope::node,
     "the NIC of a RoCE netdev counted pause storm events inside the counter window (mlx5 "
     "tx_pause_storm_warning_events / tx_pause_storm_error_events)",
     rule_pause_storm},
    {"pause_frames_high", Severity::warning, Scope::node,
     "a RoCE netdev sends or receives pause (PFC) frames at one priority faster than "
     "thresholds.pause_frames_per_second (driver counters such as rx_prio3_pause)",
     rule_pause_frames_high},
    {"fec_uncorrectable", Severity::critical, Scope::node,
     "a RoCE netdev's port counted FEC codewords it could not correct inside the counter window (ethtool netlink "
     "FEC statistics): frames lost on the wire, the link is failing",
     rule_fec_uncorrectable},
    {"fec_corrected_high", Severity::warning, Scope::node,
     "a RoCE netdev's FEC corrects so many errors inside the counter window that the bit error rate before FEC "
     "reaches thresholds.pre_fec_ber (corrected bits where counted, else corrected codewords over the negotiated "
     "speed): degrading, not yet losing frames",
     rule_fec_corrected_high},
    {"fcs_errors", Severity::warning, Scope::node,
     "a RoCE netdev received frames with a bad FCS inside the counter window (ethtool netlink's eth-mac "
     "FrameCheckSequenceErrors)",
     rule_fcs_errors},
    {"link_speed_below_module", Severity::warning, Scope::node,
     "a RoCE netdev negotiated a lower speed than its transceiver module is made for (SFF-8636/SFF-8472: their rate "
     "per lane times their lanes; CMIS: their fastest advertised application)",
     rule_link_speed_below_module},
    {"module_rx_power_low", Severity::critical, Scope::node,
     "a lane of a RoCE netdev's transceiver module receives less light than the module's own low warning level "
     "(warning) or low alarm level (critical), read from its EEPROM (ethtool -m)",
     rule_module_rx_power_low},
    {"module_temperature_high", Severity::critical, Scope::node,
     "a RoCE netdev's transceiver module is at or over its own high temperature warning level (warning) or alarm "
     "level (critical)",
     rule_module_temperature_high},
    {"discards_with_pfc", Severity::warning, Scope::node,
     "a RoCE netdev with PFC on for RoCE's priority dropped received packets inside the counter window "
     "(rx_prio<p>_discards at that priority, else rx_discards_phy)",
     rule_discards_with_pfc},
    {"gid_on_bond", Severity::critical, Scope::node,
     "RDMA device's netdev enslaved to a bond / GIDs pointing at a bond", rule_gid_on_bond},
    {"bond_slave_down", Severity::critical, Scope::node, "bond slave MII down (warning while another slave is up)",
     rule_bond_slave_down},
    {"bond_degraded", Severity::warning, Scope::node, "bond with fewer slaves up than enslaved", rule_bond_degraded},
    {"bond_link_failures", Severity::warning, Scope::node, "bond slave link failures inside the counter window",
     rule_bond_link_failures},
    {"bond_mode_reorders", Severity::warning, Scope::node, "bond in balance-rr mode (TCP reordering)",
     rule_bond_mode_reorders},
    {"subnet_overlap", Severity::warning, Scope::node,
     "another interface holds an address in an RDMA netdev's IPv4 subnet", rule_subnet_overlap},
    {"error_counters", Severity::critical, Scope::node,
     "fatal RDMA error counters rising, symbol errors or ACK timeouts above threshold, receive errors or discards "
     "rising (warning)",
     rule_error_counters},
    {"congestion", Severity::warning, Scope::node, "CNP or ECN-marked packet rates above threshold", rule_congestion},
    {"link_flapping", Severity::warning, Scope::node, "carrier changes inside the flap window at or above threshold",
     rule_link_flapping},
    {"peermem_missing", Severity::warning, Scope::node, "NVIDIA GPU present without nvidia_peermem (no GPUDirect RDMA)",
     rule_peermem_missing},
    {"collector_errors", Severity::warning, Scope::node,
     "the sysfs or netlink collector failed this round, or sysfs files could not be read or parsed (the verdicts "
     "that need them are incomplete)",
     rule_collector_errors},
    {"peer_unreachable", Severity::critical, Scope::peer,
     "every latest probe to a peer failed: unreachable, refused, timed out or no RDMA ACK", rule_peer_unreachable},
    {"rail_unreachable", Severity::critical, Scope::path,
     "every probe to a peer over one rail fails (RDMA and TCP) while other paths to it pass", rule_rail_unreachable},
    {"probe_bandwidth_low", Severity::warning, Scope::path,
     "probe bandwidth below probes.bw_fraction_of_link of the link rate", rule_probe_bandwidth_low},
    {"probe_latency_high", Severity::warning, Scope::path,
     "probe p99 latency above its kind's latency_threshold (else probes.latency_threshold)", rule_probe_latency_high},
    {"rdma_fails_tcp_works", Severity::critical, Scope::path,
     "RDMA probe to a peer fails while TCP over the same rail works", rule_rdma_fails_tcp_works},
    {"tcp_fails_rdma_works", Severity::critical, Scope::path,
     "TCP probe to a peer fails while RDMA over the same rail works", rule_tcp_fails_rdma_works},
    {"probe_failed", Severity::warning, Scope::path,
     "a probe kind fails in a way no other probe verdict covers (its family passes, the other family was not "
     "probed, or another reason)",
     rule_probe_failed},
    {"rail_imbalance", Severity::warning, Scope::path, "one rail carried more than 90% of a multi-rail run",
     rule_rail_imbalance},
    {"ucx_version_mismatch", Severity::warning, Scope::peer, "the peer's UCX version differs from ours",
     rule_ucx_version_mismatch},
    {"peer_config_mismatch", Severity::warning, Scope::peer, "the peer's MTU or GID types on a rail differ from ours",
     rule_peer_config_mismatch},
    {"rails_crossed", Severity::critical, Scope::path,
     "a rail's neighbour for the peer's rail address is the peer's NIC of another rail (another subnet)",
     rule_rails_crossed},
    {"arp_answered_by_wrong_nic", Severity::warning, Scope::peer,
     "the peer's NIC of another rail in the same subnet answered ARP for the rail's address (arp_ignore=0)",
     rule_arp_answered_by_wrong_nic},
    {"rail_subnet_mismatch", Severity::warning, Scope::path,
     "the peer's rail address is on none of our rail netdev's subnets", rule_rail_subnet_mismatch},
};

}  // namespace

const std::vector<RuleInfo>& rule_catalog() {
    static const std::vector<RuleInfo> catalog = [] {
        std::vector<RuleInfo> v;
        for (const auto& r : kRules) v.push_back({r.id, r.severity, r.scope, r.description});
        return v;
    }();
    return catalog;
}

const std::vector<std::string>& all_rule_ids() {
    static const std::vector<std::string> ids = [] {
        std::vector<std::string> v;
        for (const auto& r : kRules) v.push_back(r.id);
        return v;
    }();
    return ids;
}

Scope rule_scope(const std::string& id) {
    for (const auto& r : kRules)
        if (id == r.id) return r.scope;
    return Scope::node;
}

namespace {

// The local netdev a finding is about: its "netdev" detail; the link it names; the netdev of the
// RDMA port it names ("dev/port", "dev/port:counter"); or, for a path ("peer/rail",
// "peer/rail:kind"), the rail's local netdev.
std::string finding_netdev(const Context& ctx, const Finding& f) {
    if (auto it = f.details.find("netdev"); it != f.details.end()) return it->second;
    if (ctx.link(f.object)) return f.object;
    const std::string object = f.object.substr(0, f.object.find(':'));
    for (const auto& jp : ctx.ports)
        if (jp.object == object) return jp.netdev;
    const auto slash = f.object.find('/');
    if (slash == std::string::npos) return "";
    const std::string peer = f.object.substr(0, slash);
    const std::string rail = f.object.substr(slash + 1, f.object.find(':', slash) - slash - 1);
    for (const auto& p : ctx.c.peers)
        if (p.name == peer)
            for (const auto& r : p.rails)
                if (r.name == rail) return rail_netdev(ctx.s, r);
    // Inventory peers' rails are named after the netdevs they match.
    return ctx.link(rail) ? rail : "";
}

// Where lldpd hears a switch on the finding's netdev, the finding names it and its port: the
// first thing to check on a rail is often the other end of its cable.
void name_switch_port(const Context& ctx, Finding& f) {
    const std::string netdev = finding_netdev(ctx, f);
    const Link* l = netdev.empty() ? nullptr : ctx.link(netdev);
    if (!l || !l->lldp) return;
    const std::string sw = lldp_switch_name(*l->lldp), port = lldp_port_name(*l->lldp);
    if (sw.empty() && port.empty()) return;
    f.details["switch"] = sw;
    f.details["switch_port"] = port;
    f.summary += " (" + netdev + " is cabled to " + (sw.empty() ? "a switch" : sw) +
                 (port.empty() ? "" : " port " + port) + ", as LLDP says)";
}

}  // namespace

std::vector<Finding> evaluate_rules(const Snapshot& s, const Config& c) {
    Context ctx = make_context(s, c);
    ctx.roce_links = roce_links(ctx);
    std::vector<Finding> out;
    for (const auto& r : kRules) {
        const RuleSettings settings = rule_settings(c, r.id);
        if (!settings.enabled) continue;
        const size_t first = out.size();
        r.fn(ctx, r.severity, out);
        for (size_t i = first; i < out.size(); ++i) out[i].scope = r.scope;
        if (settings.severity)
            for (size_t i = first; i < out.size(); ++i) out[i].severity = *settings.severity;
    }
    for (auto& f : out) name_switch_port(ctx, f);
    return out;
}

}  // namespace rocewatch
