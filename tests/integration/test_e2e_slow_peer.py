#!/usr/bin/env python3
"""A slow peer, for real: two rocewatchd in two network namespaces joined by a veth rail, where B
is frozen (SIGSTOP: its kernel still completes TCP handshakes into the listen backlogs, but nothing
answers) or squeezed (a tbf qdisc on the rail). Probes from A must fail with the right reason
within their deadlines and recover, /metrics must stay fast throughout, and a squeezed rail must
give a low but successful bandwidth figure and probe_bandwidth_low."""

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

PORT_A, PORT_B = 19911, 19912
ADDR_A, ADDR_B = "10.77.1.1", "10.77.1.2"
DATA_PORT = 9880
LAT_TIMEOUT = 3.0   # [probes.tcp_lat] timeout: the latency probe's budget
HELLO_DEADLINE = 2.0  # ProbeScheduler::fresh_hello: min(2 s, budget)
BW_DURATION = 4.0   # [probes.tcp_bw] duration
BW_BUDGET = BW_DURATION + 5  # ProbeScheduler::budget_of(tcp_bw)
SLACK = 0.5         # scheduling slack on a shared 2-core machine
FAST = 0.5          # /metrics and /api/v1/status must answer within this during a stall
SHAPED_MBIT = 40    # tbf rate for the squeezed rail
LINK_GBPS = 100     # the fixture's rocep1s0f0 rate
BW_FRACTION = 0.002  # probe_bandwidth_low below 0.2 Gbit/s: veth does far more, tbf far less


def config(path, token_file, peers=""):
    with open(path, "w") as f:
        f.write(f'[daemon]\ninterval = "1s"\n'
                f'[probes]\ntoken_file = "{token_file}"\ndata_port = {DATA_PORT}\nenabled = ["tcp_lat"]\n'
                f'bw_fraction_of_link = {BW_FRACTION}\n'
                # Scheduled probes run once at start, then stay out of the way of the on-demand
                # probes this test times (one worker thread runs both).
                f'[probes.tcp_lat]\ninterval = "1h"\njitter = "0s"\ncount = 200\ntimeout = "{LAT_TIMEOUT:g}s"\n'
                f'[probes.tcp_bw]\ninterval = "1h"\njitter = "0s"\nduration = "{BW_DURATION:g}s"\nstreams = 2\n'
                + peers)


def peer_b():
    return (f'[[peers]]\nname = "node-b"\naddress = "{ADDR_B}:{PORT_B}"\n'
            f'[[peers.rails]]\nname = "rail0"\nlocal_address = "{ADDR_A}"\nremote_address = "{ADDR_B}"\n'
            'local_device = "rocep1s0f0"\n')


# ---------------------------------------------------------------- helpers (this process lives in A's netns)

def http(path, method="GET", body=None, headers=None, timeout=40):
    """(status, body, seconds) for a request to daemon A, made from this process (inside A's netns)."""
    req = urllib.request.Request(f"http://127.0.0.1:{PORT_A}{path}", method=method,
                                 data=body.encode() if body is not None else None, headers=headers or {})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            code, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        code, text = e.code, e.read().decode()
    return code, text, time.monotonic() - t0


class Background(threading.Thread):
    """Runs fn in a thread; .result is its return value (or the exception it raised)."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn = fn
        self.result = None
        self.t0 = time.monotonic()

    def run(self):
        try:
            self.result = self.fn()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            self.result = e


def post_run(token, kind):
    """POST /api/v1/probes/run; (status, result JSON or {}, seconds)."""
    code, text, secs = http("/api/v1/probes/run", "POST", json.dumps({"peer": "node-b", "rail": "rail0", "kind": kind}),
                            {"Authorization": f"Bearer {token}"})
    try:
        res = json.loads(text)
    except ValueError:
        res = {}
    return code, res, secs


TOKEN = ""  # set by main: GET /probe wants the peer token


def blackbox(kind, scrape_timeout):
    code, text, secs = http(f"/probe?target=node-b&module={kind}",
                            headers={"X-Prometheus-Scrape-Timeout-Seconds": str(scrape_timeout),
                                     "Authorization": f"Bearer {TOKEN}"})
    return code, text, secs


def sample(text, name):
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def responsiveness_while(worker, paths=("/metrics", "/api/v1/status"), step=0.05):
    """Requests paths in turn until worker ends; (worst seconds, count, failures)."""
    worst, n, bad = 0.0, 0, []
    while worker.is_alive():
        for p in paths:
            code, _, secs = http(p, timeout=5)
            n += 1
            worst = max(worst, secs)
            if code != 200:
                bad.append(f"{p}: {code}")
        time.sleep(step)
    return worst, n, bad


def thread_states(pid):
    """The state letter of every thread of pid ("T" = stopped)."""
    out = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                out.add(f.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:
            pass
    return out


@contextlib.contextmanager
def frozen(daemon):
    """SIGSTOP the daemon for the block, once every thread of it has stopped; SIGCONT whatever happens."""
    daemon.signal(signal.SIGSTOP)
    try:
        # Group stop reaches each thread asynchronously; under load that takes a moment.
        rwtest.wait_for(lambda: thread_states(daemon.proc.pid) == {"T"}, 2, "every rocewatchd thread to stop")
        yield
    finally:
        daemon.signal(signal.SIGCONT)


def established_to_data_port():
    """Our established TCP connections to B's probe data port: [(send_q, recv_q)]."""
    r = subprocess.run(["ss", "-Htn", "state", "established", "dst", ADDR_B, "dport", "=", f":{DATA_PORT}"],
                       capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].isdigit():
            out.append((int(f[1]), int(f[0])))
    return out


