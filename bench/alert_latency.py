#!/usr/bin/env python3
"""Time from a veth going down (the `ip link set down` call returning) to rocewatchd's
/api/v1/alerts showing netdev_down firing, over repeated cycles; p50/p99/max.

Usage (root): bench/alert_latency.py [--cycles 30]. The collection interval is left at 5 s,
so anything under that is the netlink event path, not the poll."""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import rwtest  # noqa: E402


def firing(port, obj):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    c.request("GET", "/api/v1/alerts")
    body = json.loads(c.getresponse().read())
    c.close()
    return any(a["rule"] == "netdev_down" and a["object"] == obj and a["state"] == "firing" for a in body["alerts"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=30)
    a = ap.parse_args()
    fx = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as cfg:
        cfg.write('[expect]\nrails = ["rocep1s0f0", "rocep1s0f1"]\n[rules.netdev_down]\nclear_after = "0s"\n')
    lat = []
    with rwtest.Netns("lat") as node, rwtest.Netns("latpeer") as peer:
        rwtest.dgx_spark_links(node, peer)
        with rwtest.Daemon(netns=node, sysfs=os.path.abspath(f"{fx}/sysfs/dgx-spark"), config=cfg.name, port=19880,
                           extra=["--log-level", "warn"]) as d:
            rwtest.enter_netns(node)
            for _ in range(a.cycles):
                node.ip("link", "set", "enp1s0f0np0", "down")
                t0 = time.perf_counter()
                while not firing(d.port, "enp1s0f0np0"):
                    if time.perf_counter() - t0 > 10:
                        raise SystemExit("alert never fired")
                    time.sleep(0.001)
                lat.append(time.perf_counter() - t0)
                node.ip("link", "set", "enp1s0f0np0", "up")
                rwtest.wait_for(lambda: not firing(d.port, "enp1s0f0np0"), 10, "alert to clear", step=0.005)
    os.unlink(cfg.name)
    lat.sort()
    ms = [x * 1000 for x in lat]
    print(f"veth down -> netdev_down firing over {a.cycles} cycles (collection interval 5 s):")
    print(f"  p50 {statistics.median(ms):.1f} ms   p99 {ms[min(len(ms) - 1, int(0.99 * len(ms)))]:.1f} ms"
          f"   max {ms[-1]:.1f} ms   min {ms[0]:.1f} ms")


if __name__ == "__main__":
    main()
