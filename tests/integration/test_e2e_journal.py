#!/usr/bin/env python3
"""End to end: under systemd (JOURNAL_STREAM naming our stderr) every log line carries a priority
journald understands. No journald here: the daemon's journal sink then writes each line to stderr
with the "<N>" prefix that journald's stream reader (SyslogLevelPrefix=yes) takes the priority
from. Checked: alert transitions at their priority (warning firing: 4, critical firing: 3,
resolved: 5), a rejected reload at 3, an unreadable sysfs file logged once."""
import os
import re
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402


def lines(d):
    with open(d.log.name) as f:
        return f.read().splitlines()


def has(d, pattern):
    return [l for l in lines(d) if re.search(pattern, l)]


def main():
    t = rwtest.Results()
    fx = rwtest.fixtures()
    rwtest.require_root()
    rwtest.require(shutil.which("unshare") is not None, "needs util-linux's unshare")
    with rwtest.Netns("jnode") as node, rwtest.Netns("jpeer") as peer:
        rwtest.dgx_spark_links(node, peer)
        cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        cfg.write('[expect]\nrails = ["rocep1s0f0", "rocep1s0f1"]\n'
                  '[rules.peermem_missing]\nfor = "0s"\n'
                  '[rules.netdev_down]\nfor = "0s"\nclear_after = "0s"\n')
        cfg.close()
        d = rwtest.Daemon(netns=node, config=cfg.name, port=rwtest.free_port(),
                          extra=["--sysfs-root", f"{fx}/sysfs/dgx-spark", "--procfs-root", f"{fx}/procfs/dgx-spark"])
        st = os.fstat(d.log.fileno())
        os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
        # Hermetic: where a journald runs, its socket is hidden, so the lines come to our file.
        if os.path.exists("/run/systemd/journal"):
            d.args = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs tmpfs /run/systemd/journal && exec "$@"', "sh",
                      *d.args]
        with d:
            rwtest.wait_for(lambda: has(d, r"^<4>alert peermem_missing nvidia_peermem firing \(warning, node\): "),
                            10, "the warning's firing line at priority 4")
            t.check(True, "a warning alert firing is logged at priority 4 (warning) with rule, object, summary")
            node.ip("link", "set", "enp1s0f0np0", "down")
            rwtest.wait_for(lambda: has(d, r"^<3>alert netdev_down enp1s0f0np0 firing \(critical, node\): \S"), 10,
                            "the critical alert's firing line at priority 3")
            t.check(True, "a critical alert firing is logged at priority 3 (err)")
            node.ip("link", "set", "enp1s0f0np0", "up")
            rwtest.wait_for(lambda: has(d, r"^<5>alert netdev_down enp1s0f0np0 resolved "), 10,
                            "the resolved line at priority 5")
            t.check(True, "a resolved alert is logged at priority 5 (notice)")
            with open(cfg.name, "w") as f:
                f.write('[expect]\nmtu = "big"\n')
            d.signal(signal.SIGHUP)
            rwtest.wait_for(lambda: has(d, r"^<3>config reload rejected: .*expect\.mtu"), 5, "the rejected reload")
            t.check(True, "a rejected reload is logged at priority 3 (err)")
            t.check(d.proc.poll() is None, "the daemon runs on")
            bad = [l for l in lines(d) if not re.match(r"^<[0-7]>\S", l)]
            t.check(not bad and lines(d), f"every line carries a <N> priority prefix ({bad[:3]})")

        # An unreadable sysfs file: logged once at warning, however many cycles read it.
        with open(cfg.name, "w") as f:
            f.write('[daemon]\ninterval = "1s"\n')
        d = rwtest.Daemon(netns=node, config=cfg.name, port=rwtest.free_port(),
                          extra=["--sysfs-root", f"{fx}/sysfs/broken"])
        st = os.fstat(d.log.fileno())
        os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
        if os.path.exists("/run/systemd/journal"):
            d.args = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs tmpfs /run/systemd/journal && exec "$@"', "sh",
                      *d.args]
        with d:
            rwtest.wait_for(lambda: d.json("/api/v1/status")["generation"] >= 3, 10, "three collections")
            warned = has(d, r"^<4>sysfs: .*this file is logged once")
            paths = [re.match(r"^<4>sysfs: (\S+): ", l).group(1) for l in warned]
            t.check(warned, f"unreadable sysfs files are logged at priority 4 ({len(warned)} lines)")
            t.check(len(paths) == len(set(paths)), "each unreadable file is logged once over three collections")
        os.unlink(cfg.name)
    t.finish()


if __name__ == "__main__":
    main()
