#!/usr/bin/env python3
"""A cluster of rocewatchd (12 by default: ROCEWATCH_CLUSTER_NODES) on this machine, localized by
the shipped Prometheus rules on a real Prometheus.

Each node is a network namespace with one veth per rail (ra, rb) into one Linux bridge per rail
(the rail's switch) and one into a management bridge; the bridges live in a "switch" namespace
of their own, where Prometheus runs too. Per-rail subnets, one file_sd inventory with a `rack`
label (racks of 4), one token, TCP probes only, and no per-node peer list: every daemon reads
the inventory, finds itself, and probes its ring successors (all other nodes, up to 16) over
the rails matched from their hellos. Prometheus scrapes every daemon through file_sd from that
same inventory and evaluates prometheus/rocewatch-rules.yml with short `for`.

Faults, each checked in Prometheus' /api/v1/alerts (the right alert naming the right culprit,
nobody else blamed), timed from injection to the alert firing, then cleared:
  1. one node's rail rb drops everything (tc BPF on its veth)
  2. one pair's path on rail ra drops (tc BPF matching the two addresses)
  3. the nodes of one rack get +5 ms on rail ra (a userspace delay line: no sch_netem here)
  4. one node's rail ra at a tenth of the others' bandwidth (tbf)
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import rwtest  # noqa: E402

RULES = os.path.join(HERE, "..", "..", "prometheus", "rocewatch-rules.yml")
NODES = int(os.environ.get("ROCEWATCH_CLUSTER_NODES", "12"))
RACK_SIZE = 4
RAILS = {"ra": "10.201.0", "rb": "10.202.0"}  # rail (its netdev) -> subnet
MGMT = "10.200.0"
HTTP_PORT = 9879
FOR = "10s"  # every alert's `for` in this test (the shipped rules say minutes)
# Each node's rail links are shaped to one line rate, as NICs are: unshaped veths run at what the
# CPU gives them, which swings with the load of the other daemons.
LINE_RATE = "400mbit"
DAEMON_ALERT = "RocewatchDaemonAlert"


def mgmt(i):
    return f"{MGMT}.{i + 1}"


def target(i):
    return f"{mgmt(i)}:{HTTP_PORT}"


def rack(i):
    return f"r{i // RACK_SIZE}"


def ring():
    """Each node's ring successors: every other node (a full mesh), as far as the ring allows."""
    return min(NODES - 1, 16)


def inventory_path(work):
    return os.path.join(work, "inventory.json")


def daemon_config(i, token, work, peers=None):
    """Node i's config: short TCP probe intervals; the inventory (peers None) or explicit
    [[peers]] to `peers`."""
    lines = [f'[daemon]\ninterval = "2s"\n[probes]\ntoken_file = "{token}"\ndata_port = 9880\n'
             'latency_threshold = "1s"\n'
             '[probes.tcp_lat]\ninterval = "3s"\njitter = "1s"\ncount = 20\ntimeout = "1s"\n'
             '[probes.tcp_bw]\ninterval = "20s"\njitter = "5s"\nduration = "100ms"\nstreams = 1\n'
             '[rules.peer_unreachable]\nclear_after = "2s"\n'
             # Veth rails in namespaces, no RDMA device: TCP-only nodes on purpose.
             '[rules.no_rdma_device]\nenabled = false\n']
    if peers is None:
        lines.append(f'[cluster]\ninventory = "{inventory_path(work)}"\nrails = {json.dumps(list(RAILS))}\n'
                     f'ring_successors = {ring()}\nrotating_peers = 0\n')
    for j in (peers or []):
        if j == i:
            continue
        lines.append(f'[[peers]]\nname = "{target(j)}"\naddress = "{target(j)}"\n')
        for rail, net in RAILS.items():
            lines.append(f'[[peers.rails]]\nname = "{rail}"\nlocal_address = "{net}.{i + 1}"\n'
                         f'remote_address = "{net}.{j + 1}"\n')
    path = os.path.join(work, f"node{i}.toml")
    with open(path, "w") as f:
        f.write("".join(lines))
    return path


def bpf_object(work, name, **defs):
    out = os.path.join(work, name + ".o")
    args = ["clang", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c",
            os.path.join(HERE, "fault.c"), "-o", out] + [f"-D{k}={v}" for k, v in defs.items()]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"clang -target bpf failed: {r.stderr}")
    return out


def tbf(rate):
    return ["tbf", "rate", rate, "burst", "256kb", "latency", "50ms"]


