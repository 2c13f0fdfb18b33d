#!/usr/bin/env python3
"""Side by side on one fixture tree: rocewatchd vs Debian's prometheus-node-exporter (infiniband,
bonding and netclass collectors, netclass over netlink): scrape latency p50/p99, resident memory
and the bytes of /metrics, with ratios.

Usage (root, for the network namespace that keeps both daemons' netlink view identical):
    bench/scrape_vs_node_exporter.py [--scrapes 400] [--mode prometheus|fresh-conn] [--sysfs DIR]
Scrapes alternate A, B, A, B ... so drift in machine speed hits both alike. "first byte" is the
time to the answer's first byte: the server's share, with what waking it (and this client) after
the idle gap costs; --no-fresh scrapes back to back, with both hot and the snapshot unchanged. --mode prometheus
(the default) scrapes as Prometheus does: one kept-alive connection per target,
Accept-Encoding: gzip, and a fresh snapshot before every rocewatchd scrape (it collects every
100 ms and each round waits 120 ms; node_exporter collects on every scrape anyway).
--mode fresh-conn opens a new connection per scrape and asks for no compression.
--links tree makes every netdev of the tree a link of the namespace (a veth with the tree's MAC
and an address of its own /24), as on a real node, where both exporters report each link; the
default, spark, makes the DGX Spark fixture's three."""
import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
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