# ---------------------------------------------------------------- the cases

def case_frozen_latency(t, a, b, token):
    code, res, secs = post_run(token, "tcp_lat")
    t.check(code == 200 and res.get("success") is True, f"warm-up: tcp_lat to node-b succeeds ({code}, {secs:.2f} s)")

    with frozen(b):
        t.check(thread_states(b.proc.pid) == {"T"}, "every thread of node-b's rocewatchd is stopped (state T)")
        # Hello cached: straight to the data port, whose backlog accepts the connection but whose
        # server never answers the handshake.
        w = Background(lambda: post_run(token, "tcp_lat"))
        w.start()
        worst, n, bad = responsiveness_while(w)
        w.join()
        code, res, secs = w.result if not isinstance(w.result, Exception) else (0, {}, 0)
        dur = res.get("duration_seconds") or 0
        t.check(code == 200 and res.get("success") is False and res.get("reason") == "timeout",
                f"frozen peer: POST tcp_lat fails with timeout ({code}, {res.get('reason')}: {res.get('detail')})")
        t.check("no answer before the deadline" in (res.get("detail") or ""),
                "the detail says the data port never answered")
        t.check(LAT_TIMEOUT - 0.2 <= dur <= LAT_TIMEOUT + SLACK,
                f"it took the latency budget ({dur:.2f} s, budget {LAT_TIMEOUT:g} s)")
        t.check(secs <= LAT_TIMEOUT + SLACK, f"POST answered by the deadline ({secs:.2f} s)")
        t.check(worst < FAST and not bad,
                f"/metrics and /api/v1/status stay fast during the stall ({worst * 1000:.0f} ms worst of {n}) {bad}")

        # The timeout dropped the cached hello; /probe asks again and the hello times out (2 s).
        code, text, secs = blackbox("tcp_lat", 5)
        pd = sample(text, "probe_duration_seconds")
        t.check(code == 200 and sample(text, "probe_success") == 0 and 'probe_failure_info{reason="timeout"} 1' in text,
                f"frozen peer: /probe tcp_lat gives probe_success 0, reason timeout ({code})")
        t.check(pd is not None and HELLO_DEADLINE - 0.2 <= pd <= HELLO_DEADLINE + SLACK,
                f"the hello gave up at its 2 s deadline (probe_duration_seconds {pd})")
        t.check(secs < 5 - 0.5, f"/probe answered within the scrape timeout ({secs:.2f} s of 5 s)")
        def latest_detail():
            latest = [p["latest"] for p in a.json("/api/v1/probes")["probes"] if p["kind"] == "tcp_lat"]
            return (latest[0].get("detail") or "") if latest else ""
        t.within(lambda: "hello to node-b" in latest_detail() and "timeout" in latest_detail(), 2,
                 "the stored result blames the hello's timeout")
        print(f"     detail: {latest_detail()}")

        # A scrape timeout shorter than the hello's 2 s: /probe must still answer in time.
        code, text, secs = blackbox("tcp_lat", 1.5)
        t.check(code == 200 and sample(text, "probe_success") == 0 and 'reason="timeout"' in text,
                f"frozen peer, 1.5 s scrape timeout: probe_success 0, reason timeout ({code})")
        t.check(secs < 1.5, f"/probe answered within the 1.5 s scrape timeout ({secs:.2f} s)")
        # The worker may still be on that hello (it does not honour the job's deadline); let it end.
        time.sleep(HELLO_DEADLINE)
        latest = [p["latest"] for p in a.json("/api/v1/probes")["probes"] if p["kind"] == "tcp_lat"]
        if latest:
            print(f"     note: the scheduler's own result for that /probe took {latest[0]['duration_seconds']:.2f} s "
                  f"(job deadline 1.0 s): {latest[0].get('detail')}")

    t.check("T" not in thread_states(b.proc.pid), "node-b's rocewatchd runs again")
    code, res, secs = post_run(token, "tcp_lat")
    t.check(code == 200 and res.get("success") is True,
            f"after SIGCONT the next tcp_lat succeeds ({code}, {res.get('reason')}, {secs:.2f} s)")
    code, text, secs = blackbox("tcp_lat", 5)
    t.check(code == 200 and sample(text, "probe_success") == 1, f"and /probe succeeds again ({secs:.2f} s)")
    def hello_b():
        return {p["name"]: p for p in a.json("/api/v1/probes")["peers"]}.get("node-b", {})
    t.within(lambda: hello_b().get("hello_ok") is True, 2, "/api/v1/probes shows node-b's hello good again")
    print(f"     hello: {hello_b()}")


