#!/usr/bin/env python3
"""Boots the test guests of one scenario under QEMU (TCG) and collects their results.

One to three guests, two rails each. With two, rail r of guest 1 and rail r of guest 2 are
joined by a pair of `-netdev dgram` UDP sockets on 127.0.0.1 (never -netdev socket/stream:
their listening side blocks and froze a guest whose peer stopped reading). With three, each
rail is a switch: every guest's rail NIC talks dgram to its own port of a learning Ethernet
switch this harness runs (RailSwitch), one per rail, as a leaf switch joins a rail's NICs in
a real cluster. A cable pull on one guest (set_link RAIL off NODE) cuts that guest's port
only. No other network:
-nodefaults -nic none. Each guest has a QMP socket; guests ask the host for link changes
(a cable pull is QMP set_link on both ends) through request files in the shared dir.

Cleanup is unconditional: every QEMU this starts is killed by PID (and dies with this
process through PR_SET_PDEATHSIG), the run dir is removed, and net.core.rmem_default is
put back. The logs and results of the last run of each scenario stay in
WORK/results/<scenario>/.
"""

import argparse
import ctypes
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

RAILS = [
    # name, MAC prefix (last byte = node), subnet prefix, MTU, link speed in Mb/s
    ("railA", "52:54:00:0a:00", "10.10.1", 9000, 100000),
    ("railB", "52:54:00:0b:00", "10.10.2", 9000, 100000),
]
RMEM_WANTED = 4 * 1024 * 1024  # UDP sockets drop under load with the 208 KiB default


def log(msg):
    print(f"vm: {msg}", flush=True)


class Failure(Exception):
    pass


