#!/usr/bin/env python3
"""contrib/slurm/rocewatch-nhc.sh: drains the node on node-scoped alerts only.

First against a stand-in rocewatchd that prints a given --once document (and a stand-in scontrol
that records how it was called): a peer that is down does not drain, a node alert does, a warning
does not by default, a daemon that could not judge does not. Then against the real daemon's
--once on the DGX Spark fixture in a network namespace, with a rail's netdev down: drained, and
the reason names the alert. Also --once --format text on the same node, and a sysfs with no RDMA
device (drained: no_rdma_device)."""
import json
import os
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NHC = os.path.join(ROOT, "contrib", "slurm", "rocewatch-nhc.sh")


def alert(rule, obj, severity, scope):
    return {"rule": rule, "object": obj, "severity": severity, "scope": scope, "state": "firing",
            "summary": "s", "action": "a"}


def script(path, body):
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, stat.S_IRWXU)


def run_nhc(work, env_extra):
    calls = os.path.join(work, "scontrol.calls")
    if os.path.exists(calls):
        os.unlink(calls)
    env = dict(os.environ, SCONTROL=os.path.join(work, "scontrol"), NODENAME="gpu017", **env_extra)
    r = subprocess.run(["sh", NHC], env=env, capture_output=True, text=True, timeout=60)
    drained = open(calls).read().strip() if os.path.exists(calls) else ""
    return r.returncode, drained, r.stderr


def main():
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-nhc-")
    script(os.path.join(work, "scontrol"), f'#!/bin/sh\nprintf "%s|" "$@" >> {work}/scontrol.calls\n')
    fake = os.path.join(work, "rocewatchd")
    doc_file = os.path.join(work, "once.json")
    script(fake, f'#!/bin/sh\ncat {doc_file}\nexit $(cat {work}/rc)\n')

    def case(alerts, rc, **env):
        with open(doc_file, "w") as f:
            json.dump({"health": "whatever", "alerts": alerts}, f)
        with open(os.path.join(work, "rc"), "w") as f:
            f.write(str(rc))
        return run_nhc(work, {"ROCEWATCHD": fake, **env})

    rc, drained, _ = case([alert("peer_unreachable", "spark-b", "critical", "peer"),
                           alert("probe_latency_high", "spark-b/rail0:tcp_lat", "warning", "path")], 0)
    t.check(rc == 0 and not drained, f"peer and path alerts do not drain (rc {rc}, scontrol {drained!r})")
    rc, drained, _ = case([alert("peer_unreachable", "spark-b", "critical", "peer"),
                           alert("port_down", "rocep1s0f1/1", "critical", "node")], 2)
    t.check(rc == 1 and drained == "update|NodeName=gpu017|State=DRAIN|Reason=rocewatch: port_down rocep1s0f1/1|",
            f"a node alert drains, naming it and only it ({drained!r})")
    rc, drained, _ = case([alert("mtu_low", "enp1s0f0np0", "warning", "node")], 1)
    t.check(rc == 0 and not drained, "a node warning does not drain by default")
    rc, drained, _ = case([alert("mtu_low", "enp1s0f0np0", "warning", "node")], 1, ROCEWATCH_DRAIN_ON="critical,warning")
    t.check(rc == 1 and "mtu_low enp1s0f0np0" in drained, "ROCEWATCH_DRAIN_ON=critical,warning drains on it")
    rc, drained, err = case([], 3)
    t.check(rc == 3 and not drained and "could not judge" in err, f"could not judge: no drain, exit 3 ({rc})")
    with open(doc_file, "w") as f:
        f.write("not json")
    rc, drained, _ = run_nhc(work, {"ROCEWATCHD": fake})
    t.check(rc == 3 and not drained, f"garbage instead of JSON: no drain, exit 3 ({rc})")

    # The real daemon on the Spark fixture.
    rwtest.require_root()
    fx = rwtest.fixtures()
    daemon = os.environ.get("ROCEWATCHD", os.path.join(ROOT, "build", "daemon", "rocewatchd"))
    with rwtest.Netns("nhc") as node, rwtest.Netns("nhcp") as peer:
        rwtest.dgx_spark_links(node, peer)
        cfg = os.path.join(work, "quiet.toml")
        with open(cfg, "w") as f:
            f.write('[expect]\nrails = ["rocep1s0f0", "rocep1s0f1"]\n[rules.peermem_missing]\nenabled = false\n')
        wrapper = os.path.join(work, "rocewatchd-in-ns")
        # --lldpd-socket '': the host's own lldpd (a socket path crosses namespaces) stays out.
        script(wrapper, f'#!/bin/sh\nexec ip netns exec {node.name} {daemon} --lldpd-socket \'\' "$@"\n')
        args = f"--config {cfg} --sysfs-root {fx}/sysfs/dgx-spark --procfs-root {fx}/procfs/dgx-spark"
        rc, drained, err = run_nhc(work, {"ROCEWATCHD": wrapper, "ROCEWATCH_ARGS": args})
        t.check(rc == 0 and not drained, f"a healthy node is not drained (rc {rc}, {drained!r}, {err.strip()!r})")
        node.ip("link", "set", "enp1s0f0np0", "down")
        rc, drained, err = run_nhc(work, {"ROCEWATCHD": wrapper, "ROCEWATCH_ARGS": args})
        t.check(rc == 1 and "netdev_down enp1s0f0np0" in drained,
                f"a rail's netdev down drains, naming the alert ({drained!r})")
        r = subprocess.run([wrapper, "--once", "--format", "text", *args.split()], capture_output=True, text=True,
                           env=dict(os.environ, NO_COLOR=""), timeout=60)
        t.check(r.returncode == 2 and "CRITICAL  netdev_down  enp1s0f0np0" in r.stdout and "  action: " in r.stdout
                and "\033[" not in r.stdout,
                f"--once --format text lists the alert with its action, no colour into a pipe ({r.returncode})")
        print("     " + r.stdout.replace("\n", "\n     ")[:600])
        # A sysfs that lists no RDMA device (driver not loaded, a wrong --sysfs-root) is not a
        # healthy node: drained, naming no_rdma_device.
        none_args = f"--sysfs-root {fx}/sysfs/none --procfs-root {fx}/procfs/dgx-spark"
        rc, drained, err = run_nhc(work, {"ROCEWATCHD": wrapper, "ROCEWATCH_ARGS": none_args})
        t.check(rc == 1 and "no_rdma_device class/infiniband" in drained,
                f"a node with no RDMA device drains, naming no_rdma_device (rc {rc}, {drained!r}, {err.strip()!r})")
    t.finish()


if __name__ == "__main__":
    main()
