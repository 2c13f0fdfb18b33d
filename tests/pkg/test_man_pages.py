#!/usr/bin/env python3
"""The man pages built from the docs: rocewatchd(8) names every flag `rocewatchd --help`
prints, rocewatch.toml(5) every key of the example config, its SYNOPSIS is the file the unit
reads, and groff renders both without a warning.

Usage: test_man_pages.py ROCEWATCHD ROCEWATCHD_8 ROCEWATCH_TOML_5 UNIT EXAMPLE_CONFIG
"""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

daemon, page8, page5, unit, example = sys.argv[1:6]
roff8, roff5 = Path(page8).read_text(), Path(page5).read_text()
failures = []


def check(cond, msg):
    print(("ok: " if cond else "FAIL: ") + msg)
    if not cond:
        failures.append(msg)


def unroff(text):
    """Text with the escapes scdoc writes undone (\\& after a dot, \\- for a hyphen)."""
    return text.replace("\\&", "").replace("\\-", "-").replace("\\\\", "\\")


def bold_terms(roff):
    """Text set in bold."""
    return [unroff(t) for t in re.findall(r"\\fB(.*?)\\f[RP]", roff)]


usage = subprocess.run([daemon, "--help"], capture_output=True, text=True, check=True).stdout
flags = sorted(set(re.findall(r"^\s+(--[a-z-]+)", usage, re.M)))
check(len(flags) >= 5, f"--help lists flags ({', '.join(flags)})")
terms8 = " ".join(bold_terms(roff8))
for f in flags:
    check(re.search(rf"(^|[\s,]){re.escape(f)}\b", terms8) is not None, f"rocewatchd(8) documents {f}")
for section in ("OPTIONS", "EXIT STATUS", "SIGNALS", "ENDPOINTS", "FILES"):
    check(re.search(rf'^\.SH "?{section}"?$', roff8, re.M) is not None, f"rocewatchd(8) has {section}")


def keys(table, path=()):
    for k, v in table.items():
        if isinstance(v, dict):
            yield from keys(v, path + (k,))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                yield from keys(x, path + (k,))
        else:
            yield path + (k,)


with open(example, "rb") as fh:
    cfg = tomllib.load(fh)
terms5 = bold_terms(roff5)
seen = set()
for path in keys(cfg):
    full, last = ".".join(path), path[-1]
    if full in seen:
        continue
    seen.add(full)
    # A key under its own table's heading is named alone, a probe family's with its table,
    # a peer rail's as rails[].key.
    names = {".".join(path[i:]) for i in range(len(path))}
    if len(path) >= 2:
        names.add(f"{path[-2]}[].{last}")
    named = bool(names.intersection(terms5))
    check(named, f"rocewatch.toml(5) documents {full}")

cfg_path = re.search(r"^ExecStart=\S+ --config (\S+)", Path(unit).read_text(), re.M).group(1)
synopsis = re.search(r'^\.SH "?SYNOPSIS"?$(.*?)^\.SH', roff5, re.M | re.S)
check(synopsis is not None and cfg_path in unroff(synopsis.group(1)),
      f"rocewatch.toml(5)'s SYNOPSIS is the unit's --config {cfg_path}")

for page in (page8, page5):
    g = subprocess.run(["groff", "-k", "-man", "-Tutf8", "-ww", "-z", page], capture_output=True, text=True)
    check(g.returncode == 0 and not g.stderr.strip(), f"groff renders {Path(page).name} without warnings {g.stderr.strip()}")

# The README's jq example, rendered: scdoc took its backslashes as escapes, and \(.severity)
# came out as (.severity), a filter that prints its own text.
g = subprocess.run(["groff", "-k", "-man", "-Tutf8", page8], capture_output=True, text=True)
rendered = re.sub(r".\x08", "", g.stdout)  # overstrike (bold) undone
check('"\\(.severity) \\(.object): \\(.summary)\\n' in rendered,
      "rocewatchd(8) shows the jq example's backslashes")

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
