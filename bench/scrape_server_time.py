#!/usr/bin/env python3
"""Where a scrape's time goes after an idle gap, as bench/scrape_vs_node_exporter.py makes them:
one kept-alive connection, Accept-Encoding: gzip, GAP seconds between scrapes (0.12 by default,
the other bench's gap before a fresh snapshot).

For each rocewatchd build given (ROCEWATCHD=a:b:..., default build/daemon/rocewatchd), and
alternated with them for the same client, build/bench/http_floor (one epoll loop answering
7,000 bytes: what loopback, waking both sides and this client cost):
  - first byte: the client's time from its send to the answer's first byte, p50;
  - server: the front end thread's time from the request's recvfrom returning to the answer's
    sendto, from perf's syscall tracepoints (perf record -t on the thread named http-front), p10
    p50 p90; the floor has no such split.

    bench/scrape_server_time.py [--scrapes 120] [--gap 0.12] [--rounds 2] TREE    # root, perf
TREE is a directory from bench/make_nic_tree.py (default /dev/shm/t8). The daemons run in the
host's network namespace on loopback ports; their collection reads only the tree."""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import rwtest  # noqa: E402

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept-Encoding: gzip\r\n\r\n"


def scrape_loop(port, scrapes, gap):
    """Seconds to the first byte of each answer, the whole answer read each time. A new
    connection where the server closed the last (rocewatchd: after 100 requests)."""
    s = socket.create_connection(("127.0.0.1", port))
    out = []
    for _ in range(scrapes):
        time.sleep(gap)
        t0 = time.perf_counter()
        s.sendall(REQUEST)
        d = s.recv(65536)
        out.append(time.perf_counter() - t0)
        while b"\r\n\r\n" not in d or not re.search(rb"content-length: *(\d+)", d, re.I):
            more = s.recv(65536)
            if not more:
                raise RuntimeError("connection closed mid-answer")
            d += more
        head = d[:d.index(b"\r\n\r\n")]
        need = int(re.search(rb"content-length: *(\d+)", head, re.I).group(1)) - (len(d) - len(head) - 4)
        while need > 0:
            more = s.recv(65536)
            if not more:
                raise RuntimeError("connection closed mid-body")
            need -= len(more)
        if re.search(rb"\r\nconnection: *close", head, re.I):
            s.close()
            s = socket.create_connection(("127.0.0.1", port))
    s.close()
    return out


def server_times(trace):
    """recvfrom exit -> sendto enter, in seconds, from `perf script` of the two tracepoints."""
    out, since = [], None
    for line in subprocess.run(["perf", "script", "-i", trace, "-F", "time,event"], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        t = float(parts[0].rstrip(":"))
        if "sys_exit_recvfrom" in parts[1]:
            since = t
        elif "sys_enter_sendto" in parts[1] and since is not None:
            out.append(t - since)
            since = None
    return out


def front_thread(pid):
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            if f.read().strip() == "http-front":
                return tid
    raise RuntimeError(f"rocewatchd {pid} has no thread named http-front")


def run_daemon(binary, tree, a, tmp):
    port = rwtest.free_port()
    os.environ["ROCEWATCHD"] = binary  # what rwtest.Daemon starts
    with rwtest.Daemon(sysfs=f"{tree}/sysfs", procfs=f"{tree}/procfs", port=port, extra=["--log-level", "warn"]) as d:
        scrape_loop(port, 20, 0.01)  # warm-up: the cache learns that gzip is asked for
        trace = os.path.join(tmp, f"trace-{port}.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "syscalls:sys_exit_recvfrom", "-e",
                                 "syscalls:sys_enter_sendto", "-t", front_thread(d.proc.pid), "-o", trace],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        first = scrape_loop(port, a.scrapes, a.gap)
        perf.send_signal(signal.SIGINT)
        perf.wait()
    return first, server_times(trace)


def run_floor(a):
    port = rwtest.free_port()
    floor = subprocess.Popen([a.floor, str(port)])
    try:
        def up():
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                return True
            except OSError:
                return False

        rwtest.wait_for(up, 5, "http_floor")
        return scrape_loop(port, a.scrapes, a.gap)
    finally:
        floor.kill()
        floor.wait()


def ms(xs, p):
    xs = sorted(xs)
    return f"{1000 * xs[min(len(xs) - 1, int(p * len(xs)))]:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=120)
    ap.add_argument("--gap", type=float, default=0.12)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--floor", default="build/bench/http_floor")
    ap.add_argument("tree", nargs="?", default="/dev/shm/t8")
    a = ap.parse_args()
    builds = os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd").split(":")
    tree = os.path.abspath(a.tree)
    print(f"{a.scrapes} gzip scrapes {a.gap} s apart on one connection, tree {tree}, {a.rounds} rounds; "
          f"load {os.getloadavg()[0]:.1f}; ms")
    print("| round | server | first byte p50 | server recv->send p10 / p50 / p90 |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="rw-scrape-time-") as tmp:
        for r in range(1, a.rounds + 1):
            floor = run_floor(a)
            print(f"| {r} | http_floor | {ms(floor, 0.5)} | |", flush=True)
            for b in builds:
                first, server = run_daemon(b, tree, a, tmp)
                # The first answers after perf attached are left out: perf's own start-up.
                server = server[10:] if len(server) > 20 else server
                print(f"| {r} | {b} | {ms(first, 0.5)} | {ms(server, 0.1)} / {ms(server, 0.5)} / "
                      f"{ms(server, 0.9)} (n {len(server)}) |", flush=True)


if __name__ == "__main__":
    main()
