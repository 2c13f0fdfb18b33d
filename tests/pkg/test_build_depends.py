#!/usr/bin/env python3
"""debian/control's Build-Depends cover what the meson.build files ask pkg-config for, and
scripts/deps.sh's build group installs every Build-Depends.

Each dependency('name') of the meson.build files the package builds (all but tests/ and bench/,
which debian/rules leaves out with -Dtests=disabled) is mapped to the Debian package that ships name.pc
(dpkg-query -S: the build needs them all installed, so they are); that package must be among
the Build-Depends. gtest, gmock and cpp-httplib (the tests' HTTP client) are left out only
while debian/rules builds with -Dtests=disabled. Usage: test_build_depends.py SOURCE_ROOT
"""
import re
import subprocess
import sys
from pathlib import Path

root = Path(sys.argv[1])
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def strip_comments(text):
    return "\n".join(re.sub(r"#.*$", "", line) for line in text.splitlines())


def built_meson_files():
    """The root meson.build and those of the modules it descends into, found through subdir()."""
    todo, out = [root], []
    while todo:
        d = todo.pop()
        text = strip_comments((d / "meson.build").read_text())
        out.append(text)
        for sub in re.findall(r"\bsubdir\(\s*'([^']+)'", text):
            if sub not in ("tests", "bench"):
                todo.append(d / sub)
        # The root's module list: foreach m : [...] subdir(m)
        if d == root:
            for names in re.findall(r"foreach\s+\w+\s*:\s*\[(.*?)\]\s*subdir\(", text, re.S):
                todo.extend(d / n for n in re.findall(r"'([^']+)'", names))
    return out


# Optional ones (required: false) are left out: the build goes on without them.
modules = sorted({m for text in built_meson_files()
                  for m, rest in re.findall(r"\bdependency\(\s*'([^']+)'([^)]*)\)", text)
                  if not re.search(r"required:\s*false", rest)})
modules = [m for m in modules if m not in ("threads", "dl")]  # the compiler's and libc's, no package
rules = (root / "debian/rules").read_text()
if "-Dtests=disabled" in rules:
    modules = [m for m in modules if m not in ("gtest", "gmock", "cpp-httplib")]
print("pkg-config modules:", ", ".join(modules))

control = (root / "debian/control").read_text()
m = re.search(r"^Build-Depends:(.*?)(?=^\S)", control, re.M | re.S)
if not m:
    sys.exit("FAIL: debian/control has no Build-Depends")
# Each entry: alternatives split at '|', without version, architecture or profile qualifiers.
entries = []
for entry in m.group(1).split(","):
    alts = [re.sub(r"[\s(\[<].*$", "", a.strip()) for a in entry.split("|")]
    if alts and alts[0]:
        entries.append(alts)
build_depends = {a for alts in entries for a in alts}

for mod in modules:
    r = subprocess.run(["dpkg-query", "-S", f"*/pkgconfig/{mod}.pc"], capture_output=True, text=True)
    pkgs = sorted({line.split(":")[0] for line in r.stdout.splitlines() if ":" in line})
    if not pkgs:
        fail(f"{mod}: no installed package ships {mod}.pc (run scripts/deps.sh build)")
        continue
    if not build_depends.intersection(pkgs):
        fail(f"{mod}: shipped by {', '.join(pkgs)}, none of which is in Build-Depends")
    else:
        print(f"ok: {mod}.pc from {', '.join(pkgs)}")

deps_sh = (root / "scripts/deps.sh").read_text()
bm = re.search(r"^build_pkgs=\((.*?)^\)", deps_sh, re.M | re.S)
if not bm:
    sys.exit("FAIL: scripts/deps.sh has no build_pkgs=( ... )")
build_group = set(strip_comments(bm.group(1)).split())
for alts in entries:
    want = ["debhelper" if a == "debhelper-compat" else a for a in alts]
    if not build_group.intersection(want):
        fail(f"Build-Depends {' | '.join(alts)}: not in scripts/deps.sh's build group")

print(f"{len(modules)} modules, {len(entries)} Build-Depends checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
