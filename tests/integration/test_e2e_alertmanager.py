#!/usr/bin/env python3
"""End to end, rocewatchd -> Debian's Alertmanager -> a webhook: an alert that fires reaches the
webhook with its summary and action, and a second Alertmanager served over TLS (https://,
ca_file); its resolution follows; a restarted Alertmanager (state lost)
gets every alert again; while Alertmanager is down the daemon serves and collects as before, counts
the failures, and catches up once Alertmanager is back."""
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

AM_BIN = "prometheus-alertmanager"  # Debian's name for alertmanager

CONFIG = """
[daemon]
interval = "1s"
[expect]
rails = ["rocep1s0f0", "rocep1s0f1"]
ignore_devices = ["roceP2p1s0f0"]
[rules.peermem_missing]
enabled = false
[rules.mtu_low]
for = "1s"
clear_after = "1s"
[alertmanager]
urls = ["http://127.0.0.1:{am_port}", "https://127.0.0.1:{am_tls_port}"]
ca_file = "{ca_file}"
resend_interval = "2s"
timeout = "1s"
"""

# Every alert its own group, notified within a second of arriving or changing.
AM_CONFIG = """
route:
  receiver: hook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:{hook_port}/
        send_resolved: true
"""


class Webhook:
    """Records every notification Alertmanager POSTs."""

    def __init__(self):
        self.posts = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer.lock:
                    outer.posts.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self, obj, status):
        """Every notified alert of mtu_low on obj with that status ("firing" or "resolved")."""
        with self.lock:
            return [a for p in self.posts for a in p["alerts"]
                    if a["labels"].get("rule") == "mtu_low" and a["labels"].get("object") == obj
                    and a["status"] == status]


# The Alertmanager behind TLS only keeps alerts (its API shows them); the webhook is the other's.
AM_TLS_CONFIG = """
route:
  receiver: keep
receivers:
  - name: keep
"""


class Alertmanager:
    """One Alertmanager process on a fresh storage directory (a restart loses all state); with
    `tls` (certificate, key) it serves HTTPS through its --web.config.file."""

    def __init__(self, work, port, name="alertmanager", tls=None):
        self.work, self.port, self.name, self.tls = work, port, name, tls
        self.scheme = "https" if tls else "http"
        self.ctx = ssl.create_default_context(cafile=tls[0]) if tls else None
        self.proc = None

    def start(self):
        self.data = tempfile.mkdtemp(prefix="am-data-", dir=self.work)
        self.log = open(os.path.join(self.work, f"{self.name}.log"), "a")
        args = [AM_BIN, f"--config.file={self.work}/{self.name}.yml", f"--storage.path={self.data}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address="]
        if self.tls:
            web = os.path.join(self.work, f"{self.name}-web.yml")
            with open(web, "w") as f:
                f.write(f"tls_server_config:\n  cert_file: {self.tls[0]}\n  key_file: {self.tls[1]}\n")
            args.append(f"--web.config.file={web}")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        rwtest.wait_for(lambda: self.ready(), 20, "Alertmanager to be ready", step=0.1)

    def ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"Alertmanager exited with {self.proc.returncode}: {self.tail()}")
        try:
            with urllib.request.urlopen(f"{self.scheme}://127.0.0.1:{self.port}/-/ready", timeout=1,
                                        context=self.ctx) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def active(self, obj):
        """The active mtu_low alert on obj in Alertmanager's own API, or None."""
        url = f"{self.scheme}://127.0.0.1:{self.port}/api/v2/alerts?active=true&silenced=false&inhibited=false"
        try:
            with urllib.request.urlopen(url, timeout=2, context=self.ctx) as r:
                alerts = json.load(r)
        except OSError:
            return None
        for a in alerts:
            if a["labels"].get("rule") == "mtu_low" and a["labels"].get("object") == obj:
                return a
        return None

    def tail(self):
        with open(os.path.join(self.work, f"{self.name}.log")) as f:
            return f.read()[-3000:]


def metric(d, name):
    """Sum of one family's samples in /metrics (0 when absent)."""
    total = 0.0
    for line in d.get("/metrics")[1].splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def main():
    rwtest.require_root()
    rwtest.require(shutil.which(AM_BIN) is not None, f"needs {AM_BIN} (apt install prometheus-alertmanager)")
    rwtest.require(shutil.which("openssl") is not None, "needs openssl (the TLS Alertmanager's certificate)")
    t = rwtest.Results()
    fx = rwtest.fixtures()
    with open(f"{fx}/procfs/dgx-spark/sys/kernel/hostname") as f:
        hostname = f.read().strip()
    work = tempfile.mkdtemp(prefix="rw-am-")
    am = am_tls = None
    try:
        with rwtest.Netns("amnode") as node, rwtest.Netns("ampeer") as peer:
            rwtest.dgx_spark_links(node, peer)
            # This process, the webhook, Alertmanager and the daemon share the node's namespace:
            # every port below is on its own loopback.
            rwtest.enter_netns(node)
            hook = Webhook()
            am_port, am_tls_port = rwtest.free_port(), rwtest.free_port()
            with open(f"{work}/alertmanager.yml", "w") as f:
                f.write(AM_CONFIG.format(hook_port=hook.port))
            with open(f"{work}/alertmanager-tls.yml", "w") as f:
                f.write(AM_TLS_CONFIG)
            # A self-signed certificate for 127.0.0.1: its own CA, the daemon's ca_file.
            crt, key = f"{work}/am.crt", f"{work}/am.key"
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", key, "-out", crt], check=True, capture_output=True)
            with open(f"{work}/rocewatch.toml", "w") as f:
                f.write(CONFIG.format(am_port=am_port, am_tls_port=am_tls_port, ca_file=crt))
            am = Alertmanager(work, am_port)
            am.start()
            am_tls = Alertmanager(work, am_tls_port, "alertmanager-tls", tls=(crt, key))
            am_tls.start()
            port = rwtest.free_port()
            with rwtest.Daemon(sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark",
                               config=f"{work}/rocewatch.toml", port=port) as d:
                run(t, d, node, am, am_tls, hook, hostname, port)
    finally:
        for a in (am, am_tls):
            if a:
                a.stop()
        shutil.rmtree(work, ignore_errors=True)
    t.finish()


