#!/usr/bin/env python3
"""What the hardened collection costs: two rocewatchd builds side by side on the DGX Spark
fixture, in one network namespace, scraped in turn (interleaved, so load hits both alike).
Reports /metrics latency (p50, p99) and the sysfs collector's own duration per build, and
their ratios (new / base).

    sudo ROCEWATCHD_BASE=/path/to/main/build/daemon/rocewatchd \\
         ROCEWATCHD=build/daemon/rocewatchd python3 bench/collect_overhead.py [scrapes]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import rwtest  # noqa: E402

SYSFS_DURATION = re.compile(rb'^rocewatch_collector_duration_seconds\{collector="sysfs"\} (\S+)$', re.M)


def scrape(ns, port):
    t0 = time.perf_counter()
    r = subprocess.run(["ip", "netns", "exec", ns.name, "curl", "-sS", "--max-time", "3",
                        f"http://127.0.0.1:{port}/metrics"], capture_output=True)
    # curl's own start-up is in both columns alike; the ratio is what matters.
    return time.perf_counter() - t0, r.stdout


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    builds = {"base": os.environ["ROCEWATCHD_BASE"], "new": os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd")}
    fx = rwtest.fixtures()
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write('[daemon]\ninterval = "1s"\n')
    cfg.close()
    lat = {k: [] for k in builds}
    dur = {k: [] for k in builds}
    with rwtest.Netns("bench") as ns:
        daemons = {}
        for i, (name, binary) in enumerate(builds.items()):
            os.environ["ROCEWATCHD"] = binary
            d = rwtest.Daemon(netns=ns, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark",
                              config=cfg.name, port=9890 + i)
            daemons[name] = d.__enter__()
        try:
            for _ in range(n):
                for name, d in daemons.items():
                    secs, body = scrape(ns, d.port)
                    lat[name].append(secs)
                    m = SYSFS_DURATION.search(body)
                    if m:
                        dur[name].append(float(m.group(1)))
                time.sleep(0.01)
        finally:
            for d in daemons.values():
                d.__exit__(None, None, None)
    os.unlink(cfg.name)

    def p(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    print(f"{n} scrapes per build, interleaved")
    for name in builds:
        print(f"{name:5} /metrics p50 {p(lat[name], 0.5) * 1e3:7.2f} ms  p99 {p(lat[name], 0.99) * 1e3:7.2f} ms  "
              f"sysfs collector median {statistics.median(dur[name]) * 1e3:6.2f} ms")
    print(f"ratio new/base: /metrics p50 {p(lat['new'], 0.5) / p(lat['base'], 0.5):.2f}, "
          f"sysfs collector {statistics.median(dur['new']) / statistics.median(dur['base']):.2f}")


if __name__ == "__main__":
    main()
