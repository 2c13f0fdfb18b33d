#!/usr/bin/env python3
"""N rocewatchd (default 64) in network namespaces, as the cluster test builds them (one bridge
per rail, rails a and b, racks of 4), each probing its K ring successors on both rails with
the given TCP probe intervals, for a given duration. Reports per daemon: RSS, CPU, series in
/metrics, probes run and probe bytes sent per minute (the rail veths' tx_bytes).

With --inventory the daemons get no [[peers]]: one file_sd inventory of all N, [cluster]
ring_successors K and --rotating M rotating peers (rails matched from hellos), and the probes
counted are the budget's (own runs and sessions served, rocewatch_probe_budget_runs_total).

Usage (root): bench/cluster_scale.py [--nodes 64] [--minutes 5] [--ring 4]
                                     [--lat-interval 30s] [--lat-timeout 5s] [--bw-interval 15m]
                                     [--bw-duration 100ms] [--inventory [--rotating 2] [--rotate-every 1m]]
"""
import argparse
import os
import re
import secrets
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import test_cluster as tc  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")


def config(i, args, token, work):
    peers = [] if args.inventory else [(i + k) % args.nodes for k in range(1, args.ring + 1)]
    path = tc.daemon_config(i, token, work, peers)
    with open(path) as f:
        text = f.read()
    if args.inventory:
        text += (f'[cluster]\ninventory = "{tc.inventory_path(work)}"\nrails = ["ra", "rb"]\n'
                 f'ring_successors = {args.ring}\nrotating_peers = {args.rotating}\n'
                 f'rotate_every = "{args.rotate_every}"\n')
    text = re.sub(r'\[probes.tcp_lat\]\ninterval = "\w+"\njitter = "\w+"',
                  f'[probes.tcp_lat]\ninterval = "{args.lat_interval}"\njitter = "{args.lat_jitter}"', text)
    text = re.sub(r'(\[probes.tcp_lat\][^[]*)timeout = "\w+"', rf'\1timeout = "{args.lat_timeout}"', text)
    text = re.sub(r'\[probes.tcp_bw\]\ninterval = "\w+"\njitter = "\w+"\nduration = "\w+"',
                  f'[probes.tcp_bw]\ninterval = "{args.bw_interval}"\njitter = "{args.bw_jitter}"\n'
                  f'duration = "{args.bw_duration}"', text)
    with open(path, "w") as f:
        f.write(text)
    return path


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def daemon_pid(d):
    """The rocewatchd under `ip netns exec` (exec'd in place, so the same pid)."""
    return d.proc.pid


def tx_bytes(ns):
    total = 0
    for dev in ("ra", "rb"):
        r = ns.run("cat", f"/sys/class/net/{dev}/statistics/tx_bytes")
        total += int(r.stdout)
    return total


def runs(d):
    """(peer, rail, kind) -> last run timestamp, the series count, and the budget's admitted
    runs (own, peer) since start, from /metrics."""
    code, body = d.get("/metrics")
    out = {}
    series = 0
    budget = {"own": 0.0, "peer": 0.0}
    for line in body.splitlines():
        if line.startswith("#") or not line:
            continue
        series += 1
        if line.startswith("rocewatch_probe_last_run_timestamp_seconds{"):
            labels, value = line.rsplit(" ", 1)
            out[labels] = float(value)
        m = re.match(r'rocewatch_probe_budget_runs_total\{side="(\w+)",result="admitted"\} (\S+)', line)
        if m:
            budget[m.group(1)] = float(m.group(2))
    return out, series, budget


# The kernel's ARP table is one for all network namespaces (gc_thresh3 = 1024 entries by default),
# while a real node has its own: N namespaces, each with neighbours on 3 links, overflow it at 64
# nodes ("neighbor table overflow!", connects that time out or fail with EHOSTUNREACH). The bench
# raises the thresholds for its run and puts them back, as the VM test bed does rmem_default.
NEIGH = "/proc/sys/net/ipv4/neigh/default/gc_thresh"


def raise_neigh_thresholds(nodes):
    saved = {}
    for i, factor in ((1, 16), (2, 48), (3, 64)):
        with open(f"{NEIGH}{i}") as f:
            saved[i] = f.read().strip()
        want = max(int(saved[i]), nodes * factor)
        with open(f"{NEIGH}{i}", "w") as f:
            f.write(str(want))
    return saved


