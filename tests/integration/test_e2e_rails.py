#!/usr/bin/env python3
"""Two rocewatchd joined by two veth rails, three ways:

- straight, both rails in one subnet: each rail's TCP probe takes its own rail's link
  (SO_BINDTODEVICE on local_interface), so a rail whose link is down fails its probe and is
  named (rail_unreachable) even though the routing table could send the probe over the other
  rail; the other rail stays quiet;
- crossed (rail 0's cable on the peer's rail-1 NIC and the other way round): rails_crossed
  names both rails;
- through a bridge, both rails in one subnet, the peer's rail-1 NIC silent on ARP and
  arp_ignore=0: the peer's rail-0 NIC answers for rail 1's address, arp_answered_by_wrong_nic
  says so and what to set; with arp_ignore=1 it clears."""

import os
import secrets
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402


def config(path, token_file, data_port, peers=""):
    with open(path, "w") as f:
        f.write(f'[daemon]\ninterval = "1s"\n[probes]\ntoken_file = "{token_file}"\ndata_port = {data_port}\n'
                'enabled = ["tcp_lat"]\nlatency_threshold = "1s"\n'
                '[probes.tcp_lat]\ninterval = "1s"\njitter = "0s"\ncount = 20\ntimeout = "2s"\n'
                '[rules.rail_unreachable]\nclear_after = "1s"\n'
                '[rules.arp_answered_by_wrong_nic]\nclear_after = "1s"\n'
                # The namespaces have veth rails and no RDMA device: TCP-only nodes on purpose.
                '[rules.no_rdma_device]\nenabled = false\n' + peers)


def latest(d, peer_name, rail, kind="tcp_lat"):
    for p in d.json("/api/v1/probes")["probes"]:
        if p["peer"] == peer_name and p.get("rail") == rail and p["kind"] == kind:
            return p["latest"]
    return None


def sysctl(ns, key, value):
    ns.run("sh", "-c", f"echo {value} > /proc/sys/{key.replace('.', '/')}")


def rails_config(port_b, ifaces, local, remote):
    out = f'[[peers]]\nname = "node-b"\naddress = "{remote[0]}:{port_b}"\n'
    for i in (0, 1):
        out += (f'[[peers.rails]]\nname = "rail{i}"\nlocal_interface = "{ifaces[i]}"\n'
                f'local_address = "{local[i]}"\nremote_address = "{remote[i]}"\n')
    return out


def start_pair(na, nb, work, token, tag, peers):
    port_a, port_b, data_port = rwtest.free_port(), rwtest.free_port(), rwtest.free_port()
    cfg_a, cfg_b = os.path.join(work, f"{tag}-a.toml"), os.path.join(work, f"{tag}-b.toml")
    config(cfg_a, token, data_port, peers(port_b))
    config(cfg_b, token, data_port)
    b = rwtest.Daemon(netns=nb, config=cfg_b, port=port_b, extra=("--listen", f"0.0.0.0:{port_b}"))
    a = rwtest.Daemon(netns=na, config=cfg_a, port=port_a, extra=("--listen", f"0.0.0.0:{port_a}"))
    return a, b


def case_crossed(t, work, token):
    with rwtest.Netns("xa") as na, rwtest.Netns("xb") as nb:
        for ns in (na, nb):
            sysctl(ns, "net.ipv4.conf.all.rp_filter", 0)
            sysctl(ns, "net.ipv4.conf.default.rp_filter", 0)
        # Rail 0 is 10.89.0.0/24, rail 1 10.89.1.0/24; the cables are crossed.
        na.ip("link", "add", "x0a", "type", "veth", "peer", "name", "x1b", "netns", nb.name)
        na.ip("link", "add", "x1a", "type", "veth", "peer", "name", "x0b", "netns", nb.name)
        for ns, dev, addr in ((na, "x0a", "10.89.0.1/24"), (na, "x1a", "10.89.1.1/24"),
                              (nb, "x0b", "10.89.0.2/24"), (nb, "x1b", "10.89.1.2/24")):
            ns.ip("addr", "add", addr, "dev", dev)
            ns.ip("link", "set", dev, "up")
        a, b = start_pair(na, nb, work, token, "crossed", lambda pb: rails_config(
            pb, ("x0a", "x1a"), ("10.89.0.1", "10.89.1.1"), ("10.89.0.2", "10.89.1.2")))
        with b, a:
            for i in (0, 1):
                t.within(lambda i=i: a.alerts().get(("rails_crossed", f"node-b/rail{i}")), 20,
                         f"crossed cables: rails_crossed names node-b/rail{i}")
            al = a.alerts()
            f = al.get(("rails_crossed", "node-b/rail0")) or {}
            print(f"     {f.get('summary')}")
            t.check("x1b" in f.get("summary", "") and "x0b" in f.get("summary", ""),
                    "the summary names the NIC that answered and the one that should have")
            t.check(not any(r == "arp_answered_by_wrong_nic" for (r, _) in al),
                    "not mistaken for an ARP setting (the rails are on different subnets)")


