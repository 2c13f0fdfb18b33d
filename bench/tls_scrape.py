#!/usr/bin/env python3
"""What TLS and basic auth cost a Prometheus scrape: two rocewatchd on the same fixture tree,
one plain, one with a web config (TLS, P-256 certificate, basic auth with a cost-10 bcrypt
hash), scraped for /metrics with Accept-Encoding: gzip, interleaved round by round, over a
kept-alive connection (what Prometheus does) and with a new connection per scrape (a
handshake each time). Prints p50/p90 per mode and the TLS/plain ratios.

Usage: bench/tls_scrape.py [--rounds N] [--rocewatchd PATH]
"""
import argparse
import base64
import http.client
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def start(binary, port, work, extra):
    log = open(os.path.join(work, f"d{port}.log"), "w")
    p = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--state-dir", os.path.join(work, f"s{port}"),
                          "--sysfs-root", os.path.join(REPO, "tests/fixtures/sysfs/dgx-spark"),
                          "--procfs-root", os.path.join(REPO, "tests/fixtures/procfs/dgx-spark"), *extra],
                         stdout=log, stderr=subprocess.STDOUT)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--rocewatchd", default=os.path.join(REPO, "build/daemon/rocewatchd"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rw-bench-tls-")
    procs = []
    try:
        run = lambda *c: subprocess.run(c, cwd=work, check=True, capture_output=True)  # noqa: E731
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "k.pem", "-out", "c.pem")
        pw = "bench-password"
        with open(os.path.join(work, "web.yml"), "w") as f:
            f.write(f"tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\nbasic_auth_users:\n"
                    f"  prometheus: '{crypt.crypt(pw, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))}'\n")
        plain_port, tls_port = 19961, 19962
        procs.append(start(a.rocewatchd, plain_port, work, []))
        procs.append(start(a.rocewatchd, tls_port, work, ["--web-config-file", os.path.join(work, "web.yml")]))
        ctx = ssl.create_default_context(cafile=os.path.join(work, "c.pem"))
        auth = {"Authorization": "Basic " + base64.b64encode(f"prometheus:{pw}".encode()).decode(),
                "Accept-Encoding": "gzip"}
        plain_hdr = {"Accept-Encoding": "gzip"}

        def conn(tls):
            return (http.client.HTTPSConnection("127.0.0.1", tls_port, context=ctx, timeout=5) if tls
                    else http.client.HTTPConnection("127.0.0.1", plain_port, timeout=5))

        def scrape(c, tls):
            t0 = time.perf_counter()
            c.request("GET", "/metrics", headers=auth if tls else plain_hdr)
            r = c.getresponse()
            body = r.read()
            if r.status != 200 or not body:
                raise SystemExit(f"scrape failed: {r.status}")
            return time.perf_counter() - t0

        deadline = time.monotonic() + 15
        while True:  # both ready (the TLS one needs the password)
            try:
                c1, c2 = conn(False), conn(True)
                scrape(c1, False)
                scrape(c2, True)
                break
            except (OSError, SystemExit, http.client.HTTPException):
                if time.monotonic() > deadline:
                    raise SystemExit("daemons not ready")
                time.sleep(0.2)
        kept = {False: conn(False), True: conn(True)}
        res = {(m, t): [] for m in ("keep-alive", "new connection") for t in (False, True)}
        for _ in range(a.rounds):
            for tls in (False, True):
                res[("keep-alive", tls)].append(scrape(kept[tls], tls))
                t0 = time.perf_counter()
                c = conn(tls)
                scrape(c, tls)
                c.close()
                res[("new connection", tls)].append(time.perf_counter() - t0)
        print(f"{a.rounds} rounds, /metrics with Accept-Encoding: gzip, dgx-spark fixture, interleaved")
        for mode in ("keep-alive", "new connection"):
            p = {t: (statistics.median(res[(mode, t)]) * 1e3, sorted(res[(mode, t)])[int(0.9 * a.rounds)] * 1e3)
                 for t in (False, True)}
            print(f"{mode:15s} plain p50 {p[False][0]:.3f} ms p90 {p[False][1]:.3f} ms | "
                  f"TLS+basic auth p50 {p[True][0]:.3f} ms p90 {p[True][1]:.3f} ms | ratio p50 {p[True][0] / p[False][0]:.2f}")
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
