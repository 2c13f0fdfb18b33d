#!/usr/bin/env python3
"""Two rocewatchd in two network namespaces joined by a veth pair (one rail), probing each other
over TCP: figures, /probe, metrics, a wrong token, a killed peer and a blackholed address."""

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402


def config(path, token_file, data_port, peers=""):
    with open(path, "w") as f:
        f.write(f'[daemon]\ninterval = "1s"\n[probes]\ntoken_file = "{token_file}"\ndata_port = {data_port}\n'
                'latency_threshold = "1s"\n'
                '[probes.tcp_lat]\ninterval = "1s"\njitter = "0s"\ncount = 200\ntimeout = "3s"\n'
                '[probes.tcp_bw]\ninterval = "2s"\njitter = "0s"\nduration = "500ms"\nstreams = 2\n'
                '[rules.peer_unreachable]\nclear_after = "2s"\n' + peers)


peer = rwtest.peer_toml


latest = rwtest.latest_probe


# A client of the data port written from the wire format (probes/tcp_wire.hpp) with Python's
# own hmac, run inside a namespace: what B answers a request whose mac is right (a grant, or
# busy while A's own probe holds the sessions), the same bytes again on a new connection (a
# replay), and one carrying the token itself, as data port version 1 sent it.
DATA_PORT_CLIENT = r"""
import hashlib, hmac, json, socket, struct, sys, time
host, port, token = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])

def challenge(s):
    c = b""
    while len(c) < 24:
        got = s.recv(24 - len(c))
        if not got:
            raise SystemExit("closed before the challenge")
        c += got
    magic, version = struct.unpack(">IH", c[:6])
    return magic, version, c[8:24]

def request(mac):
    return struct.pack(">IHBBIIQ", 0x52575051, 2, 1, 0, 0, 100, 1000) + mac + bytes(8)

def answer(s):
    r = s.recv(24)
    return r[6] if len(r) == 24 and r[:4] == b"RWPA" else None

out = {}
for _ in range(20):
    with socket.create_connection((host, port), 2) as s:
        magic, version, nonce = challenge(s)
        out["challenge"] = [hex(magic), version]
        sent = request(hmac.new(token, b"rocewatch data port request" + nonce + request(bytes(32)),
                                hashlib.sha256).digest())
        s.sendall(sent)
        out["right"] = answer(s)
    if out["right"] != 2:
        break
    time.sleep(0.3)
with socket.create_connection((host, port), 2) as s:
    challenge(s)
    s.sendall(sent)
    out["replay"] = answer(s)
with socket.create_connection((host, port), 2) as s:
    challenge(s)
    s.sendall(request(token))
    out["clear"] = answer(s)
print(json.dumps(out))
"""


def scrape_seconds(d):
    t0 = time.monotonic()
    code, body = d.get("/metrics")
    return code, body, time.monotonic() - t0