class Scraper:
    """One target's scrapes. prometheus: one kept-alive connection, Accept-Encoding: gzip, and
    a lean raw-socket HTTP/1.1 client (Python's http.client costs more than either server;
    Prometheus's Go client does not). fresh-conn: http.client, a new connection each time."""

    def __init__(self, port, mode):
        self.port, self.mode = port, mode
        self.sock = None
        self.req = f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept-Encoding: gzip\r\n\r\n".encode()

    def __call__(self):
        """Seconds for the whole scrape, seconds to the answer's first byte, body bytes."""
        self.t0 = self.first = time.perf_counter()
        n = self.keep_alive_gzip() if self.mode == "prometheus" else self.fresh_conn()
        return time.perf_counter() - self.t0, self.first - self.t0, n

    def fresh_conn(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read()
        c.close()
        assert r.status == 200, r.status
        return len(body)

    def keep_alive_gzip(self):
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(self.req)
        buf = self.recv()
        # The time to the first byte is the server's share (and loopback's); what follows, the
        # rest of the body and this client's parsing of it, is the client's.
        self.first = time.perf_counter()
        while b"\r\n\r\n" not in buf:
            buf += self.recv()
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        assert lines[0].startswith("HTTP/1.1 200"), lines[0]
        hdr = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        assert hdr.get("content-encoding") == "gzip", f"port {self.port}: not gzip"
        if "content-length" in hdr:
            need = int(hdr["content-length"])
            while len(rest) < need:
                rest += self.recv()
            body = rest[:need]
        else:  # chunked (Go's net/http, for a body larger than its buffer)
            body = b""
            while True:
                while b"\r\n" not in rest:
                    rest += self.recv()
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                while len(rest) < size + 2:
                    rest += self.recv()
                body += rest[:size]
                rest = rest[size + 2:]
                if size == 0:
                    break
        if hdr.get("connection", "").lower() == "close":
            self.sock.close()
            self.sock = None
        return len(body)

    def recv(self):
        b = self.sock.recv(1 << 20)
        if not b:
            raise ConnectionError(f"port {self.port} closed the connection")
        return b


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=400)
    ap.add_argument("--sysfs", default="tests/fixtures/sysfs/dgx-spark")
    ap.add_argument("--procfs", default="tests/fixtures/procfs/dgx-spark")
    ap.add_argument("--mode", choices=["prometheus", "fresh-conn"], default="prometheus")
    ap.add_argument("--no-fresh", action="store_true", help="do not wait for a fresh snapshot between scrapes")
    ap.add_argument("--links", choices=["spark", "tree"], default="spark",
                    help="which links the namespace holds: the DGX Spark's three, or one for each netdev of the tree")
    ap.add_argument("--dump", metavar="DIR", help="write both /metrics bodies there (rocewatchd.txt, node_exporter.txt)")
    a = ap.parse_args()
    sysfs = os.path.abspath(a.sysfs)
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write('[daemon]\ninterval = "100ms"\n')
    cfg.close()
    fresh_wait = 0.12 if a.mode == "prometheus" and not a.no_fresh else 0
    rw_port, ne_port = 19879, 19100
    with rwtest.Netns("bench") as node, rwtest.Netns("benchpeer") as peer:
        if a.links == "tree":
            rwtest.tree_links(node, peer, sysfs)
        else:
            rwtest.dgx_spark_links(node, peer)
        # netclass over netlink: the fixture trees hold only each netdev's address, so from
        # sysfs node_exporter would report no MTU, carrier or counters and every link down;
        # over netlink it reads the namespace's links, as rocewatchd does (and as it reads
        # /sys/class/net on a real node, with still more series a link).
        ne = subprocess.Popen(["ip", "netns", "exec", node.name, "prometheus-node-exporter",
                               f"--web.listen-address=127.0.0.1:{ne_port}", f"--path.sysfs={sysfs}",
                               f"--path.procfs={os.path.abspath(a.procfs)}", "--collector.disable-defaults",
                               "--collector.infiniband", "--collector.bonding", "--collector.netclass",
                               "--collector.netclass.netlink"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with rwtest.Daemon(netns=node, sysfs=sysfs, procfs=os.path.abspath(a.procfs), port=rw_port,
                               config=cfg.name, extra=["--log-level", "warn"], ready_timeout=120) as d:
                rwtest.wait_for(lambda: node.run("curl", "-sf", f"http://127.0.0.1:{ne_port}/metrics",
                                                 check=False).returncode == 0, 10, "node_exporter")
                rw_pid = d.proc.pid  # ip netns exec execs the daemon: the same process, whatever ROCEWATCHD names
                # Both run inside the namespace; the scraper joins it so loopback is shared.
                rwtest.enter_netns(node)
                scrape_rw, scrape_ne = Scraper(rw_port, a.mode), Scraper(ne_port, a.mode)
                for _ in range(20):  # warm-up
                    scrape_rw(), scrape_ne()
                rw, ne_t, rw_ratio, rw_first, ne_first = [], [], [], [], []
                for _ in range(a.scrapes):
                    time.sleep(fresh_wait)
                    x, xf, rw_bytes = scrape_rw()
                    y, yf, ne_bytes = scrape_ne()
                    rw.append(x)
                    ne_t.append(y)
                    rw_ratio.append(y / x)
                    rw_first.append(xf)
                    ne_first.append(yf)
                rw_mem, ne_mem = rss_kib(rw_pid), rss_kib(ne.pid)
                rw_text, ne_text = scrape_text(rw_port), scrape_text(ne_port)
                if a.dump:
                    os.makedirs(a.dump, exist_ok=True)
                    for name, text in (("rocewatchd.txt", rw_text), ("node_exporter.txt", ne_text)):
                        with open(os.path.join(a.dump, name), "w") as f:
                            f.write("\n".join(text) + "\n")
                rw_series = sum(1 for l in rw_text if l and not l.startswith("#"))
                ne_series = sum(1 for l in ne_text if l and not l.startswith("#"))
                rw_plain = sum(len(l.encode()) + 1 for l in rw_text)  # splitlines() took the newlines
                ne_plain = sum(len(l.encode()) + 1 for l in ne_text)
        finally:
            ne.terminate()
            ne.wait()
            os.unlink(cfg.name)
    ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
    print(f"fixture: {a.sysfs}, {a.scrapes} scrapes each, interleaved, mode {a.mode}")
    print(f"{'':28}{'rocewatchd':>14}{'node_exporter':>16}{'ratio ne/rw':>14}")
    print(f"{'scrape latency p50':28}{ms(statistics.median(rw)):>14}{ms(statistics.median(ne_t)):>16}"
          f"{statistics.median(ne_t) / statistics.median(rw):>13.1f}x")
    print(f"{'scrape latency p99':28}{ms(pct(rw, 99)):>14}{ms(pct(ne_t, 99)):>16}{pct(ne_t, 99) / pct(rw, 99):>13.1f}x")
    if a.mode == "prometheus":
        print(f"{'  first byte p50':28}{ms(statistics.median(rw_first)):>14}{ms(statistics.median(ne_first)):>16}"
              f"{statistics.median(ne_first) / statistics.median(rw_first):>13.1f}x")
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
    print(f"{'body bytes (as sent)':28}{rw_bytes:>14}{ne_bytes:>16}")
    print(f"{'body bytes uncompressed':28}{rw_plain:>14}{ne_plain:>16}{ne_plain / rw_plain:>13.2f}x")
    rw_shared, ne_shared = shared_bytes(rw_text), shared_bytes(ne_text, NE_SELF)
    print(f"{'  of which both know':28}{rw_shared:>14}{ne_shared:>16}{ne_shared / rw_shared:>13.2f}x")


# Families only rocewatch has (node_exporter 1.5 reads no hw_counters, GID tables, verdicts or
# probes): what issue 14 allows on top of node_exporter's size. Also which netdev an RDMA port is
# bound to and its link layer (rocewatch_rdma_port_info: node_exporter's infiniband collector has
# no per-port series and does not join ports to netdevs), and when the counters were read (the
# collector's own bookkeeping, as rocewatch_last_collection is). rocewatch_rdma_port_up stays on
# the shared side: Prometheus could derive most of it from state and phys_state.
ONLY_ROCEWATCH = ("rocewatch_rdma_port_hw_counters", "rocewatch_rdma_gid_info", "rocewatch_rdma_port_roce_v2_gid_index",
                  "rocewatch_rdma_port_series_dropped", "rocewatch_rdma_port_info", "rocewatch_alert",
                  "rocewatch_health", "rocewatch_probe", "rocewatch_host_", "rocewatch_ucx_", "rocewatch_collector_",
                  "rocewatch_last_collection", "rocewatch_rdma_counters_read_timestamp", "rocewatch_snapshot_",
                  "rocewatch_netlink_", "rocewatch_config_", "rocewatch_build_", "rocewatch_http_")


# node_exporter's own process and scrape metrics, left out of its side as ours are of ours.
NE_SELF = ("go_", "process_", "promhttp_", "node_scrape_", "node_exporter_")


def shared_bytes(lines, leave_out=ONLY_ROCEWATCH):
    """Bytes of the exposition outside the families named (HELP/TYPE lines included)."""
    def family(l):
        return (l.split(" ")[2] if l.startswith("#") else l.split("{")[0].split(" ")[0]) if l.strip() else ""
    return sum(len(l.encode()) + 1 for l in lines if not family(l).startswith(leave_out))


def scrape_text(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    t = c.getresponse().read().decode()
    c.close()
    return t.splitlines()


if __name__ == "__main__":
    main()