def restore_neigh_thresholds(saved):
    for i in (1, 2, 3):
        with open(f"{NEIGH}{i}", "w") as f:
            f.write(saved[i])


def summary(name, values, fmt="{:.1f}"):
    values = sorted(values)
    return (f"{name}: median " + fmt.format(statistics.median(values)) + ", max " + fmt.format(values[-1]) +
            ", total " + fmt.format(sum(values)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--ring", type=int, default=4)
    ap.add_argument("--lat-interval", default="30s")
    ap.add_argument("--lat-jitter", default="3s")
    ap.add_argument("--lat-timeout", default="5s", help="tcp_lat timeout (the cluster test's is 1s)")
    ap.add_argument("--bw-interval", default="15m")
    ap.add_argument("--bw-jitter", default="1m")
    ap.add_argument("--bw-duration", default="100ms")
    ap.add_argument("--sample", type=float, default=5, help="seconds between /metrics samples")
    ap.add_argument("--inventory", action="store_true", help="one inventory, no [[peers]]")
    ap.add_argument("--rotating", type=int, default=2)
    ap.add_argument("--rotate-every", default="1m")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rw-scale-")
    os.chmod(work, 0o755)
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.chmod(token, 0o600)
    saved = raise_neigh_thresholds(args.nodes)
    try:
        t0 = time.monotonic()
        with tc.Cluster(work, token, nodes=args.nodes, config=lambda i: config(i, args, token, work)) as c:
            c.start_daemons()
            print(f"{args.nodes} daemons up in {time.monotonic() - t0:.0f} s; measuring {args.minutes} min", flush=True)
            pids = [daemon_pid(d) for d in c.daemons]
            cpu0 = [cpu_seconds(p) for p in pids]
            tx0 = [tx_bytes(n) for n in c.nodes]
            first = [runs(d) for d in c.daemons]
            last = [f[0] for f in first]
            budget0 = [f[2] for f in first]
            budget = list(budget0)
            probes = [0] * args.nodes
            series = [0] * args.nodes
            start = time.monotonic()
            end = start + args.minutes * 60
            while time.monotonic() < end:
                time.sleep(args.sample)
                for i, d in enumerate(c.daemons):
                    now, series[i], budget[i] = runs(d)
                    probes[i] += sum(1 for k, v in now.items() if last[i].get(k) != v)
                    last[i] = now
            minutes = (time.monotonic() - start) / 60
            cpu = [(cpu_seconds(p) - c0) / (minutes * 60) * 100 for p, c0 in zip(pids, cpu0)]
            tx = [(tx_bytes(n) - b0) / minutes for n, b0 in zip(c.nodes, tx0)]
            rss = [rss_mib(p) for p in pids]
            alive = sum(1 for d in c.daemons if d.proc.poll() is None)
    finally:
        restore_neigh_thresholds(saved)
    print(f"nodes {args.nodes}, ring {args.ring}, rails 2, tcp_lat every {args.lat_interval}, "
          f"tcp_bw every {args.bw_interval} for {args.bw_duration}, {minutes:.1f} min measured")
    print(summary("RSS MiB per daemon", rss))
    print(summary("CPU % of a core per daemon", cpu, "{:.2f}"))
    print(summary("series per daemon", series, "{:.0f}"))
    if args.inventory:
        print(f"inventory of {args.nodes}, rotating {args.rotating} every {args.rotate_every}")
        print(summary("own probe runs per minute per daemon (budget)",
                      [(b["own"] - b0["own"]) / minutes for b, b0 in zip(budget, budget0)]))
        print(summary("sessions served per minute per daemon (budget)",
                      [(b["peer"] - b0["peer"]) / minutes for b, b0 in zip(budget, budget0)]))
    else:
        print(summary("probes per minute per daemon", [p / minutes for p in probes]))
    print(summary("probe bytes sent per minute per daemon (rail tx_bytes)", tx, "{:.0f}"))
    print(f"daemons alive at the end: {alive}/{args.nodes}")


if __name__ == "__main__":
    main()
