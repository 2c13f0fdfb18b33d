#!/usr/bin/env python3
"""Fills a man page's scdoc template from the Markdown docs, so each page has one source.

Usage: mangen.py --root SRC --out OUT.scd [--var NAME=VALUE]... TEMPLATE.scd.in

In the template, @NAME@ is replaced by a --var's value, and a line

    %md FILE [--only HEADING]... [--skip HEADING]... [--no-intro]

is replaced by FILE (relative to --root) converted to scdoc: its `## ` sections (all of them,
only those named, or all but those named; the text before the first one unless --no-intro
or --only), each under its heading as a subsection, or with no heading when --only names a
single section. Markdown tables become indented definition lists (first column the term,
the last its meaning, the others "Header: value"); code spans become bold; links keep their
text; code blocks stay literal.
"""
import argparse
import re
import shlex
import sys
from pathlib import Path


def escape(text):
    """scdoc's formatting characters, literal."""
    return re.sub(r"([\\*_])", r"\\\1", text)


def inline(text, prefix=""):
    """One line of Markdown prose as scdoc: `code` bold, [text](link) as its text.

    prefix goes before every code span (qualifies key names in a per-table list)."""
    out = []
    pos = 0
    for m in re.finditer(r"`([^`]+)`|\[([^\]]+)\]\(([^)]+)\)|\*\*([^*]+)\*\*", text):
        out.append(escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("*" + escape(prefix + m.group(1)) + "*")
        elif m.group(2) is not None:
            label, target = m.group(2), m.group(3)
            out.append(inline(label))
            if target.startswith(("http://", "https://")):
                out.append(" (" + escape(target) + ")")
        else:
            out.append("*" + escape(m.group(4)) + "*")
        pos = m.end()
    out.append(escape(text[pos:]))
    line = "".join(out)
    # scdoc escapes a leading dot for roff, but of "..." it drops one: an ellipsis survives.
    if line.startswith("..."):
        line = "\u2026" + line[3:]
    return line


def split_row(line):
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    return [c.replace("\\|", "|") for c in cells]


def table(rows):
    """A Markdown table (header, separator, rows) as an scdoc definition list."""
    header = [h.lower() for h in split_row(rows[0])]
    body = [split_row(r) for r in rows[2:]]
    out = []
    group = ""  # the 'table' column of a per-table list: carried down while empty
    for cells in body:
        cells += [""] * (len(header) - len(cells))
        prefix = ""
        first = 0
        if header[0] == "table":
            group = cells[0] or group
            prefix = group.strip("`[]") + "."
            first = 1
        out.append(inline(cells[first], prefix))
        meaning = inline(cells[-1])
        extra = [f"{header[i].capitalize()}: {inline(cells[i])}." for i in range(first + 1, len(header) - 1)
                 if cells[i]]
        if len(header) - first == 2:
            out.append("\t" + meaning)
        else:
            if meaning and not meaning.endswith("."):
                meaning += "."
            out.append("\t" + " ".join(([meaning] if meaning else []) + extra))
        out.append("")
    return out


def convert(lines):
    """Markdown lines (no `## ` headings) as scdoc lines."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            out.append("```")
            i += 1
            # scdoc takes a backslash as an escape inside literal blocks too: a jq filter's
            # \( and \n came out of the man page as ( and n.
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(lines[i].replace("\\", "\\\\"))
                i += 1
            out.append("```")
            i += 1
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            if out and out[-1] != "":
                out.append("")
            out += table(rows)
        elif line.startswith("### "):
            out.append("*" + inline(line[4:].strip()) + "*")
            i += 1
        elif re.match(r"\s*[-*] ", line):
            item = re.sub(r"^\s*[-*] ", "", line).strip()
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                item += " " + lines[i].strip()
                i += 1
            out.append("- " + inline(item))
        else:
            out.append(inline(line.strip()) if line.strip() else "")
            i += 1
    # no run of blank lines, none at either end
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")
    return text.split("\n")


def sections(md):
    """(intro lines, [(heading, lines)]) of a Markdown file; its `# ` title is dropped."""
    intro, secs = [], []
    cur = intro
    fence = False
    for line in md.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("# "):
            continue
        if not fence and line.startswith("## "):
            cur = []
            secs.append((line[3:].strip(), cur))
            continue
        cur.append(line)
    return intro, secs


def include(root, args):
    p = argparse.ArgumentParser(prog="%md")
    p.add_argument("file")
    p.add_argument("--only", action="append", default=[])
    p.add_argument("--skip", action="append", default=[])
    p.add_argument("--no-intro", action="store_true")
    a = p.parse_args(args)
    intro, secs = sections((root / a.file).read_text())
    names = [h for h, _ in secs]
    for want in a.only + a.skip:
        if want not in names:
            sys.exit(f"mangen: {a.file} has no section '## {want}' (it has: {', '.join(names)})")
    out = []
    if not a.only and not a.no_intro:
        out += convert(intro) + [""]
    for heading, body in secs:
        if (a.only and heading not in a.only) or heading in a.skip:
            continue
        if not (len(a.only) == 1):
            out += ["## " + inline(heading), ""]
        out += convert(body) + [""]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--var", action="append", default=[])
    p.add_argument("template", type=Path)
    a = p.parse_args()
    text = a.template.read_text()
    for kv in a.var:
        k, v = kv.split("=", 1)
        text = text.replace(f"@{k}@", v)
    left = re.findall(r"@[a-z_]+@", text)
    if left:
        sys.exit(f"mangen: {a.template}: no --var for {', '.join(sorted(set(left)))}")
    out = []
    for line in text.splitlines():
        if line.startswith("%md "):
            out += include(a.root, shlex.split(line[4:]))
        else:
            out.append(line)
    a.out.write_text(re.sub(r"\n{3,}", "\n\n", "\n".join(out)).rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
