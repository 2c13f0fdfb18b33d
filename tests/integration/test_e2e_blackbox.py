#!/usr/bin/env python3
"""End to end: GET /probe as blackbox_exporter users expect, with a real Prometheus scraping the
standard multi-target job shape (one daemon probing two peers, both scraped through its /probe).

Node A probes node-b and node-c over TCP (a veth to each, in three network namespaces). Checked:
two concurrent scrapes both get probe_success 1 (the second waits, no 429); an unknown target is
200 with probe_success 0 and reason unknown_target; a kind not in probes.enabled is 400; /probe and
POST /api/v1/probes/run want the peer token (bearer, or basic auth's password); and Prometheus'
job over both peers records up == 1 and probe_success == 1 for every scrape."""
import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402


def config(path, token_file, peers=""):
    # count: a latency probe of a few thousand round trips takes a good fraction of a second
    # on a veth, so two scrapes sent together overlap for sure.
    with open(path, "w") as f:
        f.write(f'[daemon]\ninterval = "1s"\n[probes]\ntoken_file = "{token_file}"\ndata_port = 9880\n'
                'enabled = ["tcp_lat"]\nlatency_threshold = "5s"\n'
                '[probes.tcp_lat]\ninterval = "1h"\njitter = "0s"\ncount = 2000\ntimeout = "8s"\n' + peers)


peer = rwtest.peer_toml


def get(port, path, headers=None, timeout=20):
    """(status, body, seconds) from inside A's namespace (this process entered it)."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            code, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        code, text = e.code, e.read().decode()
    return code, text, time.monotonic() - t0


def main():
    rwtest.require_root()
    rwtest.require(shutil.which("prometheus"), "needs Debian's prometheus")
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-blackbox-")
    token_file = os.path.join(work, "token")
    token = secrets.token_hex(32)
    with open(token_file, "w") as f:
        f.write(token + "\n")
    os.chmod(token_file, 0o600)
    bearer = {"Authorization": f"Bearer {token}"}
    port_a, port_b, port_c, port_prom = (rwtest.free_port() for _ in range(4))

    with rwtest.Netns("ba") as na, rwtest.Netns("bb") as nb, rwtest.Netns("bc") as nc:
        for far, net, local_if in ((nb, "10.81", "ra-b"), (nc, "10.82", "ra-c")):
            na.ip("link", "add", local_if, "type", "veth", "peer", "name", "rail0", "netns", far.name)
            na.ip("addr", "add", f"{net}.0.1/24", "dev", local_if)
            far.ip("addr", "add", f"{net}.0.2/24", "dev", "rail0")
            na.ip("link", "set", local_if, "up")
            far.ip("link", "set", "rail0", "up")
        time.sleep(0.5)
        cfg_a, cfg_b, cfg_c = (os.path.join(work, n) for n in ("a.toml", "b.toml", "c.toml"))
        config(cfg_a, token_file, peer("node-b", f"10.81.0.2:{port_b}", "10.81.0.1", "10.81.0.2") +
               peer("node-c", f"10.82.0.2:{port_c}", "10.82.0.1", "10.82.0.2"))
        config(cfg_b, token_file)
        config(cfg_c, token_file)
        b = rwtest.Daemon(netns=nb, config=cfg_b, port=port_b, extra=("--listen", f"0.0.0.0:{port_b}"))
        c = rwtest.Daemon(netns=nc, config=cfg_c, port=port_c, extra=("--listen", f"0.0.0.0:{port_c}"))
        a = rwtest.Daemon(netns=na, config=cfg_a, port=port_a, extra=("--listen", f"127.0.0.1:{port_a}"))
        prom = None
        with b, c, a:
            rwtest.enter_netns(na)
            # Authentication: the peer token, as bearer or as basic auth's password.
            code, _, _ = get(port_a, "/probe?target=node-b&module=tcp_lat")
            t.check(code == 401, f"/probe without credentials is 401 ({code})")
            code, _, _ = get(port_a, "/probe?target=node-b&module=tcp_lat", {"Authorization": "Bearer nope"})
            t.check(code == 401, f"/probe with a wrong token is 401 ({code})")
            basic = base64.b64encode(f"prometheus:{token}".encode()).decode()
            code, body, _ = get(port_a, "/probe?target=node-b&module=tcp_lat", {"Authorization": f"Basic {basic}"})
            t.check(code == 200 and "probe_success 1" in body, f"/probe with basic auth succeeds ({code})")
            req = urllib.request.Request(f"http://127.0.0.1:{port_a}/api/v1/probes/run", method="POST",
                                         data=b'{"peer": "node-c", "rail": "rail0", "kind": "tcp_lat"}')
            try:
                urllib.request.urlopen(req, timeout=20)
                code = 200
            except urllib.error.HTTPError as e:
                code = e.code
            t.check(code == 401, f"POST /api/v1/probes/run without credentials is 401 ({code})")

            # blackbox_exporter's answers: unknown target 200 + probe_success 0, unknown module 400.
            code, body, _ = get(port_a, "/probe?target=nobody&module=tcp_lat", bearer)
            t.check(code == 200 and "probe_success 0" in body and 'probe_failure_info{reason="unknown_target"} 1' in body,
                    f"an unknown target is 200 with probe_success 0, reason unknown_target ({code})")
            code, body, _ = get(port_a, "/probe?target=node-b&module=tcp_bw", bearer)
            t.check(code == 400 and "probes.enabled" in body, f"tcp_bw, not enabled, is not run: 400 ({code})")

            # Two scrapes at once: the second waits for the first, both succeed.
            results = {}

            def scrape(target):
                results[target] = get(port_a, f"/probe?target={target}&module=tcp_lat",
                                      {**bearer, "X-Prometheus-Scrape-Timeout-Seconds": "15"})
            threads = [threading.Thread(target=scrape, args=(n,)) for n in ("node-b", "node-c")]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            for n, (code, body, secs) in sorted(results.items()):
                t.check(code == 200 and "probe_success 1" in body,
                        f"concurrent /probe of {n}: 200, probe_success 1 ({code}, {secs:.2f} s)")
            secs = sorted(r[2] for r in results.values())
            print(f"     the two concurrent scrapes took {secs[0]:.2f} s and {secs[1]:.2f} s")

            # A real Prometheus, the standard multi-target job over both peers.
            prom_yml = os.path.join(work, "prometheus.yml")
            with open(prom_yml, "w") as f:
                f.write(f"""global:
  scrape_interval: 4s
  scrape_timeout: 4s
