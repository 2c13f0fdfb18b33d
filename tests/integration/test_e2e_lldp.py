#!/usr/bin/env python3
"""End to end with real lldpd: the DGX Spark node's rails are veth pairs to a "switch" namespace
where an lldpd announces itself as leaf-07 (its ports by MAC, described by name, as many switches
do). rocewatchd asks the node's own lldpd
over its socket and must show the switch and port on each rail in /api/v1/interfaces and
/metrics, name them in an alert about a rail, and say so when lldpd stops answering. liblldpctl
is mapped once lldpd is asked, never with --lldpd-socket ""."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

CONFIG = """
[daemon]
interval = "1s"
[expect]
rails = ["rocep1s0f0", "rocep1s0f1"]
ignore_devices = ["roceP2p1s0f0"]
[rules.peermem_missing]
enabled = false
"""


class Lldpd:
    """lldpd in a namespace, on the given links, with its socket in `work`; its process group is
    ended on exit."""

    def __init__(self, ns, work, name, links):
        self.sock = os.path.join(work, f"{name}.socket")
        self.log = open(os.path.join(work, f"{name}.log"), "w")
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns.name, "lldpd", "-d", "-u", self.sock,
                                      "-p", os.path.join(work, f"{name}.pid"), "-I", ",".join(links)],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        rwtest.wait_for(lambda: os.path.exists(self.sock), 5, f"lldpd {name}'s socket")
        # lldpd starts paused until the lldpcli it runs itself resumes it; a resume of our own
        # does not depend on that child winning the race.
        rwtest.wait_for(lambda: self.cli("resume").returncode == 0, 5, f"lldpd {name} to resume")

    def cli(self, *args):
        return rwtest.sh("lldpcli", "-u", self.sock, *args)

    def signal(self, sig):
        os.killpg(self.proc.pid, sig)

    def stop(self):
        for sig in (signal.SIGCONT, signal.SIGTERM):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        self.log.close()


def main():
    rwtest.require_root()
    rwtest.require(shutil.which("lldpd") is not None, "needs lldpd (scripts/deps.sh test installs it)")
    t = rwtest.Results()
    fx = rwtest.fixtures()
    work = tempfile.mkdtemp(prefix="rw-lldp-")
    os.chmod(work, 0o755)  # lldpd hands its socket to group _lldpd
    cfg = os.path.join(work, "rocewatch.toml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    daemons = []
    try:
        with rwtest.Netns("node") as node, rwtest.Netns("leaf") as leaf:
            rwtest.dgx_spark_links(node, leaf)
            sw = Lldpd(leaf, work, "leaf", ["peer0", "peer1"])
            daemons.append(sw)
            sw.cli("configure", "system", "hostname", "leaf-07")
            host = Lldpd(node, work, "node", ["enp1s0f0np0", "enp1s0f1np1"])
            daemons.append(host)

            def heard():
                sw.cli("update")
                out = host.cli("-f", "keyvalue", "show", "neighbors").stdout
                return "leaf-07" in out and out.count("chassis.name=leaf-07") >= 2
            try:
                rwtest.wait_for(heard, 20, "the node's lldpd to hear leaf-07 on both rails", step=0.5)
            except AssertionError:
                for x in (host, sw):
                    print(x.sock, x.cli("show", "statistics").stdout, x.cli("show", "neighbors").stdout,
                          x.cli("show", "interfaces").stdout)
                raise

            with rwtest.Daemon(netns=node, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark",
                               config=cfg, lldpd_socket=host.sock) as d:
                ifs = {i["name"]: i for i in d.json("/api/v1/interfaces")["interfaces"]}
                for netdev, port in (("enp1s0f0np0", "peer0"), ("enp1s0f1np1", "peer1")):
                    n = ifs[netdev]["lldp"] or {}
                    t.check(n.get("switch") == "leaf-07" and n.get("switch_port") == port
                            and n.get("port_id_subtype") == "mac" and n.get("protocol") == "LLDP",
                            f"{netdev}: lldp names leaf-07 port {port} ({n})")
                t.check(ifs["enP2p1s0f0np0"]["lldp"] is None, "a link lldpd does not run on has no lldp")
                _, metrics = d.get("/metrics")
                t.check('rocewatch_link_lldp_neighbor_info{netdev="enp1s0f0np0",switch="leaf-07",'
                        'switch_port="peer0",' in metrics, "the info series names the switch and port")
                t.check('rocewatch_collector_success{collector="lldp"} 1' in metrics, "the lldp collector succeeds")
                t.check(any(l.startswith("liblldpctl.so.4") for l in rwtest.mapped_libraries(d.proc.pid)),
                        "asking lldpd, liblldpctl is loaded (on first use)")

                # A rail's link down: the alert names the switch port to look at.
                node.ip("link", "set", "enp1s0f1np1", "down")
                a, took = rwtest.wait_for(lambda: d.alerts().get(("netdev_down", "enp1s0f1np1")), 10,
                                          "netdev_down on enp1s0f1np1")
                t.check("(enp1s0f1np1 is cabled to leaf-07 port peer1, as LLDP says)" in a["summary"]
                        and a["details"].get("switch_port") == "peer1",
                        f"netdev_down names leaf-07 port peer1 ({a['summary']})")
                node.ip("link", "set", "enp1s0f1np1", "up")

                # lldpd stops answering: the collector says so within a refresh, the names stand.
                host.signal(signal.SIGSTOP)

                def failing():
                    c = [c for c in d.json("/api/v1/status")["collectors"] if c["name"] == "lldp"]
                    return c and not c[0]["success"] and c
                c, took = rwtest.wait_for(failing, 45, "the lldp collector to fail")
                t.check(c[0]["last_error"] == "lldpd did not answer in time",
                        f"a stopped lldpd is a bounded failure that says so ({c[0]['last_error']}, {took:.1f} s)")
                ifs = {i["name"]: i for i in d.json("/api/v1/interfaces")["interfaces"]}
                t.check((ifs["enp1s0f0np0"]["lldp"] or {}).get("switch") == "leaf-07",
                        "the last neighbours stand while lldpd does not answer")
                code, _ = d.get("/healthz")
                t.check(code == 200, f"the daemon still serves ({code})")
                host.signal(signal.SIGCONT)

            # --lldpd-socket "": lldpd is never asked, and liblldpctl (with its libbsd) never mapped.
            with rwtest.Daemon(netns=node, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark",
                               config=cfg) as quiet:
                time.sleep(2.5)  # two cycles
                libs = rwtest.mapped_libraries(quiet.proc.pid)
                t.check(libs and not any(l.startswith(("liblldpctl.", "libbsd.")) for l in libs),
                        "with --lldpd-socket \"\", neither liblldpctl nor libbsd is mapped")
    finally:
        for x in daemons:
            x.stop()
        shutil.rmtree(work, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
