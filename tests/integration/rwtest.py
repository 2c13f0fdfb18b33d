"""Shared plumbing for rocewatch's end-to-end tests: network namespaces, the real daemon, HTTP."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

SKIP = 77  # meson's "skipped" exit status


def in_ci():
    return os.environ.get("CI", "") not in ("", "0", "false")


def require(cond, why):
    """Outside CI a missing prerequisite skips with a reason; in CI it fails."""
    if cond:
        return
    if in_ci():
        print(f"FAIL: {why} (CI must run this test)")
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def require_root():
    require(os.geteuid() == 0, "needs root for network namespaces")
    require(shutil.which("ip") is not None, "needs iproute2's ip")


def sh(*args, check=True, ns=None, capture=True):
    cmd = list(args)
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    r = subprocess.run(cmd, capture_output=capture, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


class Netns:
    """A private network namespace; deleted (with every link in it) on exit."""

    def __init__(self, tag):
        self.name = f"rw-{tag}-{uuid.uuid4().hex[:6]}"

    def __enter__(self):
        sh("ip", "netns", "add", self.name)
        self.ip("link", "set", "lo", "up")
        return self

    def __exit__(self, *exc):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)

    def ip(self, *args, check=True):
        return sh("ip", "-n", self.name, *args, check=check)

    def run(self, *args, check=True):
        return sh(*args, ns=self.name, check=check)


def dgx_spark_links(node, peer, mtu=9000, p2p_addr=None):
    """The DGX Spark node's three netdevs, as veth pairs whose far ends live in `peer`."""
    layout = [
        ("enp1s0f0np0", "30:c5:99:3e:6a:13", "192.168.100.11/24"),
        ("enp1s0f1np1", "30:c5:99:3e:6a:14", "192.168.200.11/24"),
        ("enP2p1s0f0np0", "30:c5:99:3e:6a:17", p2p_addr),
    ]
    for i, (name, mac, addr) in enumerate(layout):
        far = f"peer{i}"
        node.ip("link", "add", name, "type", "veth", "peer", "name", far, "netns", peer.name)
        node.ip("link", "set", name, "address", mac, "mtu", str(mtu))
        peer.ip("link", "set", far, "mtu", str(mtu), "up")
        if addr:
            node.ip("addr", "add", addr, "dev", name)
        node.ip("link", "set", name, "up")
    # The kernel's linkwatch settles operstate a moment after carrier comes up; tests start from a
    # node whose links are really up.
    def all_up():
        links = json.loads(node.ip("-j", "link", "show").stdout)
        return all(l["operstate"] == "UP" for l in links if l["ifname"] != "lo")
    wait_for(all_up, 5, "veth links to come up")


def tree_links(node, peer, sysfs):
    """One veth for each netdev under sysfs/class/net, named and addressed as the tree has it, its
    far end in peer. The address is the one bench/make_nic_tree.py puts in the port's GID table
    (NIC i: 10.i/250.i%250.11), so each link is in a subnet of its own and its RoCE GIDs match."""
    names = sorted(os.listdir(os.path.join(sysfs, "class", "net")))
    for name in names:
        bus, fn = map(int, re.fullmatch(r"enp(\d+)s0f(\d)np\d", name).groups())
        i = (bus - 1) * 2 + fn
        with open(os.path.join(sysfs, "class", "net", name, "address")) as f:
            mac = f.read().strip()
        far = f"p{i}"
        node.ip("link", "add", name, "type", "veth", "peer", "name", far, "netns", peer.name)
        node.ip("link", "set", name, "address", mac, "mtu", "9000")
        peer.ip("link", "set", far, "mtu", "9000", "up")
        node.ip("addr", "add", f"10.{i // 250}.{i % 250}.11/24", "dev", name)
        node.ip("link", "set", name, "up")
    wait_for(lambda: all(l["operstate"] == "UP" for l in json.loads(node.ip("-j", "link", "show").stdout)
                                if l["ifname"] != "lo"), 30, "veth links to come up")