def main():
    rwtest.require_root()
    for tool in ("curl", "promtool"):
        rwtest.require(shutil.which(tool), f"needs {tool}")
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-probes-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.chmod(token, 0o600)
    wrong = os.path.join(work, "wrong-token")
    with open(wrong, "w") as f:
        f.write(secrets.token_hex(32))
    port_a, port_b, port_c = 19901, 19902, 19903

    with rwtest.Netns("pa") as na, rwtest.Netns("pb") as nb:
        na.ip("link", "add", "rail0a", "type", "veth", "peer", "name", "rail0b", "netns", nb.name)
        na.ip("addr", "add", "10.77.0.1/24", "dev", "rail0a")
        nb.ip("addr", "add", "10.77.0.2/24", "dev", "rail0b")
        # 10.77.0.3 answers nothing: B owns it, but every reply from it is dropped (a blackhole).
        nb.ip("addr", "add", "10.77.0.3/24", "dev", "rail0b")
        nb.ip("rule", "add", "from", "10.77.0.3", "blackhole")
        na.ip("link", "set", "rail0a", "up")
        nb.ip("link", "set", "rail0b", "up")
        time.sleep(0.5)

        cfg_a, cfg_b, cfg_c = (os.path.join(work, n) for n in ("a.toml", "b.toml", "c.toml"))
        config(cfg_a, token, 9880, peer("node-b", f"10.77.0.2:{port_b}", "10.77.0.1", "10.77.0.2"))
        config(cfg_b, token, 9880)
        # C shares A's namespace: a wrong token towards B, and a blackholed peer.
        config(cfg_c, wrong, 9881, peer("node-b", f"10.77.0.2:{port_b}", "10.77.0.1", "10.77.0.2") +
               peer("ghost", f"10.77.0.3:{port_b}", "10.77.0.1", "10.77.0.3"))

        b = rwtest.Daemon(netns=nb, config=cfg_b, port=port_b, extra=("--listen", f"0.0.0.0:{port_b}"))
        a = rwtest.Daemon(netns=na, config=cfg_a, port=port_a, extra=("--listen", f"0.0.0.0:{port_a}"))
        c = rwtest.Daemon(netns=na, config=cfg_c, port=port_c, extra=("--listen", f"0.0.0.0:{port_c}"))
        with b, a, c:
            t.check(a.json("/api/v1/probes")["enabled"], "probing is on with a token file")
            code, _ = b.get("/api/v1/peer/hello")
            t.check(code == 401, f"hello without a token is refused (401, got {code})")

            def ok(kind):
                r = latest(a, "node-b", kind)
                return r if r and r["success"] else None
            t.within(lambda: ok("tcp_lat"), 15, "tcp_lat to node-b succeeds")
            t.within(lambda: ok("tcp_bw"), 15, "tcp_bw to node-b succeeds")
            lat, bw = ok("tcp_lat"), ok("tcp_bw")
            if lat:
                p50 = lat["latency_seconds"]["typical"]
                t.check(0 < p50 < 0.01, f"latency p50 is sane ({p50 * 1e6:.0f} us)")
                t.check(lat["latency_seconds"]["samples"] >= 100, "latency used its messages")
            if bw:
                bps = (bw["bandwidth_bytes_per_second"] or 0) * 8
                t.check(bps and bps > 1e8, f"bandwidth is sane ({(bps or 0) / 1e9:.2f} Gbit/s)")
                t.check(bw["streams"] == 2, "two streams as configured")
            hist = [p for p in a.json("/api/v1/probes")["probes"] if p["kind"] == "tcp_lat"][0]["history"]
            t.check(1 <= len(hist) <= 20, f"a short history is kept ({len(hist)})")

            tok = open(token).read().strip()
            auth = {"Authorization": f"Bearer {tok}"}
            code, body = a.get("/probe?target=node-b&module=tcp_lat", headers=auth)
            t.check(code == 200 and re.search(r"^probe_success 1$", body, re.M) is not None,
                    "/probe?target=node-b&module=tcp_lat succeeds")
            t.check("probe_latency_seconds{quantile=\"0.99\"}" in body, "/probe returns latency quantiles")
            code, body = a.get("/probe?target=nobody&module=tcp_lat", headers=auth)
            t.check(code == 200 and re.search(r"^probe_success 0$", body, re.M) is not None,
                    "/probe of an unconfigured target: 200, probe_success 0 (as blackbox_exporter)")

            # POST /api/v1/probes/run: refused without the token, a result with it.
            base = f"http://127.0.0.1:{port_a}/api/v1/probes/run"
            body = '{"peer": "node-b", "rail": "rail0", "kind": "tcp_lat"}'
            r = na.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", body, base,
                       check=False)
            t.check(r.stdout.strip() == "401", f"POST /api/v1/probes/run without a token is 401 ({r.stdout})")
            r = na.run("curl", "-sS", "-X", "POST", "-H", f"Authorization: Bearer {tok}", "-d", body, base,
                       check=False)
            try:
                res = json.loads(r.stdout)
            except ValueError:
                res = {}
            t.check(res.get("success") is True and res.get("kind") == "tcp_lat",
                    f"POST /api/v1/probes/run returns the result ({r.stdout[:120]})")

            # The RDMA session endpoint: the token first, then our own budget, then devices
            # (this machine has none: the VM scenario peer-probes runs real sessions).
            peer_rdma = f"http://10.77.0.2:{port_b}/api/v1/peer/rdma"
            ask = json.dumps({"kind": "rdma_write_bw", "message_size": 65536, "iterations": 0, "seconds": 60,
                              "timeout": 70, "rails": [{"name": "rail0", "address": "10.77.0.2",
                                                        "endpoints": [{}]}]})
            r = na.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", ask, peer_rdma,
                       check=False)
            t.check(r.stdout.strip() == "401", f"POST /api/v1/peer/rdma without a token is 401 ({r.stdout})")
            r = na.run("curl", "-sS", "-w", "\n%{http_code}", "-X", "POST", "-H", f"Authorization: Bearer {tok}",
                       "-d", ask, peer_rdma, check=False)
            text, _, code = r.stdout.rpartition("\n")
            t.check(code == "422" and '"bad_target"' in text and "grants up to 2 s" in text,
                    f"a 60 s RDMA run against node-b's 2 s budget is refused ({code} {text[:160]})")
            ask = ask.replace('"seconds": 60', '"seconds": 1')
            r = na.run("curl", "-sS", "-w", "\n%{http_code}", "-X", "POST", "-H", f"Authorization: Bearer {tok}",
                       "-d", ask, peer_rdma, check=False)
            text, _, code = r.stdout.rpartition("\n")
            t.check(code == "422" and '"device_not_found"' in text,
                    f"within budget, a node without RDMA says so ({code} {text[:160]})")

            code, metrics, _ = scrape_seconds(a)
            for fam in ("rocewatch_probe_success", "rocewatch_probe_duration_seconds",
                        "rocewatch_probe_bandwidth_bytes_per_second", "rocewatch_probe_latency_seconds",
                        "rocewatch_probe_last_run_timestamp_seconds"):
                t.check(f"\n{fam}{{" in metrics, f"/metrics has {fam}")
            r = subprocess.run(["promtool", "check", "metrics"], input=metrics, capture_output=True, text=True)
            t.check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
                    f"promtool check metrics is clean {r.stdout}{r.stderr}")

            # The data port's handshake from an independent client: the token is proved over a
            # fresh nonce, never sent; a request copied off the wire and the token itself are refused.
            r = na.run("python3", "-c", DATA_PORT_CLIENT, "10.77.0.2", "9880", tok, check=False)
            try:
                got = json.loads(r.stdout)
            except ValueError:
                got = {}
            t.check(got.get("challenge") == ["0x52575043", 2], f"B's data port challenges first ({got}, {r.stderr[-200:]})")
            t.check(got.get("right") == 0, f"a request proving the token over the nonce is granted (code {got.get('right')})")
            t.check(got.get("replay") == 1, f"the same request on a new connection is refused (code {got.get('replay')})")
            t.check(got.get("clear") == 1, f"the token itself in the request is refused (code {got.get('clear')})")
            t.check(any(lib.startswith("libnettle.so.8") for lib in rwtest.mapped_libraries(b.proc.pid)),
                    "with a data port open, nettle is loaded (on first use)")

            # A wrong token: refused by the peer's hello.
            t.within(lambda: (latest(c, "node-b", "tcp_lat") or {}).get("reason") == "auth_refused", 15,
                     "a wrong token gives auth_refused")
            # A blackholed address: timeout, within the probe's deadline (hello 2 s).
            t.within(lambda: (latest(c, "ghost", "tcp_lat") or {}).get("reason") == "timeout", 20,
                     "a blackholed peer gives timeout")
            g = latest(c, "ghost", "tcp_lat")
            if g:
                t.check(g["duration_seconds"] <= 3.5, f"within the deadline ({g['duration_seconds']:.2f} s)")
            # /metrics stays responsive while C's worker waits on the blackhole.
            worst = max(scrape_seconds(c)[2] for _ in range(10))
            t.check(worst < 0.5, f"/metrics answers during a hanging probe ({worst * 1000:.0f} ms worst of 10)")

            # The peer daemon goes away: peer_unreachable fires, /metrics stays quick.
            b.stop()
            t.within(lambda: ("peer_unreachable", "node-b") in a.alerts(), 15, "peer_unreachable fires for node-b")
            # The alert may come from another kind's run first: tcp_lat's own next run says why.
            why = ("connection_refused", "peer_unreachable", "timeout")
            t.within(lambda: (latest(a, "node-b", "tcp_lat") or {}).get("reason") in why, 15,
                     "tcp_lat's reason says why")
            worst = max(scrape_seconds(a)[2] for _ in range(10))
            t.check(worst < 0.5, f"/metrics stays responsive ({worst * 1000:.0f} ms worst of 10)")
            for d in (a, c):
                t.check(d.stop() == 0, "stops cleanly on SIGTERM")
    case_name_that_never_resolves(t, work, token)
    shutil.rmtree(work, ignore_errors=True)
    t.finish()


