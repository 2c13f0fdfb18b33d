#!/usr/bin/env python3
"""Writes daemon/hot_text.ld: the functions a running rocewatchd uses, which the package's build
(-Dhot_text=true) has the linker put together ahead of the rest of its code. The kernel maps 64
KiB of a binary around each page a fault brings in, so code that runs spread over the whole text
keeps most of it resident; together, it keeps little more than itself (docs/figures.md, stop 50).

    sudo bench/hot_text.py OUT [TREE...]    # root (network namespaces); valgrind, dpkg-dev

OUT/build: the daemon built as debian/rules builds it (dpkg-buildflags with hardening=+all,
--buildtype=plain, LTO, -Dhot_text=true), so that its functions carry the names the package's
build gives them (LTO's clones: .lto_priv.0, .constprop.0, ...). Each TREE (as
bench/memory_vs_node_exporter.py takes it; default "spark" and 8- and 128-NIC trees written to
OUT) runs the daemon under valgrind's callgrind as that bench runs it: its netdevs links of a
namespace, a collection every 5 s, four gzip scrapes of /metrics 15 s apart, then SIGTERM. Every function
of the binary that ran, with the aliases that share its code (a constructor's C1 and C2), is
named in the script, in the order callgrind lists them. What the bench does not do (the REST
API, probes against peers) is not in it: that code stays where the linker puts it.

HOT_TEXT_PROFILES=FILE:FILE... writes the script from callgrind files of an earlier run instead
of running the daemon again.

tests/pkg/test_pkg_deb.py checks that the package's grouped code is at least 70% of the size
written here: a smaller one means the names moved with the code, and this script runs again.
"""
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
sys.path.insert(0, HERE)
import rwtest  # noqa: E402
from make_nic_tree import make_tree  # noqa: E402
from memory_vs_node_exporter import scrape, tree_paths  # noqa: E402

SCRIPT = os.path.join(SRC, "daemon", "hot_text.ld")


def build(out):
    env = dict(os.environ, DEB_BUILD_MAINT_OPTIONS="hardening=+all")
    flags = subprocess.run(["dpkg-buildflags", "--export=sh"], env=env, capture_output=True, text=True,
                           check=True).stdout
    for name, value in re.findall(r'^export (\w+)="(.*)"$', flags, re.M):
        env[name] = value
    bdir = os.path.join(out, "build")
    if not os.path.exists(os.path.join(bdir, "build.ninja")):
        subprocess.run(["meson", "setup", bdir, SRC, "--buildtype=plain", "--prefix=/usr", "--sysconfdir=/etc",
                        "-Dtests=disabled", "-Ducx=enabled", "-Dlldp=enabled", "-Dman=disabled", "-Db_lto=true",
                        "-Dhot_text=true"], env=env, check=True)
    subprocess.run(["ninja", "-C", bdir, "daemon/rocewatchd"], env=env, check=True)
    return os.path.join(bdir, "daemon", "rocewatchd")


def train(binary, tree, out):
    """The daemon under callgrind on tree, as the memory bench runs it; returns callgrind's file."""
    sysfs, procfs = tree_paths(tree)
    cg = os.path.join(out, f"callgrind.{os.path.basename(tree.rstrip('/'))}")
    wrapper = os.path.join(out, "under-callgrind")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={cg} --compress-strings=no '
                f'--compress-pos=no {binary} "$@"\n')
    os.chmod(wrapper, 0o755)
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write('[daemon]\ninterval = "5s"\n')
    cfg.close()
    os.environ["ROCEWATCHD"] = wrapper
    try:
        with rwtest.Netns("hot") as ns, rwtest.Netns("hotpeer") as peer:
            if tree == "spark":
                rwtest.dgx_spark_links(ns, peer)
            else:
                rwtest.tree_links(ns, peer, sysfs)
            port = rwtest.free_port()
            d = rwtest.Daemon(netns=ns, sysfs=sysfs, procfs=procfs, config=cfg.name, port=port,
                              extra=["--log-level", "warn"], ready_timeout=600)
            d.__enter__()
            try:
                for _ in range(4):
                    scrape(ns, port)
                    time.sleep(15)
            finally:
                d.proc.send_signal(signal.SIGTERM)
                d.proc.wait(timeout=600)  # callgrind writes its file on the way out
                shutil.rmtree(d.state, ignore_errors=True)
                os.unlink(d.log.name)
    finally:
        os.unlink(cfg.name)
    print(f"{tree}: {cg}")
    return cg


