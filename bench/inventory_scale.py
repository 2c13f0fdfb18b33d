#!/usr/bin/env python3
"""One rocewatchd with a large inventory of mostly dead entries (default 2,000), for a few minutes:
its RSS and CPU over time, the peers it probes, probe runs per minute, and the bytes it sent on its
control interface, against what the ring allows (ring_successors x rails x probe intervals).

Usage (root): bench/inventory_scale.py [--entries 2000] [--minutes 3] [--ring 3]"""
import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import rwtest  # noqa: E402


def proc_stats(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return rss, ticks / os.sysconf("SC_CLK_TCK")


def tx_bytes(ns, dev):
    return int(ns.run("cat", f"/sys/class/net/{dev}/statistics/tx_bytes").stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--minutes", type=float, default=3)
    ap.add_argument("--ring", type=int, default=3)
    a = ap.parse_args()
    rwtest.require_root()
    work = tempfile.mkdtemp(prefix="rw-invbench-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32))
    os.chmod(token, 0o600)
    port = rwtest.free_port()
    # Entries 10.83.i.j; ours is the first. The rest are in our subnet and answer nothing.
    targets = [f"10.83.{i // 250}.{i % 250 + 1}:{port}" for i in range(a.entries)]
    inventory = os.path.join(work, "inventory.json")
    with open(inventory, "w") as f:
        json.dump([{"targets": targets[g:g + 40], "labels": {"rack": f"r{g // 40:03d}"}}
                   for g in range(0, len(targets), 40)], f)
    cfg = os.path.join(work, "n.toml")
    with open(cfg, "w") as f:
        f.write(f'[probes]\ntoken_file = "{token}"\n'
                f'[cluster]\ninventory = "{inventory}"\nring_successors = {a.ring}\nrails = ["mg"]\n')
    with rwtest.Netns("inv") as ns, rwtest.Netns("invsw") as sw:
        ns.ip("link", "add", "mg", "type", "veth", "peer", "name", "mgsw", "netns", sw.name)
        ns.ip("addr", "add", "10.83.0.1/16", "dev", "mg")
        ns.ip("link", "set", "mg", "up")
        sw.ip("link", "set", "mgsw", "up")
        time.sleep(0.5)
        with rwtest.Daemon(netns=ns, config=cfg, port=port, extra=("--listen", f"0.0.0.0:{port}")) as d:
            pid = d.proc.pid  # ip netns exec execs the daemon in place
            rwtest.wait_for(lambda: (d.json("/api/v1/status")["cluster"] or {}).get("self"), 10, "self found")
            tx0, (rss0, cpu0), t0 = tx_bytes(ns, "mg"), proc_stats(pid), time.monotonic()
            samples = []
            while time.monotonic() - t0 < a.minutes * 60:
                time.sleep(10)
                rss, cpu = proc_stats(pid)
                samples.append((time.monotonic() - t0, rss, cpu - cpu0))
            elapsed = time.monotonic() - t0
            tx = tx_bytes(ns, "mg") - tx0
            st = d.json("/api/v1/status")["cluster"]
            peers = d.json("/api/v1/peers")["peers"]
            book = d.json("/api/v1/probes")
            probes = book["probes"]
            runs = sum(len(p["history"]) for p in probes)
            mesh_runs = sum(s["successes"] + s["failures"] for s in book["mesh"]["summaries"])
            budget = book["budget"]
            failed = sum(1 for p in probes if not p["latest"]["success"])
            series = sum(1 for l in d.get("/metrics")[1].splitlines() if l and not l.startswith("#"))
    shutil.rmtree(work, ignore_errors=True)
    print(f"inventory entries      {st['entries']} (self {st['self']['target']})")
    ring = [p for p in peers if p["source"] != "rotating"]
    print(f"peers probed           {len(ring)} (ring_successors {a.ring}) + {len(peers) - len(ring)} rotating this round")
    print(f"probe keys, failed     {len(probes)}, {failed}")
    print(f"probe runs             {runs} in {elapsed:.0f} s = {runs / elapsed * 60:.1f}/min (history capped at 20/key)")
    print(f"rotating runs (mesh)   {mesh_runs} = {mesh_runs / elapsed * 60:.1f}/min")
    print(f"budget admitted        {budget['admitted']}, refused {budget['refused']}")
    print(f"bytes sent (control)   {tx} = {tx / elapsed * 60 / 1024:.1f} KiB/min")
    print(f"series in /metrics     {series}")
    print(f"RSS                    {rss0} KiB at start, max {max(s[1] for s in samples)} KiB, "
          f"last {samples[-1][1]} KiB")
    print(f"CPU                    {samples[-1][2]:.2f} s over {elapsed:.0f} s = "
          f"{samples[-1][2] / elapsed * 100:.2f} % of one core")


if __name__ == "__main__":
    main()
