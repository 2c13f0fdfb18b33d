#!/usr/bin/env python3
"""The Debian package, built as a user would: a clean copy of the tree (the files git tracks
or would track) in a temporary directory, `dpkg-buildpackage -b -us -uc`, then the .deb is
held to what it must hold (dpkg-deb -c, its conffiles and maintainer scripts), its unit
passes `systemd-analyze verify` with its own binary and man pages (unit_verify.py), its config passes --check-config, and
lintian reports no error and no warning that debian/*.lintian-overrides does not explain;
last, tests/vm/scenarios/package.sh installs it with apt in a QEMU guest under systemd, checks
the service it starts, reloads it, and purges it (nothing may be left behind).

Usage: test_pkg_deb.py SOURCE_ROOT. Skips (77) without the tools or root, or fails with CI=true.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from unit_verify import verify

src = Path(sys.argv[1]).resolve()
CI = os.environ.get("CI") in ("true", "1")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def ok(msg):
    print("ok:", msg, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


missing = [t for t in ("dpkg-buildpackage", "dpkg-checkbuilddeps", "dh", "lintian", "systemd-analyze", "man", "git",
                       "unshare") if not shutil.which(t)]
if os.geteuid() != 0:
    missing.append("root (systemd-analyze verify in a private mount namespace)")
if missing:
    print(f"{'FAIL' if CI else 'SKIP'}: missing {', '.join(missing)} (scripts/deps.sh test installs them)")
    sys.exit(1 if CI else 77)
r = run(["dpkg-checkbuilddeps", "debian/control"], cwd=src)
if r.returncode != 0:
    print(f"{'FAIL' if CI else 'SKIP'}: build dependencies missing: {r.stderr.strip()}")
    sys.exit(1 if CI else 77)

version = re.match(r"\S+ \(([^)]+)\)", (src / "debian/changelog").read_text()).group(1)
# A fixed directory per source tree: Debian's flags carry -ffile-prefix-map=<tree>=., so ccache
# hits from one run to the next only when the tree's path is the same (a fresh mkdtemp path
# made every compile a miss).
tmp = Path(tempfile.gettempdir()) / f"rocewatch-pkg-{os.getuid()}-{hashlib.sha1(str(src).encode()).hexdigest()[:12]}"
shutil.rmtree(tmp, ignore_errors=True)
tmp.mkdir()
tree = tmp / f"rocewatch-{version}"
try:
    if os.environ.get("ROCEWATCH_PKG_DEB"):
        # Checks a .deb built before (no build): for a change to the checks alone.
        deb, tree = Path(os.environ["ROCEWATCH_PKG_DEB"]).resolve(), src
        print(f"ROCEWATCH_PKG_DEB: checking {deb}, not building")
    else:
        # The clean tree: tracked files and untracked ones git does not ignore (no build dirs).
        files = run(["git", "-C", str(src), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                    check=True).stdout.split("\0")
        for f in filter(None, files):
            s = src / f
            if s.is_file() and not s.is_symlink():
                (tree / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(s, tree / f)
        env = dict(os.environ)
        if shutil.which("ccache"):
            # The same objects from run to run, wherever the temporary tree is.
            env.update(PATH="/usr/lib/ccache:" + env["PATH"], CCACHE_BASEDIR=str(tmp), CCACHE_NOHASHDIR="1")
        env.setdefault("DEB_BUILD_OPTIONS", f"parallel={os.environ.get('ROCEWATCH_PKG_JOBS', '2')}")
        t0 = time.monotonic()
        with open(tmp / "build.log", "w") as log:
            b = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=tree, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
        print(f"dpkg-buildpackage: exit {b.returncode} after {time.monotonic() - t0:.0f} s", flush=True)
        if b.returncode != 0:
            print("".join((tmp / "build.log").read_text().splitlines(keepends=True)[-60:]))
            sys.exit("FAIL: dpkg-buildpackage -b -us -uc")
        debs = sorted(tmp.glob(f"rocewatch_{version}_*.deb"))
        if len(debs) != 1:
            sys.exit(f"FAIL: expected one rocewatch_{version}_*.deb, found {[d.name for d in tmp.iterdir()]}")
        deb = debs[0]
        ok(f"built {deb.name} ({deb.stat().st_size} bytes)")

    # OpenSSL and libcrypt are loaded with dlopen when TLS or basic auth is configured, nettle
    # when the probe data port opens: dpkg-shlibdeps cannot see them, so the control file names
    # them. liblldpctl, loaded once lldpd answers, ships in lldpd itself: the package must not
    # pull in an LLDP daemon.
    def field_names(field):
        value = run(["dpkg-deb", "-f", str(deb), field], check=True).stdout
        return value, {alt.strip().split()[0] for dep in value.split(",") for alt in dep.split("|") if alt.strip()}
    depends, names = field_names("Depends")
    for lib in ("libssl3", "libcrypt1", "libnettle8"):
        if lib in names:
            ok(f"Depends names {lib} (loaded on first use, not linked)")
        else:
            fail(f"Depends lacks {lib}: {depends.strip()}")
    if "lldpd" in names:
        fail(f"Depends names lldpd, which installs and starts an LLDP daemon: {depends.strip()}")
    elif "lldpd" in field_names("Suggests")[1]:
        ok("lldpd (liblldpctl with it) is suggested, not a dependency")
    else:
        fail("Suggests does not name lldpd")

    # What it holds.
    listing = run(["dpkg-deb", "-c", str(deb)], check=True).stdout
    paths = {line.split()[5].removeprefix(".") for line in listing.splitlines()}
    paths = {p.rstrip("/") for p in paths}
    for want in ["/usr/sbin/rocewatchd", "/etc/rocewatch/rocewatch.toml", "/lib/systemd/system/rocewatchd.service",
                 "/usr/share/man/man8/rocewatchd.8.gz", "/usr/share/man/man5/rocewatch.toml.5.gz",
                 "/usr/share/doc/rocewatch/copyright"]:
        if want in paths:
            ok(f"holds {want}")
        else:
            fail(f"{deb.name} lacks {want}")
    for d in ("prometheus", "grafana"):
        shipped = {p for p in paths if p.startswith(f"/usr/share/rocewatch/{d}/")}
        if (tree / d).is_dir():
            # The rules and dashboards: the YAML and JSON outside tests/, not build files or scripts.
            want = {f"/usr/share/rocewatch/{p.relative_to(tree)}" for p in (tree / d).rglob("*")
                    if p.suffix in (".yml", ".yaml", ".json") and "tests" not in p.relative_to(tree).parts}
            extra = sorted(p for p in shipped if p.endswith((".py", "meson.build")) or "/tests/" in p)
            if extra:
                fail(f"{d}/: build files, scripts or tests in the package: {extra}")
            if want - shipped:
                fail(f"{d}/ in the tree, not in the package: {sorted(want - shipped)}")
            else:
                ok(f"holds {d}/ under /usr/share/rocewatch ({len(want)} entries)")
        elif shipped:
            fail(f"no {d}/ in the tree, yet the package has {sorted(shipped)}")
        else:
            ok(f"no {d}/ in the tree, none in the package")
    stray = sorted(p for p in paths if p.startswith("/usr/local") or p.startswith("/usr/lib/systemd"))
    if stray:
        fail(f"files outside Debian's paths: {stray}")

    # Control: conffiles and the unit enabled and started by dh_installsystemd.
    ctrl = tmp / "control"
    run(["dpkg-deb", "-e", str(deb), str(ctrl)], check=True)
    conffiles = (ctrl / "conffiles").read_text().split() if (ctrl / "conffiles").exists() else []
    if conffiles == ["/etc/rocewatch/rocewatch.toml"]:
        ok("conffiles: /etc/rocewatch/rocewatch.toml")
    else:
        fail(f"conffiles: {conffiles}, expected only /etc/rocewatch/rocewatch.toml")
    postinst = (ctrl / "postinst").read_text() if (ctrl / "postinst").exists() else ""
    for what, pattern in [("enables the unit", r"deb-systemd-helper .*enable.*rocewatchd\.service"),
                          # deb-systemd-invoke $_dh_action: start on install, restart on upgrade
                          ("starts the unit", r"_dh_action=start(.|\n)*deb-systemd-invoke \$_dh_action 'rocewatchd\.service'")]:
        if re.search(pattern, postinst):
            ok(f"postinst {what}")
        else:
            fail(f"postinst does not show that it {what} (/{pattern}/)")

    # The unit as installed, with the package's man pages for Documentation=man:...
    root = tmp / "root"
    run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    unit = root / "lib/systemd/system/rocewatchd.service"
    text = unit.read_text()
    for want in ["ExecStart=/usr/sbin/rocewatchd --config /etc/rocewatch/rocewatch.toml ",
                 "Documentation=man:rocewatchd(8)"]:
        if want in text:
            ok(f"unit: {want.strip()}")
        else:
            fail(f"unit lacks '{want.strip()}'")
    for doc in re.findall(r"file://(\S+)", text):
        if (root / doc.lstrip("/")).is_file():
            ok(f"unit: Documentation=file://{doc} is in the package")
        else:
            fail(f"unit: Documentation=file://{doc} is not in the package (compressed?)")
    rc, out = verify(unit, root, root / "usr/share/man")
    if rc == 0 and not out:
        ok("systemd-analyze verify: clean (binary and man pages from the package)")
    else:
        fail(f"systemd-analyze verify: exit {rc}: {out}")
    # The code a running daemon uses, put together by the linker (-Dhot_text=true, daemon/hot_text.ld).
    # Its names are those of the functions LTO built when the script was written: as the code
    # changes, fewer of them match, and the group shrinks until bench/hot_text.py runs again.
    want = re.search(r"code: (\d+) bytes", (tree / "daemon/hot_text.ld").read_text())
    sections = run(["readelf", "-SW", str(root / "usr/sbin/rocewatchd")], check=True).stdout
    hot = re.search(r"\.text\.rw_hot\s+PROGBITS\s+\S+\s+\S+\s+([0-9a-f]+)", sections)
    if not want:
        fail("daemon/hot_text.ld has no 'code: N bytes' line (bench/hot_text.py writes it)")
    elif not hot:
        fail("the packaged rocewatchd has no .text.rw_hot section: is -Dhot_text=true in debian/rules?")
    elif (hot_bytes := int(hot.group(1), 16)) < 0.7 * int(want.group(1)):
        fail(f".text.rw_hot holds {hot_bytes} bytes, under 70% of the {want.group(1)} bench/hot_text.py "
             "grouped: the code has moved on from daemon/hot_text.ld; run bench/hot_text.py again")
    else:
        ok(f".text.rw_hot: {hot_bytes} bytes of grouped code ({want.group(1)} when daemon/hot_text.ld was written)")
    c = run([str(root / "usr/sbin/rocewatchd"), "--check-config", "--config", str(root / "etc/rocewatch/rocewatch.toml")])
    if c.returncode == 0:
        ok(f"the shipped config passes --check-config")
    else:
        fail(f"the shipped config fails --check-config: {c.stdout}{c.stderr}")

    # lintian: errors and warnings fail unless an override (with its reason) covers them.
    lint = run(["lintian", "--fail-on", "error,warning", "--display-level", ">=warning", "--show-overrides", str(deb)])
    print("lintian:\n" + (lint.stdout + lint.stderr).rstrip())
    if lint.returncode == 0:
        ok("lintian: no error, no warning that is not overridden")
    else:
        fail(f"lintian: exit {lint.returncode}")

    # The package as a user meets it: installed with apt under a running systemd in a QEMU
    # guest, started, reloaded, purged (tests/vm/scenarios/package.sh).
    vm = run([str(src / "tests/vm/run-scenario.sh"), "package"], env={**os.environ, "ROCEWATCH_DEB": str(deb)})
    print("vm package scenario:\n" + "\n".join((vm.stdout + vm.stderr).splitlines()[-60:]))
    if vm.returncode == 0:
        ok("the VM package scenario: apt install starts the unit, reload works, purge leaves nothing")
    elif vm.returncode == 77 and not CI:
        print("SKIP: the VM package scenario (its reason is above)")
    else:
        fail(f"the VM package scenario: exit {vm.returncode}")
finally:
    if failures or os.environ.get("ROCEWATCH_KEEP_PKG"):
        print(f"kept {tmp} (build.log, the .deb)")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