scrape_configs:
  - job_name: rocewatch_probe
    metrics_path: /probe
    params:
      module: [tcp_lat]
    authorization:
      credentials_file: {token_file}
    static_configs:
      - targets: [node-b, node-c]
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: instance
      - target_label: __address__
        replacement: 127.0.0.1:{port_a}
""")
            prom = subprocess.Popen(["prometheus", f"--config.file={prom_yml}", f"--storage.tsdb.path={work}/tsdb",
                                     f"--web.listen-address=127.0.0.1:{port_prom}"],
                                    stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prom.log"), "w"))
            try:
                def query(q):
                    try:  # refused until Prometheus listens
                        code, body, _ = get(port_prom, "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
                    except OSError:
                        return {}
                    if code != 200:
                        return {}
                    return {r["metric"].get("instance", ""): float(r["value"][1])
                            for r in json.loads(body)["data"]["result"]}
                # Both targets scraped at least 4 times (16 s of 4 s scrapes).
                t.within(lambda: (lambda v: len(v) == 2 and min(v.values()) >= 4)(
                    query('count_over_time(up{job="rocewatch_probe"}[1m])')), 60,
                    "Prometheus scraped both peers through /probe at least 4 times each")
                ups = query('min_over_time(up{job="rocewatch_probe"}[1m])')
                t.check(ups == {"node-b": 1.0, "node-c": 1.0}, f"up was 1 in every scrape of both peers ({ups})")
                oks = query('min_over_time(probe_success{job="rocewatch_probe"}[1m])')
                t.check(oks == {"node-b": 1.0, "node-c": 1.0}, f"probe_success was 1 in every scrape ({oks})")
            finally:
                prom.terminate()
                prom.wait(timeout=10)
    shutil.rmtree(work, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
