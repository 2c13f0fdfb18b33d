#!/usr/bin/env python3
"""End to end: the real rocewatchd's HTTP front end under hundreds of slow and idle connections
(/metrics must stay fast), keep-alive with every request gated, gzip, and what reaches the log."""
import gzip
import http.client
import os
import re
import selectors
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

SOURCES = 20  # attack from 127.0.0.2..21, so the per-source cap (64) is not what saves us


class Attack:
    """Keeps `slow` connections sending one header byte a second and `idle` ones sending
    nothing; each one the server closes is reopened 0.2 s later (a connect flood without
    pause is a different attack, bounded by CPU, not by the front end's design)."""

    def __init__(self, port, slow, idle):
        self.port = port
        self.sel = selectors.DefaultSelector()
        self.stop_flag = threading.Event()
        self.opened = 0
        self.want = [("slow", i) for i in range(slow)] + [("idle", i) for i in range(idle)]
        self.reopen = []  # (when, kind, i)
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, kind, i):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i % SOURCES}", 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", self.port))
        except OSError:
            s.close()
            return
        s.setblocking(False)
        self.opened += 1
        self.sel.register(s, selectors.EVENT_READ, [kind, i, time.monotonic(), 0])

    def run(self):
        for kind, i in self.want:
            self.open(kind, i)
        head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10000
        while not self.stop_flag.is_set():
            for key, _ in self.sel.select(timeout=0.05):
                kind, i = key.data[0], key.data[1]
                self.sel.unregister(key.fileobj)
                key.fileobj.close()  # answered (408/503) or closed: come back
                self.reopen.append((time.monotonic() + 0.2, kind, i))
            now = time.monotonic()
            due = [r for r in self.reopen if r[0] <= now]
            self.reopen = [r for r in self.reopen if r[0] > now]
            for _, kind, i in due:
                self.open(kind, i)
            for key in list(self.sel.get_map().values()):
                d = key.data
                if d[0] == "slow" and now - d[2] >= 1.0:
                    try:
                        key.fileobj.send(head[d[3]:d[3] + 1])
                    except OSError:
                        pass
                    d[2], d[3] = now, d[3] + 1

    def __enter__(self):
        self.thread.start()
        time.sleep(1.5)  # all connections in, the first slow bytes sent
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join()
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


