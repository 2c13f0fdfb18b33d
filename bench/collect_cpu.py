#!/usr/bin/env python3
"""What collection costs in CPU and syscalls: rocewatchd builds (collecting every second) and
node_exporter 1.5.0 (infiniband, bonding, netclass) running at the same time on the same tree,
so machine load hits them alike, each scraped every 15 s with Accept-Encoding: gzip, as
Prometheus would. Counts that do not depend on load: CPU seconds (cgroup cpuacct, else
/proc/<pid>/stat) over whole collection cycles, and syscalls per cycle from `strace -c -f`
attached to each rocewatchd in turn.

    sudo ROCEWATCHD_BASE=/work/main/build/daemon/rocewatchd ROCEWATCHD=build/daemon/rocewatchd \\
         bench/collect_cpu.py [--window 60] [--strace 5] [--interval 1s] TREE...
TREE is "spark" (the committed DGX Spark fixture) or a directory from bench/make_nic_tree.py,
best on tmpfs (/dev/shm): on a disk the kernel may drop the tree's pages between reads, and
then both exporters wait on the disk and runs of one build differ by a quarter.
Every netdev of the tree is a link of the namespace (a veth), as on a real node, and both read
links over netlink (node_exporter's netclass.netlink); --no-links leaves loopback only, as this
bench had it until stop 31.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import rwtest  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
GENERATION = re.compile(rb"^rocewatch_snapshot_generation (\d+)", re.M)


class Cpu:
    """CPU seconds one process (every thread, those that come and go too) has used: from a
    cgroup-v1 cpuacct group of its own (nanoseconds) where there is one, else from
    /proc/<pid>/stat (clock ticks, too coarse for a short window at 3 NICs)."""

    ROOT = "/sys/fs/cgroup/cpuacct"

    def __init__(self, pid, tag):
        self.pid, self.group = pid, None
        if os.access(f"{self.ROOT}/cgroup.procs", os.W_OK):
            self.group = f"{self.ROOT}/rw-bench-{os.getpid()}-{tag}"
            os.mkdir(self.group)
            with open(f"{self.group}/cgroup.procs", "w") as f:
                f.write(str(pid))

    def seconds(self):
        if self.group:
            with open(f"{self.group}/cpuacct.usage") as f:
                return int(f.read()) / 1e9
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime

    def close(self):
        """After the process has exited: removes the group (only the one this made)."""
        if self.group:
            for _ in range(50):
                try:
                    os.rmdir(self.group)
                    return
                except OSError:
                    time.sleep(0.1)


def get(port, path):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read()


def generation(ns, port):
    out = subprocess.run(["ip", "netns", "exec", ns.name, "curl", "-sS", f"http://127.0.0.1:{port}/metrics"],
                         capture_output=True, check=True).stdout
    return int(GENERATION.search(out).group(1))


def syscalls(ns, pid, port, secs):
    """Syscalls per collection cycle: strace -c over `secs`, divided by the cycles it saw."""
    g0 = generation(ns, port)
    r = subprocess.run(["timeout", "-s", "INT", str(secs), "strace", "-c", "-f", "-p", str(pid)],
                       capture_output=True, text=True)
    g1 = generation(ns, port)
    total = re.search(r"^-+.*\n\s*100\.00\s+\S+\s+\S+\s+(\d+)", r.stderr, re.M)
    total = total or re.search(r"(\d+)\s+(\d+\s+)?total$", r.stderr, re.M)
    # Minus the two /metrics requests that bracket the window (counted separately below).
    return int(total.group(1)), max(1, g1 - g0 - 1)


def tree_paths(tree):
    fx = os.path.abspath(rwtest.fixtures())
    if tree == "spark":
        return f"{fx}/sysfs/dgx-spark", f"{fx}/procfs/dgx-spark"
    return os.path.abspath(f"{tree}/sysfs"), os.path.abspath(f"{tree}/procfs")


def nic_count(sysfs):
    return len(os.listdir(f"{sysfs}/class/infiniband"))


def measure(tree, builds, a, cfg):  # noqa: C901 (one bench run, read top to bottom)
    sysfs, procfs = tree_paths(tree)
    n = nic_count(sysfs)
    with rwtest.Netns("cpu") as ns, rwtest.Netns("cpupeer") as peer:
        if a.links and tree == "spark":
            rwtest.dgx_spark_links(ns, peer)
        elif a.links:
            rwtest.tree_links(ns, peer, sysfs)
        ne_port = 9970
        ne = subprocess.Popen(["ip", "netns", "exec", ns.name, "prometheus-node-exporter", "--collector.disable-defaults",
                               "--collector.infiniband", "--collector.bonding", "--collector.netclass",
                               "--collector.netclass.netlink", f"--path.sysfs={sysfs}", f"--web.listen-address=127.0.0.1:{ne_port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        daemons, cpus = {}, {}
        try:
            for i, (name, binary) in enumerate(builds.items()):
                os.environ["ROCEWATCHD"] = binary
                d = rwtest.Daemon(netns=ns, sysfs=sysfs, procfs=procfs, config=cfg, port=9960 + i,
                                  extra=["--log-level", "warn"])
                daemons[name] = d.__enter__()
            cpus["ne"] = Cpu(ne.pid, "ne")
            for k, d in daemons.items():
                cpus[k] = Cpu(d.proc.pid, k)
            time.sleep(3)  # past start-up and the first full read
            cpu0 = {k: cpus[k].seconds() for k in daemons}
            gen0 = {k: generation(ns, d.port) for k, d in daemons.items()}
            ne0 = cpus["ne"].seconds()
            t0 = time.monotonic()
            scrapes = 0
            while time.monotonic() - t0 < a.window:
                for port in [ne_port] + [d.port for d in daemons.values()]:
                    subprocess.run(["ip", "netns", "exec", ns.name, "curl", "-sS", "--compressed", "-o", "/dev/null",
                                    f"http://127.0.0.1:{port}/metrics"], check=True)
                scrapes += 1
                time.sleep(max(0.0, t0 + 15 * scrapes - time.monotonic()))
            wall = time.monotonic() - t0
            ne_cpu = cpus["ne"].seconds() - ne0
            rows = {}
            for k, d in daemons.items():
                cycles = generation(ns, d.port) - gen0[k]
                rows[k] = (cpus[k].seconds() - cpu0[k], cycles)
            sc = {k: syscalls(ns, d.proc.pid, d.port, a.strace) for k, d in daemons.items()} if a.strace else {}
        finally:
            for d in daemons.values():
                d.__exit__(None, None, None)
            ne.terminate()
            ne.wait()
            for c in cpus.values():
                c.close()
    print(f"\n{tree}: {n} NICs, {'its links' if a.links else 'loopback only'}, {wall:.0f} s window, each scraped {scrapes}x (every 15 s)")
    print(f"  node_exporter          {ne_cpu * 60 / wall:6.3f} CPU-s/min")
    for k, (cpu, cycles) in rows.items():
        per = cpu / max(1, cycles)
        line = (f"  rocewatchd {k:5} {a.interval:4} {cpu * 60 / wall:6.3f} CPU-s/min  {per * 1e3:7.2f} ms/cycle "
                f"({per * 100:.2f}% of a core at 1 s; {cycles} cycles)")
        if k in sc:
            calls, cyc = sc[k]
            line += f"  {calls / cyc:8.0f} syscalls/cycle = {calls / cyc / n:6.1f}/device"
        print(line)
    if "base" in rows and "new" in rows:
        b, nw = rows["base"][0] / max(1, rows["base"][1]), rows["new"][0] / max(1, rows["new"][1])
        print(f"  ratio new/base CPU per cycle {nw / b if b else float('nan'):.2f}; "
              f"new vs node_exporter CPU-s/min {rows['new'][0] / ne_cpu if ne_cpu else float('nan'):.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=60)
    ap.add_argument("--interval", default="1s", help="rocewatchd's collection interval")
    ap.add_argument("--strace", type=float, default=5, help="seconds of strace per build (0: none)")
    ap.add_argument("--no-links", dest="links", action="store_false",
                    help="no links in the namespace but loopback (the tree's netdevs are links of nothing)")
    ap.add_argument("trees", nargs="+")
    a = ap.parse_args()
    builds = {}
    if os.environ.get("ROCEWATCHD_BASE"):
        builds["base"] = os.environ["ROCEWATCHD_BASE"]
    builds["new"] = os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd")
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(f'[daemon]\ninterval = "{a.interval}"\n')
    cfg.close()
    try:
        for tree in a.trees:
            measure(tree, builds, a, cfg.name)
    finally:
        os.unlink(cfg.name)


if __name__ == "__main__":
    main()
