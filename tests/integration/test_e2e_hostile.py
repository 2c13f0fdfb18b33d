#!/usr/bin/env python3
"""End to end: the real rocewatchd against what a hostile or broken node holds: a netdev whose
name is not UTF-8, a sysfs tree with thousands of GIDs and a handful of unreadable files, and a
FIFO in place of a counter file. /metrics must stay parseable (promtool) and bounded, the API's
JSON must parse, every read error must be listed and logged once, and no read may keep the
daemon from answering, becoming ready or stopping on SIGTERM."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

BAD_NAME = b"v\xff\xfe"
GIDS = 3000               # populated GIDs on one port: past the per-port cap of 1024 series
BROKEN = [f"bad_{c}" for c in "abcdefg"]  # seven unreadable hw_counters (directories)


def fetch(ns, port, path):
    """(status, body bytes) through curl inside ns; bytes, since a broken body may not be text."""
    r = subprocess.run(["ip", "netns", "exec", ns.name, "curl", "-sS", "--max-time", "3", "-o", "/dev/stdout",
                        "-w", "\n%{http_code}", f"http://127.0.0.1:{port}{path}"], capture_output=True)
    if r.returncode != 0:
        return None, r.stderr
    body, _, code = r.stdout.rpartition(b"\n")
    return int(code), body


def promtool_ok(body):
    r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
    return r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), (r.stdout + r.stderr).decode(errors="replace")


def start(ns, sysfs, port, state, log):
    fx = rwtest.fixtures()
    cfg = os.path.join(state, "rocewatch.toml")
    with open(cfg, "w") as f:
        f.write('[daemon]\ninterval = "1s"\n')
    args = ["ip", "netns", "exec", ns.name, os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd"),
            "--listen", f"127.0.0.1:{port}", "--state-dir", state, "--config", cfg,
            "--sysfs-root", sysfs, "--procfs-root", f"{fx}/procfs/dgx-spark", "--lldpd-socket", ""]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def stop(t, proc, what):
    """SIGTERM must end the daemon within a few seconds; SIGKILL is only the cleanup."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
        t.check(proc.returncode == 0, f"{what}: SIGTERM stops it, exit status 0 (got {proc.returncode})")
    except subprocess.TimeoutExpired:
        t.check(False, f"{what}: SIGTERM stops it within 5 s")
        proc.kill()
        proc.wait()


def ready(t, ns, port, proc, what):
    def is_ready():
        if proc.poll() is not None:
            raise AssertionError(f"rocewatchd exited with {proc.returncode}")
        return fetch(ns, port, "/readyz")[0] == 200
    return t.within(is_ready, 10, f"{what}: /readyz answers 200") is not None


def hostile_tree(work):
    """A copy of the DGX Spark tree with GIDS populated GIDs and seven unreadable counters."""
    tree = os.path.join(work, "sysfs")
    shutil.copytree(f"{rwtest.fixtures()}/sysfs/dgx-spark", tree, symlinks=True)
    port = os.path.join(tree, "class/infiniband/rocep1s0f0/ports/1")
    for i in range(16, 16 + GIDS):
        with open(f"{port}/gids/{i}", "w") as f:
            f.write("0000:0000:0000:0000:0000:ffff:0a%02x:%04x\n" % (i >> 16, i & 0xffff))
        with open(f"{port}/gid_attrs/types/{i}", "w") as f:
            f.write("RoCE v2\n")
        with open(f"{port}/gid_attrs/ndevs/{i}", "w") as f:
            f.write("enp1s0f0np0\n")
    for name in BROKEN:
        os.makedirs(f"{port}/hw_counters/{name}")
    return tree, port


def check_bad_name(t, work):
    """A veth named v\\xff\\xfe: /metrics passes promtool, JSON parses, and the name reads escaped."""
    with rwtest.Netns("utf8") as ns:
        ns.ip("link", "add", os.fsdecode(BAD_NAME), "type", "veth", "peer", "name", "ok0")
        state = tempfile.mkdtemp(prefix="rw-state-", dir=work)
        log = open(os.path.join(work, "utf8.log"), "wb")
        proc = start(ns, f"{rwtest.fixtures()}/sysfs/dgx-spark", 9881, state, log)
        try:
            if not ready(t, ns, 9881, proc, "bad name"):
                return
            code, metrics = fetch(ns, 9881, "/metrics")
            ok, out = promtool_ok(metrics)
            t.check(code == 200 and ok, f"bad name: promtool check metrics passes {out[:300]}")
            t.check(b'netdev="v\\\\xff\\\\xfe"' in metrics, "bad name: the link's series is there, its bytes escaped")
            t.check(b'netdev="ok0"' in metrics, "bad name: the other links' series are there")
            for path in ("/api/v1/interfaces", "/api/v1/status", "/api/v1/devices", "/api/v1/bonds"):
                code, body = fetch(ns, 9881, path)
                try:
                    doc = json.loads(body.decode("utf-8"))
                    t.check(code == 200, f"bad name: GET {path} is 200 and valid UTF-8 JSON")
                except (UnicodeDecodeError, ValueError) as e:
                    t.check(False, f"bad name: GET {path} is valid UTF-8 JSON ({e})")
                    continue
                if path == "/api/v1/interfaces":
                    names = {i["name"] for i in doc["interfaces"]}
                    t.check("v\\xff\\xfe" in names, f"bad name: the interface reads v\\xff\\xfe: {sorted(names)}")
        finally:
            stop(t, proc, "bad name")


