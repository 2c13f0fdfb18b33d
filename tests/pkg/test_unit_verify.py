#!/usr/bin/env python3
"""The unit as `meson install` puts it: installed into a temporary DESTDIR (never the host's
/etc or /lib), then `systemd-analyze verify` on it with the installed binary and man pages
(unit_verify.py), so that Documentation=man:rocewatchd(8) must resolve and ExecStart= must name
the installed binary. Also: the unit's --config is the installed example config.

Usage: test_unit_verify.py BUILD_DIR. Needs root (a private mount namespace): skips (77)
without it or without systemd-analyze and man, fails instead with CI=true.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from unit_verify import verify

build = Path(sys.argv[1]).resolve()
CI = os.environ.get("CI") in ("true", "1")

missing = [t for t in ("systemd-analyze", "man", "unshare") if not shutil.which(t)]
if os.geteuid() != 0:
    missing.append("root")
if missing:
    print(f"{'FAIL' if CI else 'SKIP'}: missing {', '.join(missing)} (scripts/deps.sh test installs them)")
    sys.exit(1 if CI else 77)

failures = []
with tempfile.TemporaryDirectory(prefix="rocewatch-destdir-") as d:
    dest = Path(d)
    r = subprocess.run(["meson", "install", "-C", str(build), "--no-rebuild", "--quiet", "--destdir", str(dest)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: meson install --destdir: {r.stdout}{r.stderr}")
    units = list(dest.rglob("rocewatchd.service"))
    if len(units) != 1:
        sys.exit(f"FAIL: expected one installed rocewatchd.service, found {units}")
    unit = "/" + str(units[0].relative_to(dest))
    text = units[0].read_text()
    cfg = re.search(r"^ExecStart=\S+ --config (\S+)", text, re.M)
    if cfg and (dest / cfg.group(1).lstrip("/")).is_file():
        print(f"ok: the unit's --config {cfg.group(1)} is installed")
    else:
        failures.append(f"the unit's --config ({cfg.group(1) if cfg else 'none'}) is not installed")
    mans = sorted({p.parent.parent for p in dest.rglob("rocewatchd.8")})
    if not mans:
        # The man pages need scdoc (-Dman=auto leaves them out without it).
        print(f"{'FAIL' if CI else 'SKIP'}: no rocewatchd.8 installed (scdoc missing?)")
        sys.exit(1 if CI else 77)
    if len(mans) != 1:
        sys.exit(f"FAIL: expected rocewatchd.8 installed once, found {mans}")
    rc, out = verify(units[0], dest, mans[0])
    print(f"systemd-analyze verify {unit} (binary and man pages from the DESTDIR): exit {rc}")
    if rc != 0 or out:
        failures.append(f"systemd-analyze verify: {out}")
for f in failures:
    print("FAIL:", f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