def case_stall_mid_bandwidth(t, a, b, token):
    w = Background(lambda: post_run(token, "tcp_bw"))
    w.start()
    # Wait until both streams are connected and carrying data, then let them run a while.
    try:
        conns, waited = rwtest.wait_for(lambda: (lambda c: c if len(c) == 2 else None)(established_to_data_port()),
                                        5, "two bandwidth streams to node-b")
    except AssertionError:
        conns, waited = None, 0
    t.check(conns is not None, f"two bandwidth streams are up ({waited * 1000:.0f} ms after the POST)")
    time.sleep(1.0)
    stopped_at = time.monotonic() - w.t0
    with frozen(b):
        time.sleep(0.3)
        queued = established_to_data_port()
        t.check(len(queued) == 2 and any(sq > 0 for sq, _ in queued),
                f"frozen mid-transfer at {stopped_at:.1f} s: data still queued towards node-b (send-q {queued})")
        worst, n, bad = responsiveness_while(w)
        w.join()
    code, res, secs = w.result if not isinstance(w.result, Exception) else (0, {}, 0)
    dur = res.get("duration_seconds") or 0
    t.check(code == 200 and res.get("success") is False and res.get("reason") == "timeout",
            f"stalled peer: POST tcp_bw fails with timeout ({code}, {res.get('reason')}: {res.get('detail')})")
    t.check("sent no report before the deadline" in (res.get("detail") or ""),
            "the detail says the peer sent no report")
    t.check("the peer stopped reading" in (res.get("detail") or ""),
            "the detail says when the peer stopped reading")
    t.check(int((res.get("info") or {}).get("sent_bytes", "0")) > 0,
            f"a failed run still says how much it sent ({(res.get('info') or {}).get('sent_bytes')} bytes)")
    t.check(dur <= BW_BUDGET + SLACK, f"within the bandwidth budget ({dur:.2f} s, budget {BW_BUDGET:g} s)")
    t.check(secs <= BW_BUDGET + SLACK, f"POST answered by the deadline ({secs:.2f} s)")
    t.check(worst < FAST and not bad,
            f"/metrics and /api/v1/status stay fast during the stall ({worst * 1000:.0f} ms worst of {n}) {bad}")

    # Resumed: the stale sessions are cut on B's side and the next run succeeds.
    code, res, secs = post_run(token, "tcp_bw")
    bps = (res.get("bandwidth_bytes_per_second") or 0) * 8
    t.check(code == 200 and res.get("success") is True,
            f"after SIGCONT the next tcp_bw succeeds ({res.get('reason')}: {res.get('detail')}, {bps / 1e9:.2f} Gbit/s)")
    return bps


