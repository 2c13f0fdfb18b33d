#!/usr/bin/env python3
"""End to end: the real rocewatchd on the DGX Spark fixture tree, with real veth netdevs in a
private network namespace; every REST endpoint through curl, /metrics against a golden file and
promtool, and a real Prometheus server scraping it."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "dgx-spark.metrics")
# Families whose values depend on timing or on the run, not on the node: left out of the golden diff.
VOLATILE = re.compile(r"^rocewatch_(collector_duration_seconds|collector_last_success_timestamp_seconds|last_collection_timestamp_seconds|snapshot_generation"
                      r"|netlink_events_total|netlink_resyncs_total|http_\w+|config_last_reload_success_timestamp_seconds"
                      r"|link_carrier_changes_total|rdma_counters_read_timestamp_seconds|rdma_port_\w*per_second(?<!rate_bytes_per_second)|build_info)\b")


def normalise(text):
    out = []
    for line in text.splitlines():
        name = line.split(" ")[2] if line.startswith("# ") else line
        if VOLATILE.match(name):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def main():
    rwtest.require_root()
    for tool in ("curl", "promtool", "prometheus"):
        rwtest.require(shutil.which(tool), f"needs {tool}")
    t = rwtest.Results()
    fx = rwtest.fixtures()
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write('[daemon]\ninterval = "1s"\n[expect]\nmtu = 9000\nport_rate_gbps = 100\n'
              'rails = ["rocep1s0f0", "rocep1s0f1"]\nignore_devices = ["roceP2p1s0f0"]\n')
    cfg.close()
    with rwtest.Netns("node") as node, rwtest.Netns("peer") as peer:
        rwtest.dgx_spark_links(node, peer)
        with rwtest.Daemon(netns=node, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark",
                           config=cfg.name, port=9879) as d:
            # Every endpoint, through curl.
            for path, code in [("/healthz", 200), ("/readyz", 200), ("/", 200), ("/metrics", 200),
                               ("/api/v1/status", 200), ("/api/v1/devices", 200), ("/api/v1/devices/rocep1s0f0", 200),
                               ("/api/v1/devices/mlx5_99", 404), ("/api/v1/interfaces", 200), ("/api/v1/bonds", 200),
                               ("/api/v1/alerts", 200), ("/api/v1/alerts/history", 200), ("/api/v1/config", 200),
                               ("/api/v1/nothing", 404)]:
                got, body = d.get(path)
                t.check(got == code, f"GET {path} -> {got} (want {code})")
                if path.startswith("/api/"):
                    try:
                        j = json.loads(body)
                        t.check(code == 200 or j.get("status") == code, f"{path}: JSON error body carries the status")
                    except ValueError:
                        t.check(False, f"{path}: body is JSON")
            got, _ = d.get("/api/v1/status", method="DELETE")
            t.check(got == 405, f"DELETE /api/v1/status -> {got} (want 405)")

            status = d.json("/api/v1/status")
            t.check(status["health"] == "warning", f"health is warning (peermem missing): {status['health']}")
            dev = d.json("/api/v1/devices/rocep1s0f0")
            port = dev["ports"][0]
            t.check(port["roce_v2_gid"] == {"index": 3, "address": "192.168.100.11"}, "rail 0 uses RoCE v2 GID index 3, as on a DGX Spark node")
            t.check(port["netdev"] == "enp1s0f0np0", "rail 0 maps to enp1s0f0np0")
            ifs = {i["name"]: i for i in d.json("/api/v1/interfaces")["interfaces"]}
            t.check(ifs["enp1s0f0np0"]["mtu"] == 9000, "interface MTU seen over netlink")
            t.check(any(a["address"] == "192.168.100.11" for a in ifs["enp1s0f0np0"]["addresses"]),
                    "interface address seen over netlink")
            alerts = d.alerts()
            t.check(set(alerts) == {("peermem_missing", "nvidia_peermem")}, f"only peermem_missing fires: {sorted(alerts)}")
            effective = d.json("/api/v1/config")
            t.check(effective["expect"]["rails"] == ["rocep1s0f0", "rocep1s0f1"], "effective config served")

            # /metrics: promtool, then the golden file (after a second cycle so rates exist).
            time.sleep(1.2)
            _, metrics = d.get("/metrics")
            with tempfile.NamedTemporaryFile("w", suffix=".prom", delete=False) as f:
                f.write(metrics)
            r = subprocess.run(["promtool", "check", "metrics"], stdin=open(f.name), capture_output=True, text=True)
            t.check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
                    f"promtool check metrics is clean {r.stdout}{r.stderr}")
            os.unlink(f.name)
            got = normalise(metrics)
            if os.environ.get("ROCEWATCH_UPDATE_GOLDEN"):
                with open(GOLDEN, "w") as g:
                    g.write(got)
            want = open(GOLDEN).read()
            if got != want:
                import difflib
                print("".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "served")))
            t.check(got == want, "/metrics matches tests/integration/golden/dgx-spark.metrics")

            # A real Prometheus scrapes us, and its query API sees our series.
            scrape_prometheus(t, node, d.port)
    os.unlink(cfg.name)
    t.finish()


def scrape_prometheus(t, node, port):
    work = tempfile.mkdtemp(prefix="rw-prom-")
    with open(f"{work}/prometheus.yml", "w") as f:
        f.write(f"global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                f"  - job_name: rocewatch\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
    prom_port = rwtest.free_port()
    log = open(f"{work}/prometheus.log", "w")
    prom = subprocess.Popen(["ip", "netns", "exec", node.name, "prometheus", f"--config.file={work}/prometheus.yml",
                             f"--storage.tsdb.path={work}/data", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=log, stderr=subprocess.STDOUT)

    def query(q):
        r = node.run("curl", "-sS", "--max-time", "2", "--data-urlencode", f"query={q}",
                     f"http://127.0.0.1:{prom_port}/api/v1/query", check=False)
        try:
            return json.loads(r.stdout)["data"]["result"]
        except (ValueError, KeyError):
            return None

    try:
        res, secs = rwtest.wait_for(lambda: query('rocewatch_rdma_port_up{device="rocep1s0f0"}'), 30,
                                    "Prometheus to scrape rocewatchd")
        t.check(res[0]["value"][1] == "1", f"Prometheus sees rail 0 up (after {secs:.1f}s)")
        up = query('up{job="rocewatch"}')
        t.check(up and up[0]["value"][1] == "1", "Prometheus marks the target up")
        firing = query('rocewatch_alert_active{rule="peermem_missing",state="firing"}')
        t.check(firing and firing[0]["value"][1] == "1", "Prometheus sees the firing alert")
        gid = query('rocewatch_rdma_port_roce_v2_gid_index{device="rocep1s0f1"}')
        t.check(gid and gid[0]["value"][1] == "3", "Prometheus sees the chosen GID index")
    finally:
        prom.terminate()
        prom.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