def check_hostile_tree(t, work):
    """Thousands of GIDs and seven unreadable files: bounded series, every error listed and logged once."""
    tree, port = hostile_tree(work)
    with rwtest.Netns("gids") as ns:
        state = tempfile.mkdtemp(prefix="rw-state-", dir=work)
        log_path = os.path.join(work, "gids.log")
        log = open(log_path, "wb")
        proc = start(ns, tree, 9882, state, log)
        try:
            if not ready(t, ns, 9882, proc, "hostile tree"):
                return
            time.sleep(2.5)  # a few more cycles: errors must still be logged only once
            code, metrics = fetch(ns, 9882, "/metrics")
            ok, out = promtool_ok(metrics)
            t.check(code == 200 and ok, f"hostile tree: promtool check metrics passes {out[:300]}")
            series = [l for l in metrics.decode().splitlines() if l and not l.startswith("#")]
            gid_series = [l for l in series if l.startswith("rocewatch_rdma_gid_info{") and 'device="rocep1s0f0"' in l]
            t.check(len(gid_series) <= 1024, f"hostile tree: GID series of the port capped: {len(gid_series)}")
            t.check(len(series) < 2500, f"hostile tree: /metrics stays bounded: {len(series)} series for {GIDS} GIDs")
            dropped = [l for l in series if l.startswith("rocewatch_rdma_port_series_dropped{")
                       and 'device="rocep1s0f0"' in l]
            t.check(dropped and float(dropped[0].split()[-1]) > 0, f"hostile tree: what was dropped is counted: {dropped}")

            status = json.loads(fetch(ns, 9882, "/api/v1/status")[1])
            sysfs = next(c for c in status["collectors"] if c["name"] == "sysfs")
            listed = " ".join(sysfs.get("errors") or [])
            missing = [n for n in BROKEN if f"hw_counters/{n}:" not in listed]
            t.check(sysfs["read_errors"] == len(BROKEN) and not missing,
                    f"hostile tree: all {len(BROKEN)} read errors listed with paths in /api/v1/status (missing {missing})")
            log.flush()
            text = open(log_path, "rb").read().decode(errors="replace")
            # The sysfs collector's own lines; the collector_errors alert quotes the first one too.
            skipped = [l for l in text.splitlines() if "value skipped; this file is logged once" in l]
            counts = {n: sum(f"hw_counters/{n}:" in l for l in skipped) for n in BROKEN}
            t.check(all(c == 1 for c in counts.values()), f"hostile tree: each unreadable file logged once: {counts}")
            alerts = json.loads(fetch(ns, 9882, "/api/v1/alerts")[1])["alerts"]
            errs = [a for a in alerts if a["rule"] == "collector_errors" and a["object"] == "sysfs"]
            t.check(errs and errs[0]["details"]["read_errors"] == len(BROKEN),
                    f"hostile tree: collector_errors says {len(BROKEN)} files went unread: {errs}")
        finally:
            stop(t, proc, "hostile tree")


def check_fifo(t, work):
    """A FIFO in place of a counter file: the daemon answers, becomes ready and stops."""
    tree = os.path.join(work, "fifo-sysfs")
    shutil.copytree(f"{rwtest.fixtures()}/sysfs/dgx-spark", tree, symlinks=True)
    fifo = os.path.join(tree, "class/infiniband/rocep1s0f0/ports/1/counters/port_rcv_errors")
    os.unlink(fifo)
    os.mkfifo(fifo)
    with rwtest.Netns("fifo") as ns:
        state = tempfile.mkdtemp(prefix="rw-state-", dir=work)
        proc = start(ns, tree, 9883, state, open(os.path.join(work, "fifo.log"), "wb"))
        try:
            t.within(lambda: fetch(ns, 9883, "/healthz")[0] == 200, 10, "fifo: /healthz answers 200")
            if not ready(t, ns, 9883, proc, "fifo"):
                return
            status = json.loads(fetch(ns, 9883, "/api/v1/status")[1])
            sysfs = next(c for c in status["collectors"] if c["name"] == "sysfs")
            t.check(any("port_rcv_errors: skipped: a FIFO" in e for e in sysfs["errors"]),
                    f"fifo: the FIFO is skipped and named: {sysfs['errors']}")
            dev = json.loads(fetch(ns, 9883, "/api/v1/devices/rocep1s0f0")[1])
            counters = dev["ports"][0]["counters"]
            t.check("port_rcv_errors" not in counters and "port_xmit_data" in counters,
                    "fifo: that counter is absent, its neighbours are read")
        finally:
            t0 = time.monotonic()
            stop(t, proc, "fifo")
            print(f"     (stopped in {time.monotonic() - t0:.2f} s)")


def main():
    rwtest.require_root()
    for tool in ("curl", "promtool"):
        rwtest.require(shutil.which(tool), f"needs {tool}")
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-hostile-")
    try:
        check_bad_name(t, work)
        check_hostile_tree(t, work)
        check_fifo(t, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
