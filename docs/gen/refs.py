#!/usr/bin/env python3
"""Writes or checks the generated references docs/alerts.md and docs/metrics.md.

alerts:  the table printed by alerts_ref (the rules engine's own catalog), spliced into
         docs/gen/alerts.md.in at @RULE_TABLE@.
metrics: the families of the golden exposition tests/integration/golden/dgx-spark.metrics
         (name, type, label names, help), plus the families the code defines that the golden
         file leaves out (found in the source's family definitions), spliced into
         docs/gen/metrics.md.in at @GOLDEN_TABLE@, @OTHER_TABLE@ and @PROBE_TABLE@.

Usage: refs.py check|write alerts|metrics|all --source-root DIR --alerts-ref EXE --build-dir DIR
"""
import argparse
import difflib
import os
import re
import subprocess
import sys

GOLDEN = os.path.join("tests", "integration", "golden", "dgx-spark.metrics")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')
# A family definition in the C++ source: gauge("name", "help"), counter(...), or
# family("name", "help" "more help", MetricType::Kind).
STRING = r'"(?:[^"\\]|\\.)*"'
FAMILY = re.compile(r'\b(gauge|counter|family)\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"\s*,\s*((?:' + STRING +
                    r'\s*)+)(?:,\s*MetricType::(\w+))?')
# Directories that hold no daemon source: tests define no families, build trees hold copies.
SKIP_DIRS = {".git", "tests", "docs", "bench", "subprojects"}


def splice(template_path, marks):
    """The template with each marker line replaced by its table; a missing marker is an error."""
    text = open(template_path, encoding="utf-8").read()
    for mark, body in marks.items():
        if mark + "\n" not in text:
            sys.exit(f"refs.py: {template_path} has no line {mark}")
        text = text.replace(mark + "\n", body)
    return text


def cell(text):
    return text.replace("|", "\\|")


def golden_families(path):
    """(name, type, help, label names) per family, in the order the exposition has them."""
    fams, order, base_of = {}, [], {}
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, rest = (line.split(" ", 3) + [""])[:4]
            if name not in fams:
                fams[name] = {"type": "untyped", "help": "", "labels": []}
                order.append(name)
            fams[name]["help" if kind == "HELP" else "type"] = rest
            for suffix in ("_sum", "_count", "_bucket"):
                base_of[name + suffix] = name
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        name = m.group(1) if m.group(1) in fams else base_of.get(m.group(1))
        if name is None:
            continue
        for label in LABEL.findall(m.group(2) or ""):
            if label not in fams[name]["labels"]:
                fams[name]["labels"].append(label)
    return [(n, fams[n]["type"], fams[n]["help"], fams[n]["labels"]) for n in order]


def unquote(literals):
    parts = re.findall(STRING, literals)
    return "".join(bytes(p[1:-1], "utf-8").decode("unicode_escape") for p in parts)


# Any literal that looks like one of our metric names; each must be found by FAMILY too.
METRIC_LITERAL = re.compile(r'"(rocewatch_[a-z0-9_]+)"')


def source_families(root):
    """(name, type, help, file) for every family definition in the daemon's C++ source."""
    out, seen, literals = [], set(), {}
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                         and not os.path.exists(os.path.join(top, d, "meson-private")))
        for f in sorted(files):
            if not f.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(top, f)
            text = open(path, encoding="utf-8").read()
            for m in FAMILY.finditer(text):
                call, name, helps, mtype = m.groups()
                kind = (mtype or call).lower()
                if name not in seen:
                    seen.add(name)
                    out.append((name, kind, unquote(helps), os.path.relpath(path, root)))
            for name in METRIC_LITERAL.findall(text):
                literals.setdefault(name, os.path.relpath(path, root))
    unread = sorted(f"{name} ({path})" for name, path in literals.items() if name not in seen)
    if unread:
        sys.exit("refs.py: metric names defined in a way docs/gen/refs.py cannot read (update FAMILY): " +
                 ", ".join(unread))
    return out


def table(rows, with_labels):
    head = "| family | type | labels | help |\n| --- | --- | --- | --- |\n" if with_labels else \
        "| family | type | help |\n| --- | --- | --- |\n"
    body = ""
    for name, kind, help_text, labels in rows:
        label_cell = ", ".join(f"`{l}`" for l in labels) if labels else ""
        body += (f"| `{name}` | {kind} | {label_cell} | {cell(help_text)} |\n" if with_labels
                 else f"| `{name}` | {kind} | {cell(help_text)} |\n")
    return head + body


def render_metrics(root):
    golden = golden_families(os.path.join(root, GOLDEN))
    in_golden = {g[0] for g in golden}
    source = source_families(root)
    if not source:
        sys.exit("refs.py: found no metric family definitions under " + root +
                 " (did the way families are defined change? update FAMILY in docs/gen/refs.py)")
    other = [(n, k, h, []) for n, k, h, _ in source if n.startswith("rocewatch_") and n not in in_golden]
    probe = [(n, k, h, []) for n, k, h, _ in source if not n.startswith("rocewatch_")]
    return splice(os.path.join(root, "docs", "gen", "metrics.md.in"),
                  {"@GOLDEN_TABLE@": table(golden, True), "@OTHER_TABLE@": table(other, False),
                   "@PROBE_TABLE@": table(probe, False)})


def render_alerts(root, alerts_ref):
    rules = subprocess.run([alerts_ref], check=True, capture_output=True, text=True).stdout
    return splice(os.path.join(root, "docs", "gen", "alerts.md.in"), {"@RULE_TABLE@": rules})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "write"])
    ap.add_argument("what", choices=["alerts", "metrics", "all"])
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--alerts-ref")
    ap.add_argument("--build-dir", default="build")
    a = ap.parse_args()
    targets = []
    if a.what in ("alerts", "all"):
        targets.append(("docs/alerts.md", lambda: render_alerts(a.source_root, a.alerts_ref)))
    if a.what in ("metrics", "all"):
        targets.append(("docs/metrics.md", lambda: render_metrics(a.source_root)))
    rc = 0
    for rel, render in targets:
        path = os.path.join(a.source_root, rel)
        want = render()
        if a.mode == "write":
            with open(path, "w", encoding="utf-8") as f:
                f.write(want)
            print(f"wrote {rel}")
            continue
        have = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if have != want:
            sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                                       rel, rel + " (generated)"))
            print(f"\n{rel} is out of date with the code. Regenerate it with:\n"
                  f"    ninja -C {a.build_dir} docs-refs\nand commit the result.")
            rc = 1
        else:
            print(f"{rel} matches the code")
    return rc


if __name__ == "__main__":
    sys.exit(main())
