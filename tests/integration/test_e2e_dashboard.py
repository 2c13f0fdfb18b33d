#!/usr/bin/env python3
"""The shipped Grafana dashboard and Prometheus rules against a real Prometheus (there is no
Grafana in Debian 12): two rocewatchd probing each other over one rail (one on the DGX Spark
fixture tree, so the node panels have ports, counters and an alert), scraped by Prometheus
with prometheus/rocewatch-rules.yml loaded; every panel's PromQL, with the dashboard's
variables filled in, must return data through the HTTP API."""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RULES = os.path.join(ROOT, "prometheus", "rocewatch-rules.yml")
GEN = os.path.join(ROOT, "grafana", "gen_dashboard.py")


def config(path, token, extra=""):
    with open(path, "w") as f:
        f.write(f'[daemon]\ninterval = "1s"\n[probes]\ntoken_file = "{token}"\ndata_port = 9880\n'
                '[probes.tcp_lat]\ninterval = "1s"\njitter = "0s"\ncount = 20\ntimeout = "2s"\n'
                '[probes.tcp_bw]\ninterval = "2s"\njitter = "0s"\nduration = "100ms"\n' + extra)


def peer(name, local, remote):
    return (f'[[peers]]\nname = "{name}"\naddress = "{name}"\n'
            f'[[peers.rails]]\nname = "rail0"\nlocal_address = "{local}"\nremote_address = "{remote}"\n')


def main():
    rwtest.require_root()
    for tool in ("curl", "prometheus"):
        rwtest.require(shutil.which(tool), f"needs {tool}")
    t = rwtest.Results()
    fx = rwtest.fixtures()
    work = tempfile.mkdtemp(prefix="rw-dash-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.chmod(token, 0o600)
    port_a, port_b = rwtest.free_port(), rwtest.free_port()
    addr_a, addr_b = "192.168.100.11", "192.168.100.12"
    inst_a, inst_b = f"{addr_a}:{port_a}", f"{addr_b}:{port_b}"
    cfg_a, cfg_b = os.path.join(work, "a.toml"), os.path.join(work, "b.toml")
    config(cfg_a, token, '[expect]\nmtu = 9000\nrails = ["rocep1s0f0", "rocep1s0f1"]\n'
           'ignore_devices = ["roceP2p1s0f0"]\n' + peer(inst_b, addr_a, addr_b))
    config(cfg_b, token, peer(inst_a, addr_b, addr_a))
    queries = [json.loads(line) for line in
               subprocess.run([sys.executable, GEN, "--queries"], capture_output=True, text=True,
                              check=True).stdout.splitlines()]
    t.check(len(queries) >= 15, f"the dashboard has its panels' queries ({len(queries)})")

    with rwtest.Netns("dnode") as node, rwtest.Netns("dpeer") as other:
        rwtest.dgx_spark_links(node, other)
        other.ip("addr", "add", f"{addr_b}/24", "dev", "peer0")
        a = rwtest.Daemon(netns=node, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark", config=cfg_a,
                          port=port_a, extra=("--listen", f"0.0.0.0:{port_a}"))
        b = rwtest.Daemon(netns=other, config=cfg_b, port=port_b, extra=("--listen", f"0.0.0.0:{port_b}"))
        with a, b:
            with open(f"{work}/prometheus.yml", "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                        f"rule_files: ['{RULES}']\nscrape_configs:\n  - job_name: rocewatch\n"
                        f"    static_configs:\n      - targets: ['{inst_a}', '{inst_b}']\n"
                        "        labels: {rack: r1}\n")
            prom_port = rwtest.free_port()
            log = open(f"{work}/prometheus.log", "w")
            prom = subprocess.Popen(["ip", "netns", "exec", node.name, "prometheus",
                                     f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/data",
                                     f"--web.listen-address=127.0.0.1:{prom_port}"],
                                    stdout=log, stderr=subprocess.STDOUT)

            def query(q):
                r = node.run("curl", "-sS", "--max-time", "3", "--data-urlencode", f"query={q}",
                             f"http://127.0.0.1:{prom_port}/api/v1/query", check=False)
                try:
                    j = json.loads(r.stdout)
                except ValueError:
                    return None
                if j.get("status") != "success":
                    return {"error": j.get("error")}
                return j["data"]["result"]

            try:
                rwtest.wait_for(lambda: query("count(rocewatch:path:up == 1) == 2"), 60,
                                "both probe paths up through the rules' join")
                pending = {}
                for q in queries:
                    expr = (q["expr"].replace("$instance", inst_a).replace("$rail", "rail0")
                            .replace("$__rate_interval", "10s"))
                    pending[q["panel"] + ": " + q["expr"]] = expr
                deadline = time.monotonic() + 60
                results = {}
                while pending and time.monotonic() < deadline:
                    for name, expr in list(pending.items()):
                        res = query(expr)
                        results[name] = res
                        if isinstance(res, list) and res:
                            del pending[name]
                    time.sleep(1)
                for q in queries:
                    name = q["panel"] + ": " + q["expr"]
                    res = results.get(name)
                    t.check(name not in pending, f"{name} returns data"
                            + ("" if name not in pending else f" (got {json.dumps(res)[:200]})"))
                # The daemon's firing alert reaches Prometheus' ALERTS, with the summary naming it.
                fired = query('ALERTS{alertname="RocewatchDaemonAlert",rule="peermem_missing",alertstate="firing"}')
                t.check(bool(fired), "the daemon's firing peermem_missing is forwarded by RocewatchDaemonAlert")
                t.check(not query('ALERTS{alertname=~"Rocewatch.*",alertname!="RocewatchDaemonAlert"}'),
                        "a healthy pair fires no cluster alert")
            finally:
                prom.terminate()
                prom.wait(timeout=10)
    shutil.rmtree(work, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
