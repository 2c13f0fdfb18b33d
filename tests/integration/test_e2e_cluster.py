#!/usr/bin/env python3
"""Daemons that share one inventory file and no [[peers]]: each finds itself, matches its two rails
with its ring successors' from their hellos, and probes them; beyond the ring, one rotating peer a
round, summarised per rail; an edit of the inventory (a node added, one removed, a broken file) is
picked up without a restart, and a dead entry is a failed probe while the daemon stays healthy."""

import json
import os
import secrets
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

NODES = 5          # 4 in the first inventory, the 5th added later
RING = 2           # [cluster] ring_successors
ROTATING = 1       # [cluster] rotating_peers
ROUND = 10         # [cluster] rotate_every, seconds (the shortest allowed)
DEAD = "10.82.0.99"  # an inventory entry nothing answers at


def write_inventory(path, targets, labels=None):
    """Written to a temporary file and renamed over, as editors and config management do."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump([{"targets": targets, "labels": labels or {"rack": "r01"}}], f)
    os.rename(tmp, path)


def config(path, token, inventory):
    with open(path, "w") as f:
        f.write('[daemon]\ninterval = "1s"\n'
                f'[probes]\ntoken_file = "{token}"\nenabled = ["tcp_lat"]\nlatency_threshold = "1s"\n'
                '[probes.tcp_lat]\ninterval = "1s"\njitter = "0s"\ncount = 20\ntimeout = "2s"\n'
                f'[cluster]\ninventory = "{inventory}"\nrails = ["r0", "r1"]\nring_successors = {RING}\n'
                f'rotating_peers = {ROTATING}\nrotate_every = "{ROUND}s"\n')


def main():
    rwtest.require_root()
    rwtest.require(shutil.which("curl"), "needs curl")
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-cluster-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.chmod(token, 0o600)
    inventory = os.path.join(work, "inventory.json")
    port = rwtest.free_port()
    target = {i: f"10.82.0.{i}:{port}" for i in range(1, NODES + 1)}
    dead = f"{DEAD}:{port}"
    write_inventory(inventory, [target[i] for i in range(1, NODES)] + [dead])

    # One namespace per node and one for the switches: a bridge per rail and one for control.
    with rwtest.Netns("csw") as sw:
        for br in ("mg", "b0", "b1"):
            sw.ip("link", "add", br, "type", "bridge")
            sw.ip("link", "set", br, "up")
        nets = [rwtest.Netns(f"c{i}") for i in range(1, NODES + 1)]
        for n in nets:
            n.__enter__()
        daemons = {}
        try:
            for i, n in enumerate(nets, start=1):
                for dev, br, addr in (("mg", "mg", f"10.82.0.{i}/24"), ("r0", "b0", f"10.81.0.{i}/24"),
                                      ("r1", "b1", f"10.81.1.{i}/24")):
                    far = f"{dev}n{i}"
                    n.ip("link", "add", dev, "type", "veth", "peer", "name", far, "netns", sw.name)
                    sw.ip("link", "set", far, "master", br, "up")
                    n.ip("addr", "add", addr, "dev", dev)
                    n.ip("link", "set", dev, "up")
                cfg = os.path.join(work, f"n{i}.toml")
                config(cfg, token, inventory)
                daemons[i] = rwtest.Daemon(netns=n, config=cfg, port=port, extra=("--listen", f"0.0.0.0:{port}"))
            time.sleep(0.5)
            for i in range(1, NODES + 1):
                daemons[i].__enter__()
            run(t, daemons, target, dead, inventory)
        finally:
            for d in daemons.values():
                if d.proc:
                    failed = d.proc.poll() is not None
                    d.__exit__(None, None, None) if not failed else d.dump_log()
            for n in nets:
                n.__exit__(None, None, None)
    shutil.rmtree(work, ignore_errors=True)
    t.finish()


def peers(d):
    """The ring's peers (this round's rotating peer is listed too, with source "rotating")."""
    return {p["name"]: p for p in d.json("/api/v1/peers")["peers"] if p["source"] != "rotating"}


def rotating_of(ring, me, rnd):
    """inventory.cpp's rotating_peers: distances beyond the ring, moving on by ROTATING a round."""
    others = len(ring) - 1 - RING
    first = (rnd % others) * ROTATING % others
    i = ring.index(me)
    return [ring[(i + RING + 1 + (first + j) % others) % len(ring)] for j in range(ROTATING)]