def case_squeezed_rail(t, a, na, token, unshaped_bps):
    want = LINK_GBPS * 1e9 * BW_FRACTION
    t.check(unshaped_bps > want, f"unshaped veth is above the alert line ({unshaped_bps / 1e9:.2f} > {want / 1e9:.2f} Gbit/s)")
    t.check(("probe_bandwidth_low", "node-b/rail0:tcp_bw") not in a.alerts(), "no probe_bandwidth_low unshaped")
    # Data goes A -> B: shape A's end of the rail.
    na.run("tc", "qdisc", "add", "dev", "rail0a", "root", "tbf", "rate", f"{SHAPED_MBIT}mbit", "burst", "64kb",
           "latency", "100ms")
    try:
        w = Background(lambda: post_run(token, "tcp_bw"))
        w.start()
        worst, n, bad = responsiveness_while(w, paths=("/metrics",))
        w.join()
        code, res, secs = w.result if not isinstance(w.result, Exception) else (0, {}, 0)
        bps = (res.get("bandwidth_bytes_per_second") or 0) * 8
        t.check(code == 200 and res.get("success") is True,
                f"squeezed rail: tcp_bw still succeeds ({res.get('reason')}: {res.get('detail')}, {secs:.2f} s)")
        t.check(0.5 * SHAPED_MBIT * 1e6 <= bps <= 1.2 * SHAPED_MBIT * 1e6,
                f"and measures the squeeze ({bps / 1e6:.1f} Mbit/s through a {SHAPED_MBIT} Mbit/s tbf)")
        t.check(worst < FAST and not bad, f"/metrics stays fast ({worst * 1000:.0f} ms worst of {n}) {bad}")
        t.within(lambda: a.alerts().get(("probe_bandwidth_low", "node-b/rail0:tcp_bw")), 5,
                 "probe_bandwidth_low fires for node-b/rail0:tcp_bw")
        alert = a.alerts().get(("probe_bandwidth_low", "node-b/rail0:tcp_bw")) or {}
        t.check(alert.get("state") == "firing" and alert.get("severity") == "warning",
                f"as a firing warning ({alert.get('state')}, {alert.get('severity')}): {alert.get('summary')}")
    finally:
        na.run("tc", "qdisc", "del", "dev", "rail0a", "root", check=False)


def main():
    rwtest.require_root()
    for tool in ("curl", "ss", "tc"):
        rwtest.require(shutil.which(tool), f"needs {tool}")
    t = rwtest.Results()
    fx = rwtest.fixtures()
    work = tempfile.mkdtemp(prefix="rw-slow-")
    token_file = os.path.join(work, "token")
    token = secrets.token_hex(32)
    global TOKEN
    TOKEN = token
    with open(token_file, "w") as f:
        f.write(token + "\n")
    os.chmod(token_file, 0o600)
    t_start = time.monotonic()
    try:
        with rwtest.Netns("sa") as na, rwtest.Netns("sb") as nb:
            na.ip("link", "add", "rail0a", "type", "veth", "peer", "name", "rail0b", "netns", nb.name)
            na.ip("addr", "add", f"{ADDR_A}/24", "dev", "rail0a")
            nb.ip("addr", "add", f"{ADDR_B}/24", "dev", "rail0b")
            na.ip("link", "set", "rail0a", "up")
            nb.ip("link", "set", "rail0b", "up")
            # tbf must exist for case 3 (checked now, so a missing module skips before anything runs).
            r = na.run("tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "1mbit", "burst", "32kbit",
                       "latency", "400ms", check=False)
            have_tbf = r.returncode == 0
            na.run("tc", "qdisc", "del", "dev", "lo", "root", check=False)
            rwtest.enter_netns(na)  # urllib and ss from here on run in A's namespace

            cfg_a, cfg_b = os.path.join(work, "a.toml"), os.path.join(work, "b.toml")
            config(cfg_a, token_file, peer_b())
            config(cfg_b, token_file)
            b = rwtest.Daemon(netns=nb, config=cfg_b, port=PORT_B, extra=("--listen", f"0.0.0.0:{PORT_B}"))
            # A sees the DGX Spark fixture's RDMA devices, so its rail has a link rate to judge against.
            a = rwtest.Daemon(netns=na, config=cfg_a, port=PORT_A, sysfs=f"{fx}/sysfs/dgx-spark",
                              procfs=f"{fx}/procfs/dgx-spark", extra=("--listen", f"0.0.0.0:{PORT_A}"))
            with b, a:
                try:
                    t.check(os.path.basename(os.readlink(f"/proc/{b.proc.pid}/exe")) == "rocewatchd",
                            "the signalled process is rocewatchd itself")
                    case_frozen_latency(t, a, b, token)
                    unshaped = case_stall_mid_bandwidth(t, a, b, token)
                    if have_tbf:
                        case_squeezed_rail(t, a, na, token, unshaped)
                    else:
                        print("skip squeezed rail: no sch_tbf on this kernel")
                finally:
                    # Whatever failed: nothing is left stopped, so the daemons stop on SIGTERM.
                    for d in (b, a):
                        if d.proc and d.proc.poll() is None:
                            d.signal(signal.SIGCONT)
                if t.failed:
                    a.dump_log()
                    b.dump_log()
                for name, d in (("node-a", a), ("node-b", b)):
                    t.check(d.stop() == 0, f"{name} stops cleanly on SIGTERM")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.monotonic() - t_start:.1f} s")
    t.finish()


if __name__ == "__main__":
    main()