def case_name_that_never_resolves(t, work, token):
    """A peer named by a host name whose resolver never answers: the probe fails by its own
    deadline with a reason, instead of tying the scheduler to the resolver's 90 s. The daemon
    runs in its own network and mount namespaces, where /etc/resolv.conf is bound over with
    a nameserver that never answers; the host's file is never touched."""
    resolv = os.path.join(work, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("nameserver 10.99.0.53\noptions timeout:30 attempts:3\n")
    cfg = os.path.join(work, "named.toml")
    config(cfg, token, 19914, '[[peers]]\nname = "far"\naddress = "peer.rocewatch.test:9879"\n')
    with rwtest.Netns("pd") as nd:
        # The nameserver's address is on-link behind a veth whose far end answers no ARP.
        nd.ip("link", "add", "dns0", "type", "veth", "peer", "name", "dns1")
        nd.ip("addr", "add", "10.99.0.1/24", "dev", "dns0")
        nd.ip("link", "set", "dns0", "up")
        nd.ip("link", "set", "dns1", "up")
        d = rwtest.Daemon(netns=nd, config=cfg, port=19904)
        i = d.args.index(d.bin)
        d.args[i:i] = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                       f'mount --bind {resolv} /etc/resolv.conf && exec "$@"', "sh"]
        with d:
            t0 = time.monotonic()
            with open(token) as f:
                tok = f.read().strip()
            r = nd.run("curl", "-sS", "--max-time", "40", "-X", "POST", "-H", f"Authorization: Bearer {tok}", "-d",
                       json.dumps({"peer": "far", "kind": "tcp_lat"}), "-w", "\n%{http_code}",
                       "http://127.0.0.1:19904/api/v1/probes/run", check=False)
            secs = time.monotonic() - t0
            body, _, code = r.stdout.rpartition("\n")
            res = json.loads(body) if code == "200" else {}
            t.check(code == "200" and res.get("success") is False and res.get("reason") == "timeout",
                    f"a name that never resolves fails the probe with timeout ({code}: {body[:200]})")
            t.check(secs < 8, f"within the probe's deadline, not the resolver's ({secs:.1f} s)")
            t.check(d.stop() == 0, "stops cleanly on SIGTERM with a lookup still pending")


if __name__ == "__main__":
    main()