def ran_functions(binary, profiles):
    """Every symbol of binary whose code ran in profiles (callgrind names functions demangled),
    with its aliases; and the bytes of code they hold."""
    def nm(*opts):
        return subprocess.run(["nm", "--defined-only", *opts, binary], capture_output=True, text=True,
                              check=True).stdout.splitlines()
    by_name, by_addr, addr_of, size_at = {}, {}, {}, {}
    for m, d in zip(nm(), nm("-C")):
        mp, dp = m.split(" ", 2), d.split(" ", 2)
        if len(mp) == 3 and mp[1] in "tTwW":
            by_name.setdefault(dp[2], []).append(mp[2])
            by_addr.setdefault(mp[0], []).append(mp[2])
            addr_of[mp[2]] = mp[0]
    for line in nm("-S"):
        p = line.split()
        if len(p) == 4 and p[2] in "tTwW":
            size_at[p[0]] = int(p[1], 16)
    ran, seen, addrs, unknown = [], set(), set(), set()
    for path in profiles:
        ob = None
        for line in open(path, errors="replace"):
            if line.startswith("ob="):
                ob = line[3:].strip()
            # callgrind names the main program's object "???" in some runs (not resolved), and
            # its functions still by name
            elif line.startswith("fn=") and ob in (os.path.realpath(binary), "???"):
                name = re.sub(r"'\d+$", "", line[3:].strip())  # callgrind's name for a recursion level
                if name not in by_name:
                    unknown.add(name)  # PLT stubs, code without a symbol
                    continue
                for sym in by_name[name]:
                    addrs.add(addr_of[sym])
                    for alias in by_addr[addr_of[sym]]:
                        if alias not in seen and not alias.endswith(".cold"):  # cold parts stay cold
                            seen.add(alias)
                            ran.append(alias)
    return ran, sum(size_at.get(a, 0) for a in addrs), unknown


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    trees = sys.argv[2:]
    if not trees:  # some paths run only past a size (std::stable_sort's merge at 128 links)
        for n in (8, 128):
            if not os.path.exists(os.path.join(out, f"t{n}")):
                make_tree(n, os.path.join(out, f"t{n}"))
        trees = ["spark", os.path.join(out, "t8"), os.path.join(out, "t128")]
    binary = build(out)
    if os.environ.get("HOT_TEXT_PROFILES"):  # the callgrind files of an earlier run, not trained again
        profiles = os.environ["HOT_TEXT_PROFILES"].split(":")
    else:
        profiles = [train(binary, t, out) for t in trees]
    ran, code, unknown = ran_functions(binary, profiles)
    commit = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    lines = ["/* Generated by bench/hot_text.py; do not edit. The functions rocewatchd ran under the",
             f"   memory bench's load on {', '.join(os.path.basename(t.rstrip('/')) for t in trees)} "
             f"({datetime.date.today()}, {commit}), put together ahead of the rest of",
             "   its code by the package's build (-Dhot_text=true). tests/pkg/test_pkg_deb.py holds the",
             "   package's grouped code to at least 70% of this figure:",
             f"   code: {code} bytes in {len(ran)} symbols */",
             "SECTIONS", "{", "  .text.rw_hot :", "  {"]
    # The C runtime's start-up and exit code (_start, frame_dummy, ...) runs in every daemon too.
    lines += ["    *crt1.o(.text .text.*)", "    *crti.o(.text .text.*)", "    *crtbegin*.o(.text .text.*)",
              "    *crtend*.o(.text .text.*)"]
    lines += [f"    *(.text.{s} .text.startup.{s} .text.hot.{s})" for s in ran]
    lines += ["  }", "}", "INSERT BEFORE .text;"]
    with open(SCRIPT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{SCRIPT}: {len(ran)} symbols, {code} bytes of code; "
          f"{len(unknown)} names callgrind gave that the symbol table has not")


if __name__ == "__main__":
    main()
