"""systemd-analyze verify of an installed unit that lives in a tree other than / (a DESTDIR, an
unpacked .deb), hermetically: in a private mount namespace the tree's directory of the
ExecStart= binary is bind-mounted over the host's (verify checks that the binary exists and is
executable there), and MANPATH is the tree's man directory (verify runs `man` for every
Documentation=man:...). The host's own directories are never written. Needs root (unshare -m)."""
import os
import re
import shlex
import subprocess
from pathlib import Path


def verify(unit: Path, tree: Path, mandir: Path):
    """(exit status, output) of systemd-analyze verify UNIT."""
    exe = re.search(r"^ExecStart=[-@:+!]*(\S+)", unit.read_text(), re.M).group(1)
    bindir = os.path.dirname(exe)
    inner = (f"mount --bind {shlex.quote(str(tree) + bindir)} {shlex.quote(bindir)} && "
             f"exec systemd-analyze verify {shlex.quote(str(unit))}")
    env = dict(os.environ, MANPATH=str(mandir), SYSTEMD_LOG_LEVEL="notice")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", inner], capture_output=True,
                       text=True, env=env)
    return r.returncode, (r.stdout + r.stderr).strip()
