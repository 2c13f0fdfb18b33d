#!/usr/bin/env python3
"""End to end, alert state across crashes: a daemon whose alerts keep changing is SIGKILLed at
random moments and restarted on the same --state-dir; its state file must always parse, keep every
transition the API had shown, and leave no tmp files behind. A bad state file is set aside, named,
and shown, never a crash or a silent reset."""
import datetime
import glob
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

KILLS = int(os.environ.get("ROCEWATCH_STATE_KILLS", "25"))

# A short interval and clear_after so that flapping links make transitions every second.
CONFIG = """
[daemon]
interval = "1s"
history_limit = 100000
[expect]
rails = ["rocep1s0f0", "rocep1s0f1"]
ignore_devices = ["roceP2p1s0f0"]
[rules.peermem_missing]
enabled = false
[rules.netdev_down]
clear_after = "1s"
[rules.port_down]
clear_after = "1s"
"""


def start(node, fx, config, state_dir, port):
    """A daemon on state_dir (kept across restarts, unlike rwtest.Daemon's own)."""
    d = rwtest.Daemon(netns=node, sysfs=f"{fx}/sysfs/dgx-spark", procfs=f"{fx}/procfs/dgx-spark",
                      config=config, port=port)
    os.rmdir(d.state)
    d.state = state_dir
    d.args[d.args.index("--state-dir") + 1] = state_dir
    d.proc = subprocess.Popen(d.args, stdout=d.log, stderr=subprocess.STDOUT)
    d.wait_ready()
    return d


