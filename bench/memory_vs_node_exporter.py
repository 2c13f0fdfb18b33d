#!/usr/bin/env python3
"""Memory side by side: rocewatchd and Debian's prometheus-node-exporter (infiniband, bonding and
netclass collectors) on the same trees, both scraped as Prometheus does (gzip), then RSS and PSS
(from /proc/PID/smaps_rollup) of each, with ratios. PSS counts a shared library's pages divided
among the processes that map them, so it is what one more daemon really costs a node.

    bench/memory_vs_node_exporter.py [--scrapes 12] [--interval 5s] TREE...    # root
TREE is "spark" (the committed DGX Spark fixture) or a directory from bench/make_nic_tree.py.
Every netdev of the tree is a link of the namespace (a veth, its far end in a second one), as on
a real node, and both read the links over netlink (node_exporter's netclass.netlink); --no-links
leaves the namespace with loopback only, as this bench had it until stop 31.
Goal (issue 14): rocewatchd's RSS below node_exporter's and its PSS at most a third of it.
ROCEWATCHD names the binary (default build/daemon/rocewatchd); extra daemon environment, such as
MALLOC_ARENA_MAX, passes through."""
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


def mem_kib(pid):
    """VmRSS, VmHWM, RssAnon, RssFile from status; Pss, Pss_Anon, Pss_File from smaps_rollup."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:")):
                out[line.split(":")[0]] = int(line.split()[1])
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Pss:", "Pss_Anon:", "Pss_File:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def pss_by_mapping(pid):
    """PSS in KiB per mapped file (anonymous memory, heap and stacks under their smaps names)."""
    out, name = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                name = os.path.basename(head[5]) if len(head) > 5 else "[anon]"
            elif head[0] == "Pss:":
                out[name] = out.get(name, 0) + int(head[1])
    return out


def scrape(ns, port):
    """One gzip scrape from inside the namespace; the body's size as sent."""
    r = subprocess.run(["ip", "netns", "exec", ns.name, "curl", "-sS", "-H", "Accept-Encoding: gzip",
                        "-o", "/dev/null", "-w", "%{size_download}", f"http://127.0.0.1:{port}/metrics"],
                       capture_output=True, text=True, check=True)
    return int(r.stdout)