class Qmp:
    """Minimal QMP client: one command at a time, events skipped."""

    def __init__(self, path, deadline):
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise Failure(f"QMP socket {path} did not come up")
                time.sleep(0.05)
        self.sock.settimeout(30)
        self.buf = b""
        self._read()  # greeting
        self.command("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Failure("QMP connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def command(self, cmd, **args):
        msg = {"execute": cmd}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:
                continue
            if "error" in reply:
                raise Failure(f"QMP {cmd}: {reply['error']}")
            return reply.get("return")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def scenario_meta(path):
    """Reads '# vm-nodes: N' and '# vm-timeout: S' from the scenario's header."""
    meta = {"nodes": 2, "timeout": 300}
    with open(path) as f:
        for line in f:
            m = re.match(r"#\s*vm-(nodes|timeout):\s*(\d+)", line)
            if m:
                meta[m.group(1)] = int(m.group(2))
    return meta


def free_udp_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class RailSwitch:
    """A learning Ethernet switch for one rail: one UDP socket (switch port) per guest,
    frames in QEMU's dgram framing (one Ethernet frame per datagram). A frame goes to the
    port its destination MAC was last seen on, else (broadcast, multicast, unknown) to every
    other port. Runs on its own thread until stop()."""

    def __init__(self, name, guest_ports):
        self.name = name
        self.socks, self.guest = {}, {}
        for node, guest_port in guest_ports.items():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            # Root may exceed rmem_max: RDMA bursts of 9000-byte frames overflow the default.
            s.setsockopt(socket.SOL_SOCKET, 33, RMEM_WANTED)  # SO_RCVBUFFORCE
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
            self.socks[node] = s
            self.guest[node] = ("127.0.0.1", guest_port)
        self.port_of = {}  # MAC -> node
        self.frames = 0
        self.stopping = False
        self.thread = threading.Thread(target=self.run, name=f"switch-{name}", daemon=True)

    def port(self, node):
        return self.socks[node].getsockname()[1]

    def run(self):
        import select
        by_fd = {s.fileno(): n for n, s in self.socks.items()}
        while not self.stopping:
            ready, _, _ = select.select(list(self.socks.values()), [], [], 0.2)
            for s in ready:
                src_node = by_fd[s.fileno()]
                for _ in range(64):
                    try:
                        frame = s.recv(65536)
                    except (BlockingIOError, OSError):
                        break
                    if len(frame) < 14:
                        continue
                    self.frames += 1
                    dst, src = frame[0:6], frame[6:12]
                    if not src[0] & 1:
                        self.port_of[src] = src_node
                    to = self.port_of.get(dst) if not dst[0] & 1 else None
                    outs = [to] if to is not None else [n for n in self.socks if n != src_node]
                    for n in outs:
                        if n == src_node:
                            continue
                        try:
                            self.socks[n].sendto(frame, self.guest[n])
                        except OSError:
                            pass  # that guest not up yet, or its socket full: a lost frame

    def start(self):
        self.thread.start()

    def stop(self):
        self.stopping = True
        if self.thread.is_alive():
            self.thread.join(2)
        for s in self.socks.values():
            s.close()


def set_pdeathsig():
    # The guest must not outlive the harness, whatever kills the harness.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Harness:
    def __init__(self, args):
        self.args = args
        self.procs = {}  # node -> Popen
        self.qmp = {}
        self.switches = []  # three guests: one RailSwitch per rail
        self.rmem_saved = None
        self.rmem_lock = None
        self.run_dir = None
        self.log_offsets = {}

    # ------------------------------------------------------------ setup

    def prepare(self):
        a = self.args
        runs = os.path.join(a.work, "runs")
        os.makedirs(runs, exist_ok=True)
        remove_stale_runs(runs)
        self.run_dir = tempfile.mkdtemp(prefix=f"{a.scenario}.", dir=runs)
        with open(os.path.join(self.run_dir, "harness.pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        self.shared = os.path.join(self.run_dir, "shared")
        os.makedirs(os.path.join(self.shared, "ctl"))
        os.makedirs(os.path.join(self.shared, "marks"))
        shutil.copytree(a.scenarios, os.path.join(self.shared, "scenarios"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        # Host dirs the guest must still see under its own tmpfs /tmp (see init.sh).
        # The whole build tree (<build>/daemon/rocewatchd -> <build>): the probes scenario also
        # runs tests/unit/probes/rdma_probe_cli from it.
        keep = {os.path.realpath(a.repo), os.path.realpath(os.path.dirname(os.path.dirname(a.rocewatchd)))}
        if os.environ.get("ROCEWATCH_DEB"):  # the package scenario's .deb, often under /tmp
            keep.add(os.path.dirname(os.path.realpath(os.environ["ROCEWATCH_DEB"])))
        keep = sorted(keep)
        env = {
            "RW_NODES": str(a.nodes),
            "RW_SCENARIO": a.scenario,
            "RW_TIMEOUT": str(max(30, a.timeout - 45)),  # the guest gives up before the host does
            "RW_REPO": os.path.realpath(a.repo),
            "ROCEWATCHD": a.rocewatchd,
            # In CI a missing daemon fails the scenario instead of skipping its assertions.
            "RW_CI": os.environ.get("CI", ""),
            "RW_KEEP": ":".join(keep),
            # The package scenario installs this .deb (pkg_deb passes the one it built).
            "RW_DEB": os.path.realpath(os.environ["ROCEWATCH_DEB"]) if os.environ.get("ROCEWATCH_DEB") else "",
        }
        with open(os.path.join(self.shared, "config.env"), "w") as f:
            for k, v in env.items():
                f.write(f"{k}={shlex.quote(v)}\n")
        for node in range(1, a.nodes + 1):
            d = os.path.join(self.shared, f"node{node}")
            os.makedirs(os.path.join(d, "results"))
            with open(os.path.join(d, "net.conf"), "w") as f:
                for name, mac, subnet, mtu, _ in RAILS:
                    f.write(f"{name} {mac}:{node:02x} {subnet}.{node}/24 {mtu}\n")

    def qemu_cmd(self, node, ports):
        a = self.args
        cmd = [
            a.qemu, "-name", f"rocewatch-{a.scenario}-node{node}",
            "-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", str(a.mem),
            "-nodefaults", "-nic", "none", "-no-user-config", "-display", "none", "-no-reboot",
            "-serial", f"file:{self.run_dir}/node{node}.console",
            "-kernel", a.kernel, "-initrd", a.initrd,
            "-append", f"console=ttyS0 panic=1 mitigations=off quiet loglevel=4 rw.node={node}",
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={self.shared},mount_tag=shared,security_model=none",
            "-qmp", f"unix:{self.run_dir}/node{node}.qmp,server=on,wait=off",
            "-pidfile", f"{self.run_dir}/node{node}.pid",
        ]
        for r, (name, mac, _, _, speed) in enumerate(RAILS):
            local, remote = ports[(r, node)]
            cmd += [
                "-netdev", f"dgram,id={name},local.type=inet,local.host=127.0.0.1,local.port={local},"
                           f"remote.type=inet,remote.host=127.0.0.1,remote.port={remote}",
                # A stated link speed: rxe derives its port rate from it (unknown speed
                # reads as 2.5 Gb/sec and makes the kernel warn on every rate read).
                "-device", f"virtio-net-pci,netdev={name},id=nic-{name},mac={mac}:{node:02x},"
                           f"speed={speed},duplex=full",
            ]
        return cmd

    def start(self):
        a = self.args
        # Rail r: node1 <-> node2 over two ports; a lone guest points at a port nobody holds;
        # three guests each talk to their port of the rail's switch.
        plist = free_udp_ports(len(RAILS) * 3)
        ports = {}
        for r in range(len(RAILS)):
            p1, p2, spare = plist[3 * r: 3 * r + 3]
            if a.nodes <= 2:
                ports[(r, 1)] = (p1, p2 if a.nodes > 1 else spare)
                ports[(r, 2)] = (p2, p1)
                continue
            sw = RailSwitch(RAILS[r][0], {1: p1, 2: p2, 3: spare})
            self.switches.append(sw)
            for node in (1, 2, 3):
                ports[(r, node)] = ({1: p1, 2: p2, 3: spare}[node], sw.port(node))
            sw.start()
        # rmem_default applies to sockets as they are created: raise it while QEMU opens
        # its dgram sockets, then put it back. The lock keeps two harnesses from
        # restoring each other's raised value.
        self.rmem_lock = open(os.path.join(a.work, "rmem.lock"), "w")
        fcntl.flock(self.rmem_lock, fcntl.LOCK_EX)
        self.rmem_file = os.path.join(a.work, "rmem_default.saved")
        if os.path.exists(self.rmem_file):
            # a harness was killed (SIGKILL) inside this window: put its value back first
            write_int("/proc/sys/net/core/rmem_default", read_int(self.rmem_file))
        self.rmem_saved = read_int("/proc/sys/net/core/rmem_default")
        if self.rmem_saved < RMEM_WANTED:
            write_int(self.rmem_file, self.rmem_saved)
            write_int("/proc/sys/net/core/rmem_default", RMEM_WANTED)
        try:
            for node in range(1, a.nodes + 1):
                cmd = self.qemu_cmd(node, ports)
                with open(os.path.join(self.run_dir, f"node{node}.cmd"), "w") as f:
                    f.write(shlex.join(cmd) + "\n")
                err = open(os.path.join(self.run_dir, f"node{node}.qemu.log"), "w")
                self.procs[node] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err,
                                                    stderr=subprocess.STDOUT, preexec_fn=set_pdeathsig)
                log(f"node{node}: qemu pid {self.procs[node].pid}")
            deadline = time.monotonic() + 30
            for node in self.procs:
                # QMP answers once the machine (and its netdev sockets) exists.
                self.qmp[node] = Qmp(os.path.join(self.run_dir, f"node{node}.qmp"), deadline)
        finally:
            self.restore_rmem()

    def restore_rmem(self):
        if self.rmem_saved is not None:
            if self.rmem_saved < RMEM_WANTED:
                write_int("/proc/sys/net/core/rmem_default", self.rmem_saved)
                os.unlink(self.rmem_file)
            self.rmem_saved = None
        if self.rmem_lock:
            self.rmem_lock.close()
            self.rmem_lock = None

    # ------------------------------------------------------------ run

    def stream_logs(self, final=False):
        for node in range(1, self.args.nodes + 1):
            for name in ("init.log", "log"):
                path = os.path.join(self.shared, f"node{node}", name)
                off = self.log_offsets.get(path, 0)
                try:
                    with open(path, "rb") as f:
                        f.seek(off)
                        data = f.read()
                except OSError:
                    continue
                if not final:
                    data = data[: data.rfind(b"\n") + 1]
                self.log_offsets[path] = off + len(data)
                for line in data.decode(errors="replace").splitlines():
                    print(f"[node{node}] {line}", flush=True)

    def handle_requests(self):
        ctl = os.path.join(self.shared, "ctl")
        for name in sorted(os.listdir(ctl)):
            if not name.endswith(".req"):
                continue
            base = name[:-4]
            done = os.path.join(ctl, base + ".done")
            if os.path.exists(done):
                continue
            with open(os.path.join(ctl, name)) as f:
                text = f.read()
            if not text.endswith("\n"):
                continue  # still being written: one line, newline-terminated
            words = text.split()
            try:
                result = self.do_request(words)
            except Failure as e:
                result = f"error {e}"
            if words != ["clock"]:
                log(f"request {base}: {' '.join(words)} -> {result}")
            with open(done + ".tmp", "w") as f:
                f.write(result + "\n")
            os.rename(done + ".tmp", done)

    def do_request(self, words):
        # set_link RAIL on|off [NODE...]   (no NODE: every guest, i.e. both cable ends)
        #   -> "ok US_BEFORE US_AFTER": this host's clock (epoch microseconds) just before
        #      the first QMP command and just after the last, for the guests to time from.
        # clock -> "ok US": this host's clock, for a guest to measure its own offset.
        if len(words) >= 3 and words[0] == "set_link" and words[2] in ("on", "off"):
            rail, up = words[1], words[2] == "on"
            if rail not in [r[0] for r in RAILS]:
                raise Failure(f"unknown rail {rail}")
            nodes = [int(n) for n in words[3:]] or sorted(self.qmp)
            for n in nodes:
                if n not in self.qmp:
                    raise Failure(f"no node {n}")
            before = time.time_ns() // 1000
            for n in nodes:
                self.qmp[n].command("set_link", name=f"nic-{rail}", up=up)
            return f"ok {before} {time.time_ns() // 1000}"
        if words == ["clock"]:
            return f"ok {time.time_ns() // 1000}"
        raise Failure(f"unknown request {' '.join(words)!r}")

    def run(self):
        a = self.args
        t0 = time.monotonic()
        deadline = t0 + a.timeout
        rcs = {}
        while True:
            self.stream_logs()
            self.handle_requests()
            for node, p in self.procs.items():
                if node in rcs:
                    continue
                if p.poll() is not None:
                    rcs[node] = read_rc(os.path.join(self.shared, f"node{node}", "rc"))
                    log(f"node{node}: powered off after {time.monotonic() - t0:.1f} s, "
                        f"scenario exit status {rcs[node] if rcs[node] is not None else 'missing'}")
            if len(rcs) == len(self.procs):
                break
            if time.monotonic() > deadline:
                log(f"TIMEOUT after {a.timeout} s: killing the guests")
                for node in self.procs:
                    rcs.setdefault(node, None)
                break
            time.sleep(0.05)
        self.stream_logs(final=True)
        return rcs, time.monotonic() - t0

    # ------------------------------------------------------------ teardown

    def kill_all(self):
        for q in self.qmp.values():
            q.close()
        for node, p in self.procs.items():
            if p.poll() is None:
                p.terminate()
        end = time.monotonic() + 5
        for node, p in self.procs.items():
            try:
                p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def collect(self):
        dest = os.path.join(self.args.work, "results", self.args.scenario)
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        for node in range(1, self.args.nodes + 1):
            src = os.path.join(self.shared, f"node{node}")
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(dest, f"node{node}"), symlinks=True)
            for suffix in ("console", "qemu.log", "cmd"):
                f = os.path.join(self.run_dir, f"node{node}.{suffix}")
                if os.path.exists(f):
                    shutil.copy(f, dest)
        return dest

    def cleanup(self):
        self.kill_all()
        for sw in self.switches:
            log(f"switch {sw.name}: {sw.frames} frames, {len(sw.port_of)} MACs learned")
            sw.stop()
        self.restore_rmem()
        dest = None
        if self.run_dir and os.path.isdir(self.run_dir):
            try:
                dest = self.collect()
            finally:
                shutil.rmtree(self.run_dir, ignore_errors=True)
        return dest


def remove_stale_runs(runs):
    """Run dirs of harnesses that died without cleaning up (SIGKILL): their guests died
    with them (PR_SET_PDEATHSIG), only the files are left."""
    for name in os.listdir(runs):
        d = os.path.join(runs, name)
        try:
            with open(os.path.join(d, "harness.pid")) as f:
                pid = int(f.read())
            os.kill(pid, 0)
            continue  # a live harness owns it
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            # no pid file yet: being created right now, or debris; leave young ones alone
            if time.time() - os.path.getmtime(d) < 3600:
                continue
        shutil.rmtree(d, ignore_errors=True)


def read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


def write_int(path, v):
    with open(path, "w") as f:
        f.write(f"{v}\n")


def read_rc(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--nodes", type=int, help="guests (default: the scenario's vm-nodes)")
    ap.add_argument("--timeout", type=int, help="hard limit in seconds (default: vm-timeout)")
    ap.add_argument("--mem", type=int, default=1024, help="MiB per guest")
    ap.add_argument("--work", default=os.environ.get("ROCEWATCH_VM_WORK", "/tmp/rocewatch-vm"))
    ap.add_argument("--repo", default=repo)
    ap.add_argument("--rocewatchd", default=os.environ.get("ROCEWATCHD", os.path.join(repo, "build", "daemon", "rocewatchd")))
    ap.add_argument("--scenarios", default=os.path.join(here, "scenarios"))
    ap.add_argument("--qemu", default=shutil.which("qemu-system-x86_64") or "qemu-system-x86_64")
    a = ap.parse_args()
    script = os.path.join(a.scenarios, a.scenario + ".sh")
    if not os.path.exists(script):
        ap.error(f"no scenario {script}")
    meta = scenario_meta(script)
    a.nodes = a.nodes or meta["nodes"]
    a.timeout = a.timeout or meta["timeout"]
    if a.nodes not in (1, 2, 3):
        ap.error("1 to 3 guests")
    a.work = os.path.abspath(a.work)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)

    h = Harness(a)
    rcs, elapsed, dest, status = {}, 0.0, None, None
    try:
        h.prepare()
        log(f"scenario {a.scenario}: {a.nodes} guest(s), limit {a.timeout} s, run dir {h.run_dir}, "
            f"host load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        h.start()
        rcs, elapsed = h.run()
    except SystemExit as e:
        log(f"stopped by signal {e.code - 128}: killing the guests")
        rcs, status = {}, e.code
    except Failure as e:
        log(f"error: {e}")
    except Exception as e:  # the guests still go, and the run still reports
        log(f"harness error: {e!r}")
        import traceback
        traceback.print_exc()
    finally:
        dest = h.cleanup()
    for node in range(1, a.nodes + 1):
        if dest and rcs.get(node) is None:
            # No exit status from the guest: what QEMU and the console said is the clue.
            for name in (f"node{node}.qemu.log", f"node{node}.console", os.path.join(f"node{node}", "init.log")):
                path = os.path.join(dest, name)
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        tail = f.readlines()[-15:]
                    print(f"---- {name} (last lines) ----")
                    sys.stdout.write("".join(tail))
        summary = os.path.join(dest or "", f"node{node}", "results", "summary.txt")
        if dest and os.path.exists(summary):
            print(f"---- node{node} summary ----")
            with open(summary) as f:
                sys.stdout.write(f.read())
    ok = bool(rcs) and all(rc == 0 for rc in rcs.values())
    per_node = ", ".join(f"node{n}={'none' if rc is None else rc}" for n, rc in sorted(rcs.items()))
    log(f"scenario {a.scenario}: {'PASS' if ok else 'FAIL'} in {elapsed:.1f} s, host load {os.getloadavg()[0]:.1f} "
        f"(exit status per node: {per_node or 'none'}); logs in {dest}")
    if status is not None:
        return status
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