def case_arp_wrong_nic(t, work, token):
    with rwtest.Netns("wa") as na, rwtest.Netns("wb") as nb, rwtest.Netns("ws") as ns:
        for n in (na, nb):
            sysctl(n, "net.ipv4.conf.all.rp_filter", 0)
            sysctl(n, "net.ipv4.conf.default.rp_filter", 0)
            sysctl(n, "net.ipv4.conf.all.arp_ignore", 0)
        # One switch (a bridge in its own namespace), both nodes' two rails in one subnet.
        ns.ip("link", "add", "sw", "type", "bridge")
        ns.ip("link", "set", "sw", "up")
        for n, dev, addr in ((na, "y0a", "10.90.0.1/24"), (na, "y1a", "10.90.0.11/24"),
                             (nb, "y0b", "10.90.0.2/24"), (nb, "y1b", "10.90.0.12/24")):
            ns.ip("link", "add", f"s-{dev}", "type", "veth", "peer", "name", dev, "netns", n.name)
            ns.ip("link", "set", f"s-{dev}", "master", "sw", "up")
            n.ip("addr", "add", addr, "dev", dev)
            n.ip("link", "set", dev, "up")
        # The peer's rail-1 NIC loses the ARP race every time: it does not answer at all.
        nb.ip("link", "set", "y1b", "arp", "off")
        a, b = start_pair(na, nb, work, token, "arp", lambda pb: rails_config(
            pb, ("y0a", "y1a"), ("10.90.0.1", "10.90.0.11"), ("10.90.0.2", "10.90.0.12")))
        with b, a:
            key = ("arp_answered_by_wrong_nic", "node-b/rail1")
            t.within(lambda: a.alerts().get(key), 20, "arp_ignore=0: arp_answered_by_wrong_nic names node-b/rail1")
            f = a.alerts().get(key) or {}
            print(f"     {f.get('summary')}\n     {f.get('action')}")
            t.check("arp_ignore=0" in f.get("summary", ""), "the summary reports the peer's arp_ignore")
            t.check("arp_ignore=1" in f.get("action", "") and "arp_announce=2" in f.get("action", ""),
                    "the action says what to set")
            t.check(("rails_crossed", "node-b/rail1") not in a.alerts(), "not called crossed (one subnet)")
            t.check(("arp_answered_by_wrong_nic", "node-b/rail0") not in a.alerts(), "rail 0 is answered right")
            # The fix: only the NIC that holds an address answers for it.
            sysctl(nb, "net.ipv4.conf.all.arp_ignore", 1)
            sysctl(nb, "net.ipv4.conf.all.arp_announce", 2)
            na.ip("neigh", "flush", "dev", "y1a")
            t.within(lambda: key not in a.alerts(), 20, "with arp_ignore=1 on the peer the alert clears")


