#!/usr/bin/env python3
"""End to end: --check-config on good and bad files, SIGHUP reload (a bad file is kept out and
reported in a metric), and --once exit codes for cron and node-health-check scripts."""
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(*args, ns=None):
    cmd = [os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd"), *args]
    if "--once" in args:
        cmd += ["--lldpd-socket", ""]  # a collection never asks the host's own lldpd
    if ns:
        cmd = ["ip", "netns", "exec", ns.name] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def metric(text, name):
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return m.group(1) if m else None


def main():
    t = rwtest.Results()
    fx = rwtest.fixtures()

    # --check-config: every bad file fails with file:line: key: problem lines; good files pass.
    for good in (f"{ROOT}/config/rocewatch.toml", f"{ROOT}/config/minimal.toml"):
        r = run("--check-config", "--config", good)
        t.check(r.returncode == 0 and r.stderr == "", f"--check-config {os.path.basename(good)} passes")
    expect = {
        "bad-syntax.toml": [r"bad-syntax\.toml:4: "],
        "unknown-key.toml": [r"unknown-key\.toml:\d+: daemon\.intervall: .*did you mean"],
        "bad-types.toml": [r"bad-types\.toml:3: daemon\.interval: ", r"bad-types\.toml:4: daemon\.http_threads: "],
        "bad-values.toml": [r"bad-values\.toml:3: daemon\.listen: ", r"bad-values\.toml:5: daemon\.log_level: "],
        "out-of-range.toml": [r"out-of-range\.toml:3: daemon\.listen: ", r"out-of-range\.toml:5: daemon\.http_threads: "],
    }
    for name, patterns in expect.items():
        r = run("--check-config", "--config", f"{fx}/config/{name}")
        t.check(r.returncode == 1, f"--check-config {name} exits 1 (got {r.returncode})")
        for p in patterns:
            t.check(re.search(p, r.stderr), f"{name}: error matches /{p}/")
        t.check(all(re.match(r"^\S+:(\d+: )?", line) for line in r.stderr.splitlines()),
                f"{name}: every line starts with file:line")
    # Durations that would overflow the clock, and nesting that would overflow toml++'s stack:
    # plain config errors with file, line and the bound.
    with tempfile.TemporaryDirectory() as tmp:
        huge = os.path.join(tmp, "huge.toml")
        with open(huge, "w") as f:
            f.write('[daemon]\ninterval = "2562048h"\n[rules.port_down]\nfor = "2562048h"\n')
        r = run("--check-config", "--config", huge)
        t.check(r.returncode == 1 and re.search(r"huge\.toml:2: daemon\.interval: .* above the maximum 1h", r.stderr)
                and re.search(r"huge\.toml:4: rules\.port_down\.for: .* above the maximum 168h", r.stderr),
                f"--check-config names the bound of an overflowing duration ({r.stderr.strip()!r})")
        deep = os.path.join(tmp, "deep.toml")
        with open(deep, "w") as f:
            f.write("[daemon]\n" + "a." * 100000 + "z = 1\n")
        r = run("--check-config", "--config", deep)
        t.check(r.returncode == 1 and re.search(r"deep\.toml:2: .*nest", r.stderr),
                f"--check-config refuses a deeply nested file with its line (rc {r.returncode})")
    # [cluster] inventory is read as the daemon would: a refused file fails the check with its
    # reason, a good one is counted, a target listed twice is a warning.
    with tempfile.TemporaryDirectory() as tmp:
        inv, conf = os.path.join(tmp, "inventory.json"), os.path.join(tmp, "cluster.toml")
        with open(conf, "w") as f:
            f.write(f'[cluster]\ninventory = "{inv}"\n')
        with open(inv, "w") as f:
            f.write('[{"targets": ["10.0.0.1:9879", "10.0.0.2"]')
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 1 and inv in r.stderr and "ok" not in r.stdout,
                f"--check-config refuses a broken inventory and names it ({r.returncode}, {r.stderr.strip()!r})")
        with open(inv, "w") as f:
            f.write('[{"targets": ["10.0.0.1:9879", "10.0.0.2", "10.0.0.1:9879"]}]')
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 0 and f"{inv}: ok, 2 entries" in r.stdout and inv in r.stderr
                and "10.0.0.1:9879" in r.stderr,
                f"--check-config counts a good inventory and warns of a target listed twice ({r.stdout!r}, {r.stderr!r})")
        os.unlink(inv)
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 1 and inv in r.stderr, f"--check-config names a missing inventory ({r.stderr.strip()!r})")
    # Credential files are read as the daemon reads them: a token file it cannot use (probing
    # would be off) and an Alertmanager secret it cannot read fail the check, each named.
    with tempfile.TemporaryDirectory() as tmp:
        conf, tok = os.path.join(tmp, "creds.toml"), os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write("abc\n")
        with open(conf, "w") as f:
            f.write(f'[probes]\ntoken_file = "{tok}"\n[alertmanager]\nurls = ["http://127.0.0.1:9093"]\n'
                    f'bearer_token_file = "{tmp}/missing"\n')
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 1 and "probes.token_file: " in r.stderr and "64 hex digits" in r.stderr
                and f"alertmanager.bearer_token_file: {tmp}/missing: " in r.stderr,
                f"--check-config refuses a token file and a secret the daemon cannot use ({r.stderr.strip()!r})")
        with open(tok, "w") as f:
            f.write("ab" * 32 + "\n")
        with open(f"{tmp}/missing", "w") as f:
            f.write("secret\n")
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 0, f"--check-config takes them once they are right ({r.stderr.strip()!r})")
    # A listen host of one address keeps the probe data port off the rails: said, not refused.
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "mgmt.toml")
        with open(conf, "w") as f:
            f.write('[daemon]\nlisten = "10.1.2.3:9879"\n[[peers]]\nname = "b"\naddress = "10.1.2.4:9879"\n')
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 0 and "data port (9880) listens on 10.1.2.3 only" in r.stderr
                and "listen on 0.0.0.0 or ::" in r.stderr,
                f"--check-config warns that a one-address listen keeps rail probes out ({r.stderr.strip()!r})")
        with open(conf, "a") as f:
            f.write('[probes]\ndata_listen = ""\n')
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 0 and "data port" not in r.stderr,
                f"--check-config: data_listen = \"\" serves rail probes, no warning ({r.stderr.strip()!r})")
        # A listen host that does not resolve: the check and the daemon say which and why.
        with open(conf, "w") as f:
            f.write('[daemon]\nlisten = "nosuchhost.invalid:19879"\n')
        r = run("--check-config", "--config", conf)
        t.check(r.returncode == 1 and "daemon.listen: cannot resolve nosuchhost.invalid" in r.stderr,
                f"--check-config refuses a listen host that does not resolve ({r.stderr.strip()!r})")
        r = run("--config", conf, "--state-dir", tmp, "--sysfs-root", f"{fx}/sysfs/none")
        t.check(r.returncode == 1 and "cannot listen on nosuchhost.invalid:19879: cannot resolve" in r.stderr,
                f"the daemon names the host it cannot resolve, not 'bind failed' ({r.stderr.strip()[-200:]!r})")
    r = run("--check-config", "--config", "/nonexistent/rocewatch.toml")
    t.check(r.returncode == 1 and "/nonexistent/rocewatch.toml" in r.stderr, "a missing file is named")
    r = run("--listen", "nowhere")
    t.check(r.returncode == 1 and "--listen" in r.stderr, "a bad --listen flag is refused and named")
    r = run("--bogus-flag")
    t.check(r.returncode == 64 and "usage" in r.stderr, "an unknown flag prints usage and exits 64")
    with tempfile.TemporaryDirectory() as tmp:  # were the flag taken, the daemon would use these, not the host's
        r = run("--format", "text", "--listen", "127.0.0.1:0", "--state-dir", tmp, "--sysfs-root", f"{fx}/sysfs/none",
                "--lldpd-socket", "")
    t.check(r.returncode == 64 and "--format applies to --once only" in r.stderr,
            f"--format without --once is a usage error, not a daemon started ({r.returncode}, {r.stderr.strip()[:80]!r})")

    rwtest.require_root()
    with rwtest.Netns("node") as node, rwtest.Netns("peer") as peer:
        rwtest.dgx_spark_links(node, peer)
        spark = ["--sysfs-root", f"{fx}/sysfs/dgx-spark", "--procfs-root", f"{fx}/procfs/dgx-spark"]
        quiet = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        quiet.write('[expect]\nrails = ["rocep1s0f0", "rocep1s0f1"]\n[rules.peermem_missing]\nenabled = false\n')
        quiet.close()

        # --once: 0 healthy, 1 warning, 2 critical.
        r = run("--once", "--config", quiet.name, *spark, "--log-level", "warn", ns=node)
        t.check(r.returncode == 0 and '"health": "healthy"' in r.stdout, f"--once on a healthy node exits 0 ({r.returncode})")
        r = run("--once", *spark, "--log-level", "warn", ns=node)
        t.check(r.returncode == 1, f"--once with peermem missing exits 1 (warning) ({r.returncode})")
        node.ip("link", "set", "enp1s0f0np0", "down")
        r = run("--once", "--config", quiet.name, *spark, "--log-level", "warn", ns=node)
        t.check(r.returncode == 2 and "netdev_down" in r.stdout, f"--once with a rail down exits 2 ({r.returncode})")
        # The report is stdout; the daemon's alert log lines would repeat it on stderr.
        for fmt in ("json", "text"):
            r = run("--once", "--format", fmt, "--config", quiet.name, *spark, ns=node)
            t.check(r.returncode == 2 and "netdev_down" in r.stdout and "netdev_down" not in r.stderr,
                    f"--once --format {fmt} reports the alert on stdout only (stderr {r.stderr.strip()[:200]!r})")
        node.ip("link", "set", "enp1s0f0np0", "up")

        # Started as systemd starts it, with a soft open-file limit of 1024 below a higher hard
        # one: the daemon raises the soft limit to the hard one, so that it can keep its sysfs
        # counter files open (half the soft limit) on nodes with more than 8 NICs.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        start_hard = hard if hard != resource.RLIM_INFINITY and hard > 1024 else 4096
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, start_hard))
        try:
            with rwtest.Daemon(netns=node, extra=spark) as d:
                with open(f"/proc/{d.proc.pid}/limits") as f:
                    line = next(ln for ln in f if ln.startswith("Max open files"))
                t.check(line.split()[3:5] == [str(start_hard), str(start_hard)],
                        f"started at 1024 open files, the daemon raised its soft limit to the hard one: {line.strip()}")
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

        # The data port on every address while the HTTP API stays on 127.0.0.1 (probes.data_listen
        # = ""), and without it on the listen host only: 127.0.0.2, another address of this
        # namespace, is where a peer's rail probe would come in.
        tok = tempfile.NamedTemporaryFile("w", suffix=".token", delete=False)
        tok.write("cd" * 32 + "\n")
        tok.close()
        os.chmod(tok.name, 0o600)
        data = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        data.close()

        def reaches(host, port):
            r = subprocess.run(["ip", "netns", "exec", node.name, "python3", "-c",
                                f"import socket; socket.create_connection(({host!r}, {port}), 2).close()"],
                               capture_output=True, text=True, timeout=10)
            return r.returncode == 0

        for data_listen, other_reached in (('data_listen = ""\n', True), ("", False)):
            with open(data.name, "w") as f:
                f.write(f'[probes]\ntoken_file = "{tok.name}"\ndata_port = 19890\n{data_listen}')
            with rwtest.Daemon(netns=node, config=data.name, port=19891, extra=spark) as d:
                t.check(reaches("127.0.0.1", 19890) and reaches("127.0.0.2", 19890) == other_reached
                        and not reaches("127.0.0.2", 19891),
                        f"{data_listen.strip() or 'no data_listen'}: data port on 127.0.0.2 "
                        f"{'reached' if other_reached else 'refused'}, the HTTP API on 127.0.0.1 only")
        os.unlink(data.name)
        os.unlink(tok.name)

        # SIGHUP: a good file replaces the config; a bad one is refused, reported, and the old one kept.
        live = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        live.write('[expect]\nmtu = 9000\n')
        live.close()
        with rwtest.Daemon(netns=node, config=live.name, extra=spark) as d:
            _, m = d.get("/metrics")
            t.check(metric(m, "rocewatch_config_last_reload_successful") == "1", "fresh start: reload metric is 1")
            with open(live.name, "w") as f:
                f.write('[expect]\nmtu = 4000\n[probes]\ndata_port = 19889\n')
            d.signal(signal.SIGHUP)
            rwtest.wait_for(lambda: d.json("/api/v1/config")["expect"]["mtu"] == 4000, 5, "reload to apply")
            t.check(True, "SIGHUP applied a good config (expect.mtu 4000)")
            # The data port is taken at start: the config served says the one in effect, and what waits.
            c = d.json("/api/v1/config")
            t.check(c["probes"]["data_port"] == 9880 and any("probes.data_port: 19889" in p for p in c["restart_pending"]),
                    f"a start-only change is kept out and named as pending ({c['probes']['data_port']}, "
                    f"{c['restart_pending']})")
            with open(live.name, "w") as f:
                f.write('[expect]\nmtu = "big"\nbogus = 1\n')
            d.signal(signal.SIGHUP)
            rwtest.wait_for(lambda: metric(d.get("/metrics")[1], "rocewatch_config_last_reload_successful") == "0",
                            5, "the failed reload to show in /metrics")
            t.check(d.json("/api/v1/config")["expect"]["mtu"] == 4000, "a bad reload keeps the running config")
            st = d.json("/api/v1/status")
            t.check("expect.mtu" in str(st), "status says why the reload was rejected")
            t.check(d.proc.poll() is None, "the daemon survives a bad reload")
            for bad, what, why in (("[daemon]\n" + "a." * 100000 + "z = 1\n", "a deeply nested file", "nest"),
                                   ('[daemon]\ninterval = "2562048h"\n', "an overflowing interval", "maximum 1h")):
                with open(live.name, "w") as f:
                    f.write(bad)
                d.signal(signal.SIGHUP)
                rwtest.wait_for(lambda: d.proc.poll() is not None or why in str(d.json("/api/v1/status")), 5,
                                f"the reload of {what} to be refused")
                t.check(d.proc.poll() is None, f"the daemon survives the reload of {what}")
                t.check(d.json("/api/v1/config")["expect"]["mtu"] == 4000
                        and d.json("/api/v1/config")["daemon"]["interval"] != "2562048h",
                        f"{what} keeps the running config")
        os.unlink(live.name)
        os.unlink(quiet.name)
    t.finish()


if __name__ == "__main__":
    main()