def heap_stats(d):
    """glibc's own count of the heap: what the process holds from the system against what is in
    use, read by gdb calling malloc_stats() (it writes to the daemon's stderr, its log). gdb
    exits 1 on detaching ("Couldn't write extended state status"), the call made."""
    start = os.path.getsize(d.log.name)
    subprocess.run(["gdb", "-p", str(d.proc.pid), "-batch", "-ex", "call (void)malloc_stats()"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(d.log.name) as f:
        f.seek(start)
        text = f.read()
    total = re.search(r"Total \(incl. mmap\):\s+system bytes\s+=\s+(\d+)\s+in use bytes\s+=\s+(\d+)", text)
    return f"system {total.group(1)}, in use {total.group(2)}" if total else text.strip()


def tree_paths(tree):
    fx = os.path.abspath(rwtest.fixtures())
    if tree == "spark":
        return f"{fx}/sysfs/dgx-spark", f"{fx}/procfs/dgx-spark"
    return os.path.abspath(f"{tree}/sysfs"), os.path.abspath(f"{tree}/procfs")


def measure(tree, a, cfg):
    sysfs, procfs = tree_paths(tree)
    n = len(os.listdir(f"{sysfs}/class/infiniband"))
    with rwtest.Netns("mem") as ns, rwtest.Netns("mempeer") as peer:
        if a.links and tree == "spark":
            rwtest.dgx_spark_links(ns, peer)
        elif a.links:
            rwtest.tree_links(ns, peer, sysfs)
        rw_port, ne_port = rwtest.free_port(), rwtest.free_port()
        ne = subprocess.Popen(["ip", "netns", "exec", ns.name, "prometheus-node-exporter", "--collector.disable-defaults",
                               "--collector.infiniband", "--collector.bonding", "--collector.netclass",
                               "--collector.netclass.netlink", f"--path.sysfs={sysfs}", f"--path.procfs={procfs}",
                               f"--web.listen-address=127.0.0.1:{ne_port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with rwtest.Daemon(netns=ns, sysfs=sysfs, procfs=procfs, config=cfg, port=rw_port,
                               extra=["--log-level", "warn"]) as d:
                rwtest.wait_for(lambda: subprocess.run(["ip", "netns", "exec", ns.name, "curl", "-sf", "-o", "/dev/null",
                                                        f"http://127.0.0.1:{ne_port}/metrics"]).returncode == 0,
                                10, "node_exporter")
                rw_bytes = ne_bytes = 0
                for _ in range(a.scrapes):
                    rw_bytes, ne_bytes = scrape(ns, rw_port), scrape(ns, ne_port)
                    time.sleep(a.gap)
                rw, nem = mem_kib(d.proc.pid), mem_kib(ne.pid)
                if a.mappings:
                    top = sorted(pss_by_mapping(d.proc.pid).items(), key=lambda kv: -kv[1])
                    print(f"{tree}: rocewatchd PSS by mapping, KiB: " +
                          ", ".join(f"{k} {v}" for k, v in top if v >= 64))
                    names = sorted(open(f"/proc/{d.proc.pid}/task/{t}/comm").read().strip()
                                   for t in os.listdir(f"/proc/{d.proc.pid}/task"))
                    print(f"{tree}: rocewatchd threads ({len(names)}): {', '.join(names)}")
                if a.heap:
                    print(f"{tree}: rocewatchd heap, bytes: {heap_stats(d)}")
        finally:
            ne.terminate()
            ne.wait()
    return n, rw, nem, rw_bytes, ne_bytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=12)
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between scrape rounds")
    ap.add_argument("--interval", default="5s", help="rocewatchd's collection interval")
    ap.add_argument("--no-links", dest="links", action="store_false",
                    help="no links in the namespace but loopback (the fixture's netdevs are links of nothing)")
    ap.add_argument("--mappings", action="store_true", help="also print rocewatchd's PSS per mapping (64 KiB and up) and its threads")
    ap.add_argument("--heap", action="store_true",
                    help="also print glibc's heap figures for rocewatchd: held from the system, in use (gdb)")
    ap.add_argument("trees", nargs="+")
    a = ap.parse_args()
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(f'[daemon]\ninterval = "{a.interval}"\n')
    cfg.close()
    rows = []
    try:
        for tree in a.trees:
            rows.append(measure(tree, a, cfg.name))
    finally:
        os.unlink(cfg.name)
    mib = lambda k: f"{k / 1024:.1f}"  # noqa: E731
    print(f"after {a.scrapes} gzip scrapes each, {a.gap} s apart; rocewatchd interval {a.interval}; "
          f"{'links as the tree has them' if a.links else 'loopback only'}; "
          f"load {os.getloadavg()[0]:.1f}; MiB; ratios ours/node_exporter")
    print("| NICs | RSS ours / ne | ratio | PSS ours / ne | ratio | PSS ours / RSS ne (goal <= 0.33) "
          "| anon RSS ours / ne | gzip body bytes ours / ne |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, rw, ne, rb, nb in rows:
        print(f"| {n} | {mib(rw['VmRSS'])} / {mib(ne['VmRSS'])} | {rw['VmRSS'] / ne['VmRSS']:.2f} "
              f"| {mib(rw['Pss'])} / {mib(ne['Pss'])} | {rw['Pss'] / ne['Pss']:.2f} | {rw['Pss'] / ne['VmRSS']:.2f} "
              f"| {mib(rw['RssAnon'])} / {mib(ne['RssAnon'])} | {rb} / {nb} |")


if __name__ == "__main__":
    main()