def check_rotation(t, daemons, target, dead, ring):
    """Rotating peers: the inventory's formula for the round the daemon is in, latency over both
    matched rails summarised per rail (not per peer), the dead entry among the failing peers of
    whoever rotates onto it, and another peer the next round."""
    def mesh(i):
        return daemons[i].json("/api/v1/probes")["mesh"]
    m = mesh(1)
    t.check(m["round"] is not None and [p["name"] for p in m["rotating_peers"]] ==
            rotating_of(ring, target[1], m["round"]),
            f"node 1's rotating peer in round {m['round']} is the one the ring formula names "
            f"({[p['name'] for p in m['rotating_peers']]})")
    listed = [p for p in daemons[1].json("/api/v1/peers")["peers"] if p["source"] == "rotating"]
    t.check([p["name"] for p in listed] == [p["name"] for p in m["rotating_peers"]],
            "/api/v1/peers lists it with source rotating")

    def summarised(i):
        by_rail = {s["rail"]: s for s in mesh(i)["summaries"] if s["kind"] == "tcp_lat"}
        ok = all(by_rail.get(r, {}).get("successes", 0) > 0 for r in ("r0", "r1"))
        return by_rail if ok else None
    t.within(lambda: summarised(1), 3 * ROUND, "node 1's rotating probes succeed over r0 and r1")
    by_rail = summarised(1)
    if by_rail:
        s0 = by_rail["r0"]
        t.check(s0["latency_buckets"][-1]["count"] == s0["successes"] and 0 < s0["latency_sum_seconds"] < 1,
                f"the r0 histogram counts each success once ({s0['successes']}, sum {s0['latency_sum_seconds']:.6f} s)")
    t.check(all(p["peer"] in successors(ring, target[1])
                for p in daemons[1].json("/api/v1/probes")["probes"]),
            "rotating peers get no per-peer results (node 1's are its ring's)")
    _, body = daemons[1].get("/metrics")
    t.check('rocewatch_mesh_latency_seconds_bucket{rail="r0",kind="tcp_lat",le="+Inf"}' in body and
            'rocewatch_mesh_probes_total{rail="r1",kind="tcp_lat",result="success"}' in body,
            "/metrics has the per-rail mesh summary")

    # Whoever rotates onto the dead entry names it among its failing peers, with the reason.
    def dead_failing():
        for i in range(1, NODES):
            for s in mesh(i)["summaries"]:
                for f in s["failing_peers"]:
                    if f["peer"] == dead:
                        return (i, f["reason"])
        return None
    t.within(dead_failing, 3 * ROUND, f"a rotating prober names the dead entry {dead} as failing")
    got = dead_failing()
    if got:
        t.check(got[1] in ("timeout", "peer_unreachable", "connection_refused"),
                f"node {got[0]} says why ({got[1]})")

    # The next round: another peer (with two distances beyond the ring, they alternate).
    first = mesh(1)
    def moved():
        m = mesh(1)
        return m if m["round"] is not None and m["round"] != first["round"] else None
    t.within(moved, 2 * ROUND, "node 1 moves to the next round")
    m = moved()
    if m:
        t.check([p["name"] for p in m["rotating_peers"]] == rotating_of(ring, target[1], m["round"]) and
                m["rotating_peers"] != first["rotating_peers"],
                f"and rotates to another peer ({[p['name'] for p in m['rotating_peers']]})")


def ok_probe(d, peer, rail):
    for p in d.json("/api/v1/probes")["probes"]:
        if p["peer"] == peer and p["rail"] == rail and p["kind"] == "tcp_lat" and p["latest"]["success"]:
            return p["latest"]
    return None


def successors(ring, me, k=RING):
    i = ring.index(me)
    return [ring[(i + s) % len(ring)] for s in range(1, k + 1)]