def enter_netns(ns):
    """Moves this process into ns's network namespace (for tight client loops without curl)."""
    import ctypes
    fd = os.open(f"/run/netns/{ns.name}", os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        os.close(fd)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    """rocewatchd started for real (inside a namespace when given), stopped with SIGTERM."""

    def __init__(self, netns=None, sysfs=None, procfs=None, config=None, port=9879, extra=(), ready_timeout=10,
                 curl_args=None, lldpd_socket=""):
        """curl_args: the daemon serves HTTPS (a web config); every request goes through curl
        with these arguments (--cacert, -u, --cert, ...). lldpd_socket: "" asks no lldpd, so
        that a host's own lldpd (a Unix socket path is not in any network namespace) never
        reaches a test."""
        self.bin = os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd")
        self.state = tempfile.mkdtemp(prefix="rw-state-")
        self.log = tempfile.NamedTemporaryFile(prefix="rw-log-", suffix=".txt", delete=False)
        self.port = port
        self.curl_args = list(curl_args) if curl_args is not None else None
        self.base = f"{'https' if curl_args is not None else 'http'}://127.0.0.1:{port}"
        args = [self.bin, "--listen", f"127.0.0.1:{port}", "--state-dir", self.state, "--log-level", "debug"]
        if sysfs:
            args += ["--sysfs-root", sysfs]
        if procfs:
            args += ["--procfs-root", procfs]
        if config:
            args += ["--config", config]
        args += ["--lldpd-socket", lldpd_socket]
        args += list(extra)
        if netns:
            args = ["ip", "netns", "exec", netns.name] + args
        self.args = args
        self.netns = netns
        self.proc = None
        self.ready_timeout = ready_timeout

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready(self.ready_timeout)
        return self

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.state, ignore_errors=True)
        if exc[0] is not None:
            self.dump_log()
        os.unlink(self.log.name)

    def dump_log(self):
        with open(self.log.name) as f:
            print("---- rocewatchd log ----\n" + f.read()[-6000:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("rocewatchd did not stop within 10 s of SIGTERM")
        return self.proc.returncode if self.proc else None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait_ready(self, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.dump_log()
                raise AssertionError(f"rocewatchd exited with {self.proc.returncode}")
            try:
                if self.get("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.dump_log()
        raise AssertionError("rocewatchd not ready within %ss" % timeout)

    def get(self, path, method="GET", headers=None):
        """(status, body) for a request made from inside the daemon's namespace."""
        if self.netns or self.curl_args is not None:
            hdr = [a for k, v in (headers or {}).items() for a in ("-H", f"{k}: {v}")]
            cmd = ["curl", "-sS", "-X", method, *(self.curl_args or []), *hdr, "-o", "/dev/stdout", "-w",
                   "\n%{http_code}", "--max-time", "5", self.base + path]
            r = self.netns.run(*cmd, check=False) if self.netns else sh(*cmd, check=False)
            if r.returncode != 0:
                raise OSError(r.stderr.strip())
            body, _, code = r.stdout.rpartition("\n")
            return int(code), body
        try:
            req = urllib.request.Request(self.base + path, method=method, headers=headers or {})
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def json(self, path):
        code, body = self.get(path)
        assert code == 200, f"GET {path}: {code} {body}"
        return json.loads(body)

    def alerts(self):
        return {(a["rule"], a["object"]): a for a in self.json("/api/v1/alerts")["alerts"]}


def wait_for(pred, timeout, what, step=0.02):
    """Polls pred until it is truthy; returns (value, seconds taken)."""
    t0 = time.monotonic()
    while True:
        v = pred()
        if v:
            return v, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def peer_toml(name, address, local, remote):
    """A [[peers]] table with one rail, "rail0", from `local` to `remote`."""
    return (f'[[peers]]\nname = "{name}"\naddress = "{address}"\n'
            f'[[peers.rails]]\nname = "rail0"\nlocal_address = "{local}"\nremote_address = "{remote}"\n')


def latest_probe(d, peer_name, kind):
    """The latest result of KIND to PEER_NAME in the daemon's /api/v1/probes, or None."""
    for p in d.json("/api/v1/probes")["probes"]:
        if p["peer"] == peer_name and p["kind"] == kind:
            return p["latest"]
    return None


def mapped_libraries(pid):
    """Basenames of the shared objects process pid has mapped (libssl.so.3, libcrypt.so.1.1.0):
    what the daemon loads on first use, and what it must not load before."""
    with open(f"/proc/{pid}/maps") as f:
        return {line.split()[-1].rsplit("/", 1)[-1] for line in f if ".so" in line}


def fixtures():
    return os.environ.get("ROCEWATCH_FIXTURES", os.path.join(os.path.dirname(__file__), "..", "fixtures"))


class Results:
    """Counts checks and prints a closing line; exits non-zero on any failure."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}")

    def within(self, pred, timeout, what):
        """Checks that pred becomes true within timeout seconds; returns the seconds it took."""
        try:
            _, secs = wait_for(pred, timeout, what)
        except AssertionError:
            self.check(False, f"{what} (not within {timeout} s)")
            return None
        self.check(True, f"{what} ({secs * 1000:.0f} ms)")
        return secs

    def finish(self):
        print(f"{self.passed} checks passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)