def run(t, d, node, am, am_tls, hook, hostname, port):
    rail0, rail1 = "enp1s0f0np0", "enp1s0f1np1"
    t.check(d.alerts() == {}, f"healthy node: no alerts ({sorted(d.alerts())})")

    # Fires: the webhook gets it with what the REST API says.
    node.ip("link", "set", rail1, "mtu", "1500")
    t.within(lambda: d.alerts().get(("mtu_low", rail1), {}).get("state") == "firing", 10, "mtu_low fires")
    t.within(lambda: hook.alerts(rail1, "firing"), 15, "the firing alert reaches the webhook")
    t.within(lambda: am_tls.active(rail1), 15,
             "the firing alert reaches the Alertmanager behind TLS (https://, its CA as ca_file)")
    rest = d.alerts().get(("mtu_low", rail1), {})
    got = (hook.alerts(rail1, "firing") or [{}])[0]
    labels, ann = got.get("labels", {}), got.get("annotations", {})
    t.check(labels.get("alertname") == "rocewatch_mtu_low" and labels.get("severity") == rest.get("severity")
            and labels.get("node") == hostname, f"labels alertname, severity, node ({labels})")
    t.check(ann.get("summary") == rest.get("summary") and ann.get("summary"), f"summary arrives ({ann.get('summary')!r})")
    t.check(ann.get("action") == rest.get("action") and ann.get("action"), f"action arrives ({ann.get('action')!r})")
    t.check("actual_mtu=1500" in ann.get("details", ""), f"details arrive as text ({ann.get('details')!r})")
    gen = got.get("generatorURL", "")
    t.check(gen.startswith(f"http://127.0.0.1:{port}/api/v1/alerts?rule=mtu_low"),
            f"generatorURL points at the daemon ({gen})")
    try:
        with urllib.request.urlopen(gen, timeout=5) as r:
            t.check(r.status == 200, "generatorURL answers")
    except OSError as e:
        t.check(False, f"generatorURL answers ({e})")

    # Resolves: the resolution reaches the webhook too.
    node.ip("link", "set", rail1, "mtu", "9000")
    t.within(lambda: ("mtu_low", rail1) not in d.alerts(), 10, "mtu_low resolves in the daemon")
    t.within(lambda: hook.alerts(rail1, "resolved"), 15, "the resolution reaches the webhook")

    # Alertmanager restarted with its state lost: the daemon's resends bring the alert back.
    node.ip("link", "set", rail0, "mtu", "1500")
    t.within(lambda: am.active(rail0), 15, "a second alert is active in Alertmanager")
    am.stop()
    am.start()
    t.within(lambda: am.active(rail0), 10, "after the restart the alert is re-sent and active again")

    # Alertmanager down: serving and collecting go on, failures are counted.
    am.stop()
    errors0 = metric(d, "rocewatch_alertmanager_errors_total")
    gen0 = d.json("/api/v1/status").get("generation")
    t.within(lambda: metric(d, "rocewatch_alertmanager_errors_total") > errors0, 15,
             "the errors counter rises while Alertmanager is down")
    worst = 0.0
    for _ in range(20):
        t0 = time.monotonic()
        code, _ = d.get("/metrics")
        worst = max(worst, time.monotonic() - t0)
        assert code == 200
        time.sleep(0.05)
    t.check(worst < 1.0, f"/metrics answers while Alertmanager is down (slowest of 20: {worst * 1000:.0f} ms)")
    t.within(lambda: (d.json("/api/v1/status").get("generation") or 0) >= (gen0 or 0) + 3, 10,
             "collection continues while Alertmanager is down")
    # What changes meanwhile: rail0 resolves, rail1 fires.
    node.ip("link", "set", rail0, "mtu", "9000")
    node.ip("link", "set", rail1, "mtu", "1500")
    t.within(lambda: d.alerts().get(("mtu_low", rail1), {}).get("state") == "firing"
             and ("mtu_low", rail0) not in d.alerts(), 10, "the daemon judges the changes while Alertmanager is down")
    firing_before = len(hook.alerts(rail1, "firing"))
    sent0 = metric(d, "rocewatch_alertmanager_notifications_total")

    # Back: the daemon catches up.
    am.start()
    t.within(lambda: am.active(rail1), 15, "after the outage the new alert reaches Alertmanager")
    t.within(lambda: len(hook.alerts(rail1, "firing")) > firing_before, 15, "... and the webhook")
    t.check(am.active(rail0) is None, "the alert that resolved during the outage is not active in Alertmanager")
    t.within(lambda: metric(d, "rocewatch_alertmanager_notifications_total") > sent0, 10,
             "the notifications counter rises again")
    t.check(metric(d, "rocewatch_alertmanager_queue_length") < 100, "the queue drains")


if __name__ == "__main__":
    main()