def run(t, daemons, target, dead, inventory):
    ring = sorted([target[i] for i in range(1, NODES)] + [dead])
    for i in range(1, NODES):
        # Found by its addresses once the first snapshot shows them (looked for every second).
        def found(i=i):
            st = daemons[i].json("/api/v1/status")["cluster"]
            return st if st and st["self"] and st["self"]["target"] == target[i] and st["entries"] == NODES else None
        t.within(found, 10, f"node {i} finds itself in the inventory")
        st = found()
        if st:
            t.check(st["self_reason"].startswith("address 10.82.0."), f"node {i} says why ({st['self_reason']})")
    st5 = daemons[NODES].json("/api/v1/status")["cluster"]
    t.check(st5["self"] is None and "no entry" in st5["self_reason"],
            f"node {NODES}, not in the inventory yet, says so ({st5['self_reason']})")

    # Rails matched automatically and probes flowing over each of them, per ring.
    for i in range(1, NODES):
        for succ in successors(ring, target[i]):
            if succ == dead:
                continue
            def matched(i=i, succ=succ):
                p = peers(daemons[i]).get(succ)
                return p if p and p["hello_ok"] and len(p["rails"]) == 2 else None
            if t.within(matched, 15, f"node {i} matched both rails with {succ}") is None:
                continue
            p = matched()
            j = int(succ.split(":")[0].rsplit(".", 1)[1])
            r0 = [r for r in p["rails"] if r["name"] == "r0"][0]
            t.check(r0["remote_address"] == f"10.81.0.{j}" and r0["reason"] == "same subnet 10.81.0.0/24",
                    f"node {i} -> {succ}: r0 to 10.81.0.{j} because {r0['reason']}")
            t.check(p["source"] == "inventory" and p["labels"] == {"rack": "r01"},
                    f"node {i} -> {succ}: from the inventory, with its labels")
            for rail in ("r0", "r1"):
                t.within(lambda i=i, succ=succ, rail=rail: ok_probe(daemons[i], succ, rail), 15,
                         f"node {i} probes {succ} over {rail}")
        names = set(peers(daemons[i]))
        t.check(names == set(successors(ring, target[i])),
                f"node {i} probes exactly its {RING} ring successors ({sorted(names)})")

    check_rotation(t, daemons, target, dead, ring)

    # The dead entry: a failed probe from its predecessor, which stays healthy.
    prober = [i for i in range(1, NODES) if dead in successors(ring, target[i])][0]
    def dead_failed():
        for p in daemons[prober].json("/api/v1/probes")["probes"]:
            if p["peer"] == dead and not p["latest"]["success"]:
                return p["latest"]
        return None
    t.within(dead_failed, 20, f"node {prober} reports the dead entry {dead} as a failed probe")
    r = dead_failed()
    if r:
        t.check(r["reason"] in ("timeout", "peer_unreachable", "connection_refused"),
                f"the failure says why ({r['reason']})")
    t.check(daemons[prober].get("/healthz")[0] == 200 and daemons[prober].proc.poll() is None,
            f"node {prober} stays up and healthy")

    # Add node 5, drop the dead entry: picked up without a restart.
    ring = sorted(target.values())
    write_inventory(inventory, list(target.values()))
    t.within(lambda: (daemons[NODES].json("/api/v1/status")["cluster"]["self"] or {}).get("target") == target[NODES],
             10, f"node {NODES} finds itself once the inventory lists it")
    for i in range(1, NODES + 1):
        want = set(successors(ring, target[i]))
        t.within(lambda i=i, want=want: set(peers(daemons[i])) == want, 10,
                 f"node {i} follows the edited inventory ({sorted(want)})")
    t.within(lambda: ok_probe(daemons[NODES], successors(ring, target[NODES])[0], "r1"), 15,
             f"node {NODES} probes its successor over r1")
    t.within(lambda: dead not in {p["peer"] for p in daemons[prober].json("/api/v1/probes")["probes"]}, 10,
             f"node {prober} forgets the removed entry's results")

    # A broken inventory is refused, the previous one kept, and it says why.
    with open(inventory + ".tmp", "w") as f:
        f.write('[{"targets": ["no-port:"]}]')
    os.rename(inventory + ".tmp", inventory)
    def refused():
        st = daemons[1].json("/api/v1/status")["cluster"]
        return st if not st["last_load_ok"] else None
    t.within(refused, 10, "a broken inventory is refused")
    st = refused()
    if st:
        t.check(st["entries"] == NODES and "empty port" in (st["last_error"] or ""),
                f"the previous {NODES} entries are kept, and the error says why ({st['last_error']})")
    code, body = daemons[1].get("/metrics")
    t.check("rocewatch_inventory_last_load_successful 0" in body and f"rocewatch_inventory_entries {NODES}" in body,
            "the metrics say the load failed and the entries in force")
    t.check(set(peers(daemons[1])) == set(successors(ring, target[1])), "node 1 still probes the same peers")
    # SIGHUP rereads it too: fixed by hand, then the signal.
    with open(inventory, "w") as f:
        json.dump([{"targets": list(target.values())}], f)
    daemons[1].signal(__import__("signal").SIGHUP)
    t.within(lambda: daemons[1].json("/api/v1/status")["cluster"]["last_load_ok"], 10,
             "a fixed inventory loads again")
    t.check(all(d.proc.poll() is None for d in daemons.values()), "every daemon is still running")


if __name__ == "__main__":
    main()