def scrape_under(port, seconds):
    """Scrapes /metrics on fresh connections for `seconds`: (latencies in s, non-200 outcomes)."""
    lat, bad = [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
            r = c.getresponse()
            r.read()
            c.close()
            if r.status != 200:
                bad.append(r.status)
        except OSError as e:
            bad.append(repr(e))
        lat.append(time.monotonic() - t0)
        time.sleep(0.02)
    return lat, bad


def p(lat, q):
    s = sorted(lat)
    return s[min(len(s) - 1, int(q * len(s)))]


def check_attack(t, port, slow, idle, seconds):
    with Attack(port, slow, idle) as a:
        lat, bad = scrape_under(port, seconds)
        opened = a.opened
    what = f"{slow} slow + {idle} idle connections ({opened} opened)"
    t.check(not bad, f"{what}: every /metrics scrape answered 200 ({len(lat)} scrapes, not ok: {bad[:5]})")
    # The bound is for the daemon as it ships. Built with a sanitizer (scripts/sanitize.sh sets
    # ROCEWATCH_SANITIZER) every allocation and access costs several times more, so there the
    # test holds a looser bound: it still fails on a server whose workers wait on slow clients
    # (seconds), not on the instrumentation's overhead.
    bound = 0.500 if os.environ.get("ROCEWATCH_SANITIZER") else 0.100
    if bound != 0.100:
        print(f"under {os.environ['ROCEWATCH_SANITIZER']}: p99 bound {bound * 1000:.0f} ms instead of 100 ms")
    t.check(p(lat, 0.99) < bound, f"{what}: /metrics p99 {p(lat, 0.99) * 1000:.1f} ms < {bound * 1000:.0f} ms "
                                  f"(p50 {p(lat, 0.5) * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms)")


def raw(port, data, linger=2.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=linger)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    s.close()
    return out


def status_lines(out):
    return re.findall(rb"HTTP/1\.1 \d{3} [^\r]*", out)


def check_keep_alive(t, port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    socks = set()
    for path in ("/healthz", "/metrics", "/api/v1/status", "/readyz"):
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        socks.add(id(c.sock))
        t.check(r.status == 200 and r.getheader("Connection", "") != "close",
                f"keep-alive: GET {path} -> {r.status}, connection kept")
    t.check(len(socks) == 1 and c.sock is not None, "keep-alive: four requests on one connection")
    c.close()
    # A bad second request on a kept-alive connection is still judged by the gate.
    out = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nREMOTE_ADDR: 1.1.1.1\r\n\r\n")
    statuses = status_lines(out)
    t.check(statuses == [b"HTTP/1.1 200 OK", b"HTTP/1.1 400 Bad Request"],
            f"pipelined good then spoofed request: {statuses}")
    out = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /api/v1/status HTTP/1.1\r\nHost: x\r\n"
                    b"Authorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n")
    statuses = status_lines(out)
    t.check(statuses == [b"HTTP/1.1 200 OK", b"HTTP/1.1 400 Bad Request"],
            f"second request with two Authorization headers refused: {statuses}")
    # RFC 9112 3.2: an HTTP/1.1 request without Host, or with two, is a 400; HTTP/1.0 needs none.
    for req, want in ((b"GET /healthz HTTP/1.1\r\n\r\n", b"HTTP/1.1 400 Bad Request"),
                      (b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", b"HTTP/1.1 400 Bad Request"),
                      (b"GET /healthz HTTP/1.0\r\n\r\n", b"HTTP/1.1 200 OK")):
        statuses = status_lines(raw(port, req))
        head = req.split(b"\r\n\r\n")[0]
        t.check(statuses == [want], f"{head!r}: {statuses}")


def check_gzip(t, port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
    r = c.getresponse()
    z = r.read()
    c.request("GET", "/metrics")
    plain = c.getresponse().read().decode()
    c.close()
    t.check(r.getheader("Content-Encoding") == "gzip", f"Content-Encoding: {r.getheader('Content-Encoding')}")
    try:
        text = gzip.decompress(z).decode()
    except Exception as e:  # noqa: BLE001: any failure is the finding
        t.check(False, f"gzip body decompresses: {e!r}")
        return
    t.check(text.startswith("# HELP"), "gzip body is compressed exactly once (plain text inside)")
    strip = lambda s: [l for l in s.splitlines() if "rocewatch_http_" not in l]  # noqa: E731
    t.check(strip(text) == strip(plain), "gzip and plain bodies agree (but for the HTTP counters)")
    t.check("rocewatch_http_requests_total" in text, "the per-request tail is in the gzip body")
    r = rwtest.sh("curl", "-sS", "--compressed", f"http://127.0.0.1:{port}/metrics", check=False)
    t.check(r.returncode == 0 and r.stdout.startswith("# HELP"), "curl --compressed reads /metrics")


def check_counted_before_answer(t, port):
    """A client that has its answer finds it counted in /metrics (ApiServerTest.MetricsEndpoint's race)."""
    line = 'rocewatch_http_requests_total{handler="/readyz",code="200"} '
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)

    def counted():
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
        return int(body.split(line)[1].split("\n")[0]) if line in body else 0

    base, misses = counted(), 0
    for i in range(1, 501):
        c.request("GET", "/readyz")
        c.getresponse().read()
        if counted() < base + i:
            misses += 1
    c.close()
    t.check(misses == 0, f"a request is counted before its answer is sent ({misses} of 500 not yet counted)")


def check_log_injection(t, port, log_path):
    raw(port, b"GET /nope%0d%0aFORGED%20line%00 HTTP/1.1\r\nHost: x\r\n\r\n", linger=1.0)
    time.sleep(0.3)
    with open(log_path, errors="replace") as f:
        log = f.read()
    t.check(not any(l.startswith("FORGED") for l in log.splitlines()), "a %0d%0a in the path forges no log line")
    t.check("\\x0d\\x0aFORGED" in log, "the path is logged escaped")


def check_no_tls_libraries(t, pid):
    """A daemon without TLS or basic auth, after all of the above, has not mapped OpenSSL or
    libcrypt (each loaded on first use), nor nettle (no probe token, no data port), libsystemd or
    cpp-httplib (issue 14: PSS)."""
    libs = rwtest.mapped_libraries(pid)
    unwanted = sorted(lib for lib in libs
                      if lib.startswith(("libssl.", "libcrypto.", "libcrypt.", "libnettle.", "libsystemd.", "libcpp-httplib.")))
    t.check(libs and not unwanted,
            f"no OpenSSL, libcrypt, nettle, libsystemd or cpp-httplib mapped without TLS or probing ({unwanted})")


def main():
    rwtest.require_root()
    rwtest.require(shutil.which("curl"), "needs curl")
    t = rwtest.Results()
    fx = rwtest.fixtures()
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write('[daemon]\ninterval = "1s"\n')
    cfg.close()
    port = 9879
    with rwtest.Netns("http") as ns:
        with rwtest.Daemon(netns=ns, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark",
                           config=cfg.name, port=port) as d:
            rwtest.enter_netns(ns)
            check_keep_alive(t, port)
            check_gzip(t, port)
            check_counted_before_answer(t, port)
            check_log_injection(t, port, d.log.name)
            check_attack(t, port, slow=200, idle=300, seconds=12)
            check_attack(t, port, slow=0, idle=800, seconds=6)
            check_no_tls_libraries(t, d.proc.pid)
    os.unlink(cfg.name)
    t.finish()


if __name__ == "__main__":
    main()
