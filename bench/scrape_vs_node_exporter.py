#!/usr/bin/env python3
"""Side by side on one fixture tree: rocewatchd vs Debian's prometheus-node-exporter (infiniband,
bonding and netclass collectors): scrape latency p50/p99 and resident memory, with ratios.

Usage (root, for the network namespace that keeps both daemons' netlink view identical):
    bench/scrape_vs_node_exporter.py [--scrapes 400] [--sysfs tests/fixtures/sysfs/dgx-spark]
Scrapes alternate A, B, A, B ... over keep-alive-free HTTP/1.1 connections, as Prometheus
would open them, so drift in machine speed hits both alike."""
import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import rwtest  # noqa: E402


def rss_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def scrape(port, path="/metrics"):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status == 200, r.status
    return time.perf_counter() - t0, len(body)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=400)
    ap.add_argument("--sysfs", default="tests/fixtures/sysfs/dgx-spark")
    ap.add_argument("--procfs", default="tests/fixtures/procfs/dgx-spark")
    a = ap.parse_args()
    sysfs = os.path.abspath(a.sysfs)
    rw_port, ne_port = 19879, 19100
    with rwtest.Netns("bench") as node, rwtest.Netns("benchpeer") as peer:
        rwtest.dgx_spark_links(node, peer)
        ne = subprocess.Popen(["ip", "netns", "exec", node.name, "prometheus-node-exporter",
                               f"--web.listen-address=127.0.0.1:{ne_port}", f"--path.sysfs={sysfs}",
                               f"--path.procfs={os.path.abspath(a.procfs)}", "--collector.disable-defaults",
                               "--collector.infiniband", "--collector.bonding", "--collector.netclass"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with rwtest.Daemon(netns=node, sysfs=sysfs, procfs=os.path.abspath(a.procfs), port=rw_port,
                               extra=["--log-level", "warn"]):
                rwtest.wait_for(lambda: node.run("curl", "-sf", f"http://127.0.0.1:{ne_port}/metrics",
                                                 check=False).returncode == 0, 10, "node_exporter")
                rw_pid = int(node.run("pgrep", "-n", "rocewatchd").stdout)
                # Both run inside the namespace; the scraper joins it so loopback is shared.
                rwtest.enter_netns(node)
                for _ in range(20):  # warm-up
                    scrape(rw_port), scrape(ne_port)
                rw, ne_t, rw_ratio = [], [], []
                for _ in range(a.scrapes):
                    x, rw_bytes = scrape(rw_port)
                    y, ne_bytes = scrape(ne_port)
                    rw.append(x)
                    ne_t.append(y)
                    rw_ratio.append(y / x)
                rw_mem, ne_mem = rss_kib(rw_pid), rss_kib(ne.pid)
                rw_series = sum(1 for l in scrape_text(rw_port) if l and not l.startswith("#"))
                ne_series = sum(1 for l in scrape_text(ne_port) if l and not l.startswith("#"))
        finally:
            ne.terminate()
            ne.wait()
    ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
    print(f"fixture: {a.sysfs}, {a.scrapes} scrapes each, interleaved")
    print(f"{'':28}{'rocewatchd':>14}{'node_exporter':>16}{'ratio ne/rw':>14}")
    print(f"{'scrape latency p50':28}{ms(statistics.median(rw)):>14}{ms(statistics.median(ne_t)):>16}"
          f"{statistics.median(ne_t) / statistics.median(rw):>13.1f}x")
    print(f"{'scrape latency p99':28}{ms(pct(rw, 99)):>14}{ms(pct(ne_t, 99)):>16}{pct(ne_t, 99) / pct(rw, 99):>13.1f}x")
    print(f"{'pairwise ratio p50':28}{'':>14}{'':>16}{statistics.median(rw_ratio):>13.1f}x")
    print(f"{'RSS after run (VmRSS)':28}{rw_mem['VmRSS'] / 1024:>11.1f} MiB{ne_mem['VmRSS'] / 1024:>13.1f} MiB"
          f"{ne_mem['VmRSS'] / rw_mem['VmRSS']:>13.1f}x")
    print(f"{'peak RSS (VmHWM)':28}{rw_mem['VmHWM'] / 1024:>11.1f} MiB{ne_mem['VmHWM'] / 1024:>13.1f} MiB"
          f"{ne_mem['VmHWM'] / rw_mem['VmHWM']:>13.1f}x")
    print(f"{'  of which anonymous':28}{rw_mem['RssAnon'] / 1024:>11.1f} MiB{ne_mem['RssAnon'] / 1024:>13.1f} MiB"
          f"{ne_mem['RssAnon'] / rw_mem['RssAnon']:>13.1f}x")
    print(f"{'  of which file-backed':28}{rw_mem['RssFile'] / 1024:>11.1f} MiB{ne_mem['RssFile'] / 1024:>13.1f} MiB"
          f"{ne_mem['RssFile'] / rw_mem['RssFile']:>13.1f}x")
    print(f"{'series exposed':28}{rw_series:>14}{ne_series:>16}")
    print(f"{'body bytes':28}{rw_bytes:>14}{ne_bytes:>16}")


def scrape_text(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    t = c.getresponse().read().decode()
    c.close()
    return t.splitlines()


if __name__ == "__main__":
    main()
