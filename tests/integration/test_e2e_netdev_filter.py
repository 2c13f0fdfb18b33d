#!/usr/bin/env python3
"""End to end: [metrics] netdev_exclude/netdev_include in a namespace holding many veths, as a
Kubernetes node holds pod veths. The excluded netdevs get no rocewatch_link_* series (the
series count falls by exactly their share), the rails keep theirs, a SIGHUP with a new filter
applies it, a regex that does not compile is a config error naming file:line:key, and the REST
API keeps listing every netdev (the filter is about series, not about what is watched).
Also the REST conventions of API version 2 on the real daemon: ?severity= filters, an unknown
parameter is 400."""
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

PODS = 40  # veth pairs: 80 pod-side netdevs, as calico names them (cali*) and as plain veths


def link_series(metrics):
    """{netdev: number of rocewatch_link_* samples}"""
    out = {}
    for m in re.finditer(r'^rocewatch_link_[a-z_]+\{netdev="([^"]*)"', metrics, re.M):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def write_config(path, include, exclude):
    with open(path, "w") as f:
        f.write('[daemon]\ninterval = "1s"\n[metrics]\n'
                f'netdev_include = "{include}"\nnetdev_exclude = "{exclude}"\n')


def main():
    rwtest.require_root()
    t = rwtest.Results()
    fx = rwtest.fixtures()
    work = tempfile.mkdtemp(prefix="rw-netdev-filter-")
    cfg = os.path.join(work, "rocewatch.toml")
    bin_ = os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd")

    # A bad regex: --check-config names file, line and key.
    with open(cfg, "w") as f:
        f.write('[metrics]\n# pod veths\nnetdev_exclude = "^(veth|cali"\n')
    r = subprocess.run([bin_, "--check-config", "--config", cfg], capture_output=True, text=True)
    t.check(r.returncode != 0 and f"{cfg}:3: metrics.netdev_exclude:" in r.stderr
            and "is not a regular expression" in r.stderr,
            f"a bad regex is a config error naming file:line:key ({r.stderr.strip()[:200]})")

    with rwtest.Netns("nf") as ns, rwtest.Netns("nfpeer") as peer:
        rwtest.dgx_spark_links(ns, peer)
        for i in range(PODS):
            ns.ip("link", "add", f"veth{i:03d}", "type", "veth", "peer", "name", f"cali{i:03d}")
        write_config(cfg, "", "")
        with rwtest.Daemon(netns=ns, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark", config=cfg,
                           port=rwtest.free_port()) as d:
            _, body = d.get("/metrics")
            before = link_series(body)
            pods = [n for n in before if n.startswith(("veth", "cali"))]
            t.check(len(pods) == 2 * PODS, f"no filter: every pod veth has link series ({len(pods)})")
            per = before.get("enp1s0f0np0", 0)
            t.check(per > 0, f"no filter: the rail has link series ({per})")

            write_config(cfg, "", "^(veth|cali)")
            d.signal(signal.SIGHUP)

            def filtered():
                _, b = d.get("/metrics")
                s = link_series(b)
                return s if not any(n.startswith(("veth", "cali")) for n in s) else None
            after, _ = rwtest.wait_for(filtered, 10, "the exclude filter after SIGHUP")
            t.check(True, "exclude ^(veth|cali): no pod veth has a rocewatch_link_* series")
            t.check(after.get("enp1s0f0np0") == per and after.get("enp1s0f1np1") == per,
                    "the rails keep every link series")
            dropped = sum(before.values()) - sum(after.values())
            t.check(dropped == sum(before[n] for n in pods),
                    f"the series count falls by exactly the pods' share ({sum(before.values())} -> "
                    f"{sum(after.values())})")
            names = {i["name"] for i in d.json("/api/v1/interfaces")["interfaces"]}
            t.check(all(n in names for n in pods), "REST still lists the excluded netdevs")

            write_config(cfg, "^enp1s0f[01]np[01]$", "f1")
            d.signal(signal.SIGHUP)

            def only_one():
                _, b = d.get("/metrics")
                s = link_series(b)
                return s if set(s) == {"enp1s0f0np0"} else None
            try:
                rwtest.wait_for(only_one, 10, "include and exclude together")
                t.check(True, "include ^enp1s0f[01]np[01]$ with exclude f1: only enp1s0f0np0 is left")
            except AssertionError:
                _, b = d.get("/metrics")
                t.check(False, f"include and exclude together: {sorted(link_series(b))}")

            # REST: filters work or answer 400.
            alerts = d.json("/api/v1/alerts")
            t.check(alerts.get("api_version") == 2, "REST documents carry api_version 2")
            every = alerts["alerts"]
            for sev in ("info", "warning", "critical"):
                got = d.json(f"/api/v1/alerts?severity={sev}")["alerts"]
                want = [a for a in every if a["severity"] == sev]
                t.check(len(got) == len(want) and all(a["severity"] == sev for a in got),
                        f"?severity={sev} answers the {len(want)} {sev} alerts of {len(every)}")
            for bad in ("/api/v1/alerts?severity=urgent", "/api/v1/alerts?sevrity=critical", "/api/v1/status?x=1"):
                code, _ = d.get(bad)
                t.check(code == 400, f"GET {bad} is 400 (got {code})")
    t.finish()


if __name__ == "__main__":
    main()