def ip_le32(addr):
    """An IPv4 address as the u32 a little-endian BPF program reads from the header."""
    a = [int(x) for x in addr.split(".")]
    return hex(a[0] | a[1] << 8 | a[2] << 16 | a[3] << 24)


class Cluster:
    """NODES namespaces on three bridges (rails a, b and management) in a switch namespace.
    config(i) gives node i's config file; Prometheus runs in the switch namespace."""

    def __init__(self, work, token, nodes=None, config=None):
        self.work = work
        self.token = token
        self.count = nodes or NODES
        self.config = config or (lambda i: daemon_config(i, token, work))
        self.tag = f"{os.getpid() % 100000}"
        self.sw = rwtest.Netns(f"sw{self.tag}")
        self.nodes = [rwtest.Netns(f"n{i}x{self.tag}") for i in range(self.count)]
        self.daemons = []
        self.prom = None
        self.prom_port = 9090

    def __enter__(self):
        self.sw.__enter__()
        for br in ("bra", "brb", "brm"):
            self.sw.ip("link", "add", br, "type", "bridge")
            self.sw.ip("link", "set", br, "up")
        self.sw.ip("addr", "add", f"{MGMT}.254/24", "dev", "brm")
        for i, n in enumerate(self.nodes):
            n.__enter__()
            for dev, br, net in (("ra", "bra", RAILS["ra"]), ("rb", "brb", RAILS["rb"]), ("mg", "brm", MGMT)):
                far = f"{dev[-1]}{i}"
                n.ip("link", "add", dev, "type", "veth", "peer", "name", far, "netns", self.sw.name)
                n.ip("addr", "add", f"{net}.{i + 1}/24", "dev", dev)
                n.ip("link", "set", dev, "up")
                if dev != "mg":
                    n.run("tc", "qdisc", "add", "dev", dev, "root", *tbf(LINE_RATE))
                self.sw.ip("link", "set", far, "master", br)
                self.sw.ip("link", "set", far, "up")
        return self

    def __exit__(self, *exc):
        if self.prom:
            self.prom.terminate()
            try:
                self.prom.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.prom.kill()
        for d in self.daemons:
            try:
                d.__exit__(*exc)
            except AssertionError as e:
                print(f"FAIL {e}")
        for n in self.nodes:
            n.__exit__(*exc)
        self.sw.__exit__(*exc)

    def write_inventory(self):
        """One file_sd inventory, racks as labels: the daemons' peers and Prometheus' targets."""
        groups = {}
        for i in range(self.count):
            groups.setdefault(rack(i), []).append(target(i))
        with open(inventory_path(self.work), "w") as f:
            json.dump([{"targets": t, "labels": {"rack": r}} for r, t in groups.items()], f, indent=1)
        os.chmod(inventory_path(self.work), 0o644)

    def start_daemons(self):
        self.write_inventory()
        for i, n in enumerate(self.nodes):
            d = rwtest.Daemon(netns=n, config=self.config(i), port=HTTP_PORT,
                              extra=("--listen", f"0.0.0.0:{HTTP_PORT}", "--log-level", "info"))
            d.__enter__()
            self.daemons.append(d)

    def start_prometheus(self):
        inventory = inventory_path(self.work)
        # The shipped rules, with this test's short `for`.
        with open(RULES) as f:
            rules = re.sub(r"^(\s+for:) \S+$", rf"\1 {FOR}", f.read(), flags=re.M)
        with open(os.path.join(self.work, "rules.yml"), "w") as f:
            f.write(rules)
        with open(os.path.join(self.work, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n  evaluation_interval: 2s\n"
                    f"rule_files: ['{self.work}/rules.yml']\n"
                    "scrape_configs:\n  - job_name: rocewatch\n    file_sd_configs:\n"
                    f"      - files: ['{inventory}']\n")
        self.prom_log = open(os.path.join(self.work, "prometheus.log"), "w")
        self.prom = subprocess.Popen(
            ["ip", "netns", "exec", self.sw.name, "prometheus", f"--config.file={self.work}/prometheus.yml",
             f"--storage.tsdb.path={self.work}/tsdb", f"--web.listen-address=127.0.0.1:{self.prom_port}"],
            stdout=self.prom_log, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        args = []
        for k, v in params.items():
            args += ["--data-urlencode", f"{k}={v}"]
        r = self.sw.run("curl", "-sS", "--max-time", "5", "-G", *args,
                        f"http://127.0.0.1:{self.prom_port}{path}", check=False)
        try:
            return json.loads(r.stdout)["data"]
        except (ValueError, KeyError):
            return None

    def query(self, q):
        return self.api("/api/v1/query", query=q) or {"result": []}

    def firing(self):
        data = self.api("/api/v1/alerts") or {"alerts": []}
        return [a for a in data["alerts"] if a["state"] == "firing"]


def describe(a):
    labels = {k: v for k, v in a["labels"].items() if k not in ("severity", "scope", "job")}
    return json.dumps(labels, sort_keys=True)


def run_fault(t, c, name, inject, clear, want, timings, settle=8, during=None, prepare=None):
    """Prepares and injects a fault (timed from the injection), waits for the alert `want(alert)` accepts, checks that every other firing
    alert (the daemons' own forwarded ones aside) is one `want` accepts too, then clears it and
    waits until nothing of the shipped cluster rules fires."""
    print(f"-- fault {name}")
    if prepare:
        prepare()
    t0 = time.monotonic()
    inject()
    right = []

    def fired():
        right[:] = [a for a in c.firing() if want(a)]
        return right
    secs = t.within(fired, 150, f"{name}: the right alert fires")
    if secs is not None:
        timings.append((name, secs))
        for a in right:
            print(f"     {a['labels']['alertname']} {describe(a)}: {a['annotations']['summary']}")
            t.check(a["annotations"].get("summary") and a["annotations"].get("action"),
                    f"{name}: {a['labels']['alertname']} says what and what to do")
        # Watch a while: nothing else is blamed.
        wrong = set()
        end = time.monotonic() + settle
        while time.monotonic() < end:
            for a in c.firing():
                if a["labels"]["alertname"] != DAEMON_ALERT and not want(a):
                    wrong.add(f"{a['labels']['alertname']} {describe(a)}")
            time.sleep(1)
        t.check(not wrong, f"{name}: no one else is blamed {sorted(wrong)}")
        if during:
            during()
    clear()
    print(f"   cleared after {time.monotonic() - t0:.0f} s")

    def quiet():
        return not [a for a in c.firing() if a["labels"]["alertname"] != DAEMON_ALERT]
    t.within(quiet, 120, f"{name}: cleared, the cluster rules go quiet")


def main():
    rwtest.require_root()
    for tool in ("curl", "prometheus", "clang", "tc"):
        rwtest.require(shutil.which(tool), f"needs {tool}")
    rwtest.require(os.path.exists("/dev/net/tun"), "needs /dev/net/tun for the delay line")
    rwtest.require(NODES >= 3 * RACK_SIZE, f"needs at least {3 * RACK_SIZE} nodes (3 racks)")
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-cluster-")
    os.chmod(work, 0o755)
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.chmod(token, 0o600)
    started = time.monotonic()
    timings = []
    # Every BPF program is built before anything starts: a fault that cannot run fails the test.
    drop = bpf_object(work, "drop", MODE=0)
    x, y = 1, 6  # the pair of fault 2: different racks
    pair = bpf_object(work, "pair", MODE=1, A1=ip_le32(f"{RAILS['ra']}.{x + 1}"), A2=ip_le32(f"{RAILS['ra']}.{y + 1}"))
    with Cluster(work, token) as c:
        c.start_daemons()
        c.start_prometheus()
        print(f"{NODES} daemons and Prometheus up after {time.monotonic() - started:.0f} s")

        # Every path on both rails is probed, reachable and measured.
        paths = NODES * ring() * len(RAILS)

        def count(q):
            r = c.query(q)["result"]
            return int(float(r[0]["value"][1])) if r else 0
        t.within(lambda: count("count(rocewatch:path:up == 1)") == paths, 90,
                 f"Prometheus sees all {paths} paths up through the join")
        t.within(lambda: count("count(rocewatch:path:bandwidth_bytes_per_second)") == paths, 90,
                 "every path has a bandwidth figure")
        t.within(lambda: not [a for a in c.firing() if a["labels"]["alertname"] != DAEMON_ALERT], 60,
                 "a healthy cluster: no cluster alert fires")
        for rail in RAILS:
            r = c.query(f'rocewatch:rail:latency_p50_seconds:median{{rail="{rail}",kind="tcp_lat"}}')["result"]
            b = c.query(f'rocewatch:rail:bandwidth_bytes_per_second:median{{rail="{rail}"}}')["result"]
            if r and b:
                print(f"   rail {rail}: median latency {float(r[0]['value'][1]) * 1e6:.0f} us, "
                      f"median bandwidth {float(b[0]['value'][1]) * 8 / 1e9:.2f} Gbit/s")

        # 1. Node 2's rail rb drops everything.
        n = 2
        run_fault(t, c, f"node {target(n)} rail rb dead",
                  lambda: (c.nodes[n].run("tc", "qdisc", "add", "dev", "rb", "clsact"),
                           c.nodes[n].run("tc", "filter", "add", "dev", "rb", "egress", "bpf", "da", "obj", drop,
                                          "sec", "classifier")),
                  lambda: c.nodes[n].run("tc", "qdisc", "del", "dev", "rb", "clsact"),
                  lambda a: a["labels"]["alertname"] == "RocewatchNodeRailDown"
                  and a["labels"].get("instance") == target(n) and a["labels"].get("rail") == "rb",
                  timings)

        # 2. The path between x and y on rail ra drops, both ways (filtered on x's link).
        def inject_pair():
            c.nodes[x].run("tc", "qdisc", "add", "dev", "ra", "clsact")
            for d in ("egress", "ingress"):
                c.nodes[x].run("tc", "filter", "add", "dev", "ra", d, "bpf", "da", "obj", pair, "sec", "classifier")
        run_fault(t, c, f"path {target(x)} <-> {target(y)} rail ra",
                  inject_pair, lambda: c.nodes[x].run("tc", "qdisc", "del", "dev", "ra", "clsact"),
                  lambda a: a["labels"]["alertname"] == "RocewatchPathDown" and a["labels"].get("rail") == "ra"
                  and {a["labels"].get("instance"), a["labels"].get("target_instance")} == {target(x), target(y)},
                  timings)

        # 3. Rack r1's nodes get +5 ms on rail ra: a delay line per node.
        slow = [i for i in range(NODES) if rack(i) == "r1"]
        lines = []
        objs = {}

        def prepare_delay():
            for i in slow:
                p = subprocess.Popen(["ip", "netns", "exec", c.nodes[i].name, sys.executable,
                                      os.path.join(HERE, "delayline.py"), "dl0", "ra", "5"],
                                     stdout=subprocess.PIPE, text=True)
                lines.append(p)
                ifindex = p.stdout.readline().strip()
                if not ifindex.isdigit():
                    raise RuntimeError(f"the delay line in node {i} did not start")
                objs[i] = bpf_object(work, f"delay{i}", MODE=2, IFINDEX=ifindex)

        def inject_delay():
            for i in slow:
                c.nodes[i].run("tc", "qdisc", "add", "dev", "ra", "clsact")
                c.nodes[i].run("tc", "filter", "add", "dev", "ra", "egress", "bpf", "da", "obj", objs[i], "sec",
                               "classifier")

        def clear_delay():
            for i in slow:
                c.nodes[i].run("tc", "qdisc", "del", "dev", "ra", "clsact")
            for p in lines:
                p.terminate()
                p.wait(timeout=5)
        def show_delay():
            for sel in ('rack="r1"', 'rack!="r1"'):
                r = c.query(f'max(rocewatch:node_rail:latency_p50_seconds{{rail="ra",kind="tcp_lat",{sel}}})')["result"]
                if r:
                    print(f"   worst node latency on rail ra, {sel}: {float(r[0]['value'][1]) * 1e3:.2f} ms")
        try:
            run_fault(t, c, "rack r1 +5 ms on rail ra", inject_delay, clear_delay,
                      lambda a: a["labels"]["alertname"] == "RocewatchRackRailSlow"
                      and a["labels"].get("rack") == "r1" and a["labels"].get("rail") == "ra",
                      timings, during=show_delay, prepare=prepare_delay)
        finally:
            for p in lines:  # deleting a namespace does not end the processes in it
                if p.poll() is None:
                    p.kill()
                    p.wait()

        # 4. Node 9's rail ra at a tenth of the line rate.
        n = 9
        tenth = f"{int(LINE_RATE.removesuffix('mbit')) // 10}mbit"
        run_fault(t, c, f"node {target(n)} rail ra at a tenth ({tenth})",
                  lambda: c.nodes[n].run("tc", "qdisc", "replace", "dev", "ra", "root", *tbf(tenth)),
                  lambda: c.nodes[n].run("tc", "qdisc", "replace", "dev", "ra", "root", *tbf(LINE_RATE)),
                  lambda a: a["labels"]["alertname"] == "RocewatchNodeRailBandwidthLow"
                  and a["labels"].get("instance") == target(n) and a["labels"].get("rail") == "ra",
                  timings, settle=4)

        for d in c.daemons:
            t.check(d.proc.poll() is None, f"rocewatchd {d.args[3]} still runs")
    print("fault -> right alert firing in Prometheus:")
    for name, secs in timings:
        print(f"   {name}: {secs:.1f} s")
    print(f"total {time.monotonic() - started:.0f} s for {NODES} daemons")
    shutil.rmtree(work, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