def main():
    rwtest.require_root()
    rwtest.require(shutil.which("curl"), "needs curl")
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-rails-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.chmod(token, 0o600)
    port_a, port_b = rwtest.free_port(), rwtest.free_port()
    data_port = rwtest.free_port()

    with rwtest.Netns("ra") as na, rwtest.Netns("rb") as nb:
        # Two rails in one subnet, as on hosts whose rails share a /24. Each node routes what it
        # sends from a rail's address out of that rail (one table per rail), as such hosts must:
        # else the peer's replies to rail 1 leave over rail 0, and a probe bound to rail 1 never
        # sees them.
        for ns in (na, nb):
            sysctl(ns, "net.ipv4.conf.all.rp_filter", 0)
            sysctl(ns, "net.ipv4.conf.default.rp_filter", 0)
        for i in (0, 1):
            na.ip("link", "add", f"r{i}a", "type", "veth", "peer", "name", f"r{i}b", "netns", nb.name)
            na.ip("addr", "add", f"10.88.0.{1 + 10 * i}/24", "dev", f"r{i}a")
            nb.ip("addr", "add", f"10.88.0.{2 + 10 * i}/24", "dev", f"r{i}b")
            na.ip("link", "set", f"r{i}a", "up")
            nb.ip("link", "set", f"r{i}b", "up")
            for ns, dev, addr in ((na, f"r{i}a", f"10.88.0.{1 + 10 * i}"), (nb, f"r{i}b", f"10.88.0.{2 + 10 * i}")):
                ns.ip("route", "add", "10.88.0.0/24", "dev", dev, "src", addr, "table", str(100 + i))
                ns.ip("rule", "add", "from", addr, "table", str(100 + i))
        peers = (f'[[peers]]\nname = "node-b"\naddress = "10.88.0.2:{port_b}"\n'
                 '[[peers.rails]]\nname = "rail0"\nlocal_interface = "r0a"\nlocal_address = "10.88.0.1"\n'
                 'remote_address = "10.88.0.2"\n'
                 '[[peers.rails]]\nname = "rail1"\nlocal_interface = "r1a"\nlocal_address = "10.88.0.11"\n'
                 'remote_address = "10.88.0.12"\n')
        cfg_a, cfg_b = os.path.join(work, "a.toml"), os.path.join(work, "b.toml")
        config(cfg_a, token, data_port, peers)
        config(cfg_b, token, data_port)
        b = rwtest.Daemon(netns=nb, config=cfg_b, port=port_b, extra=("--listen", f"0.0.0.0:{port_b}"))
        a = rwtest.Daemon(netns=na, config=cfg_a, port=port_a, extra=("--listen", f"0.0.0.0:{port_a}"))
        with b, a:
            def passes(rail):
                r = latest(a, "node-b", rail)
                return r if r and r["success"] else None

            def fails(rail):
                r = latest(a, "node-b", rail)
                return r if r and not r["success"] else None

            t.within(lambda: passes("rail0") and passes("rail1"), 15, "tcp_lat passes over both rails")

            na.ip("link", "set", "r1a", "down")
            route = na.ip("route", "get", "10.88.0.12", "from", "10.88.0.11").stdout
            t.check(" dev r0a " in route,
                    f"with r1a down the routing table would send rail 1's probe over r0a ({route.strip()})")
            t.within(lambda: fails("rail1"), 10, "rail1's probe fails with its link down (bound to r1a)")
            r = fails("rail1") or {}
            print(f"     rail1: {r.get('reason')}: {r.get('detail')}")
            t.check(passes("rail0") is not None, "rail0's probe still passes")

            def named():
                al = a.alerts()
                return al.get(("rail_unreachable", "node-b/rail1"))
            t.within(named, 10, "rail_unreachable names node-b/rail1")
            al = a.alerts()
            t.check(not any(o.startswith("node-b/rail0") for (_, o) in al),
                    f"no alert names rail0 ({sorted(al)})")
            t.check(("peer_unreachable", "node-b") not in al, "the peer is not called unreachable")
            # A rail to one peer is the path's fault, not this node's: reported, but the node
            # stays healthy (only node-scoped alerts judge it; a health check must not drain it).
            t.check(a.json("/api/v1/status").get("health") == "healthy",
                    "the node's health stays healthy: rail_unreachable is path-scoped")
            scopes = [x.get("scope") for x in a.json("/api/v1/alerts").get("alerts", [])
                      if x.get("rule") == "rail_unreachable"]
            t.check(scopes == ["path"], f"rail_unreachable's scope is path ({scopes})")

            na.ip("link", "set", "r1a", "up")
            t.within(lambda: passes("rail1"), 15, "rail1 passes again with its link up")
            t.within(lambda: ("rail_unreachable", "node-b/rail1") not in a.alerts(), 10, "rail_unreachable clears")
    case_crossed(t, work, token)
    case_arp_wrong_nic(t, work, token)
    shutil.rmtree(work, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