def rfc3339(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def key(at, h):
    return (at, h["rule"], h["object"], h["from"], h["to"])


def file_history(state_dir):
    """The transitions in alerts.json, or raises: it must always parse."""
    with open(os.path.join(state_dir, "alerts.json")) as f:
        j = json.load(f)
    return {key(rfc3339(h["at_ms"]), h) for h in j["history"]}, j


class Flapper(threading.Thread):
    """Takes the rails down and up at random, so the daemon always has transitions to write."""

    def __init__(self, node):
        super().__init__(daemon=True)
        self.node, self.stop = node, threading.Event()

    def run(self):
        links = ["enp1s0f0np0", "enp1s0f1np1"]
        while not self.stop.is_set():
            dev = random.choice(links)
            self.node.ip("link", "set", dev, "down", check=False)
            self.stop.wait(random.uniform(0.05, 0.4))
            self.node.ip("link", "set", dev, "up", check=False)
            self.stop.wait(random.uniform(0.05, 0.6))


def kill_loop(t, node, fx, config):
    state_dir = tempfile.mkdtemp(prefix="rw-state-kill-")
    seen_before = set()
    flap = Flapper(node)
    flap.start()
    entries_per_run, lost, stray = [], [], []
    try:
        for i in range(KILLS):
            d = start(node, fx, config, state_dir, port=9879)
            try:
                restored = {key(h["changed_at"], h) for h in d.json("/api/v1/alerts/history")["history"]}
                if not seen_before <= restored:
                    lost.append(f"restart {i}: {len(seen_before - restored)} transitions not restored")
                # Poll the API until a random moment, then kill: anything the API showed was saved
                # first (the engine saves before it publishes a snapshot). The random moment counts
                # from the first transition this run shows that no run showed before (at most 5 s),
                # so every kill lands while the daemon has been writing, however loaded the box is.
                fresh_by = time.monotonic() + 5.0
                deadline = None
                while deadline is None or time.monotonic() < deadline:
                    if deadline is None and time.monotonic() >= fresh_by:
                        deadline = time.monotonic()
                    try:
                        hist = d.json("/api/v1/alerts/history")["history"]
                        now_seen = {key(h["changed_at"], h) for h in hist}
                        if deadline is None and not now_seen <= seen_before:
                            deadline = time.monotonic() + random.uniform(0.0, 2.0)
                        seen_before |= now_seen
                    except (OSError, AssertionError):
                        pass
                    time.sleep(random.uniform(0, 0.05))
                d.proc.send_signal(signal.SIGKILL)
                d.proc.wait()
            finally:
                if d.proc.poll() is None:
                    d.proc.kill()
                    d.proc.wait()
                os.unlink(d.log.name)
            try:
                in_file, _ = file_history(state_dir)
            except (OSError, ValueError, KeyError) as e:
                t.check(False, f"kill {i}: alerts.json does not parse: {e}")
                return
            entries_per_run.append(len(in_file))
            if not seen_before <= in_file:
                lost.append(f"kill {i}: {sorted(seen_before - in_file)[:3]} shown by the API but not in the file")
            extra = sorted(set(os.listdir(state_dir)) - {"alerts.json", "alerts.json.tmp"})
            if extra:
                stray.append(f"kill {i}: {extra}")
    finally:
        flap.stop.set()
        flap.join()
    t.check(True, f"alerts.json parsed after each of {KILLS} SIGKILLs")
    # Not vacuous: transitions kept coming while the kills went on (each run waits for a new one
    # before its kill; 5 s without one is a broken flapper or collector, and shows up here).
    t.check(len(seen_before) >= KILLS * 3 // 4 and entries_per_run[-1] > entries_per_run[0],
            f"alerts kept changing: {len(seen_before)} transitions seen, file grew "
            f"{entries_per_run[0]} -> {entries_per_run[-1]}")
    t.check(not lost, f"no transition the API showed was lost ({lost[:3]})")
    t.check(not stray, f"no tmp or other files accumulate in the state dir ({stray[:3]})")
    subprocess.run(["rm", "-rf", state_dir])


def state_collector(d):
    return next((c for c in d.json("/api/v1/status")["collectors"] if c["name"] == "state"), {})


def bad_file_is_set_aside(t, node, fx, config, name, text):
    state_dir = tempfile.mkdtemp(prefix="rw-state-bad-")
    with open(os.path.join(state_dir, "alerts.json"), "wb") as f:
        f.write(text)
    try:
        d = start(node, fx, config, state_dir, port=9879)
    except AssertionError as e:
        t.check(False, f"{name}: the daemon starts on a bad state file ({e})")
        return
    try:
        aside = glob.glob(os.path.join(state_dir, "alerts.json.corrupt-*"))
        t.check(len(aside) == 1 and re.search(r"corrupt-\d{8}T\d{6}Z$", aside[0]),
                f"{name}: set aside under a dated name ({[os.path.basename(a) for a in aside]})")
        if aside:
            with open(aside[0], "rb") as f:
                t.check(f.read() == text, f"{name}: the set-aside file is the bad file, byte for byte")
        c = state_collector(d)
        t.check(c.get("success") is False and "set aside as" in (c.get("last_error") or ""),
                f"{name}: /api/v1/status shows it in the state collector ({c})")
        _, metrics = d.get("/metrics")
        t.check('rocewatch_collector_success{collector="state"} 0' in metrics,
                f"{name}: rocewatch_collector_success{{collector=\"state\"}} is 0")
        with open(d.log.name) as f:
            log = f.read()
        t.check("alert state not restored" in log and "set aside as" in log,
                f"{name}: the log says the state was not restored and where the file went")
        # A transition later, the state is saved again and the collector recovers; the evidence stays.
        node.ip("link", "set", "enp1s0f0np0", "down")
        t.within(lambda: state_collector(d).get("success") and os.path.exists(os.path.join(state_dir, "alerts.json")),
                 10, f"{name}: the next transition is saved and the state collector recovers")
        node.ip("link", "set", "enp1s0f0np0", "up")
        # The next case starts from a quiet node, so no transition hides the load error behind a save.
        rwtest.wait_for(lambda: d.alerts() == {}, 15, "the node to settle")
        t.check(len(glob.glob(os.path.join(state_dir, "alerts.json.corrupt-*"))) == 1,
                f"{name}: the set-aside file is still there after saving")
        d.stop()
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        os.unlink(d.log.name)
        subprocess.run(["rm", "-rf", state_dir])


def main():
    rwtest.require_root()
    t = rwtest.Results()
    fx = rwtest.fixtures()
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(CONFIG)
    with rwtest.Netns("node") as node, rwtest.Netns("peer") as peer:
        rwtest.dgx_spark_links(node, peer)
        bad = [
            ("truncated JSON", b'{"version": 1, "alerts": [], "history": [{"at_ms": 17'),
            ("garbage", b"\x7fELF\x00\xff\xfe not json at all"),
            ("wrong-type JSON", b'{"version": 1, "alerts": "none", "history": {}}'),
        ]
        for name, text in bad:
            bad_file_is_set_aside(t, node, fx, f.name, name, text)
        kill_loop(t, node, fx, f.name)
    os.unlink(f.name)
    t.finish()


if __name__ == "__main__":
    main()
