#!/usr/bin/env python3
"""Checks that the include graph is the dependency graph meson declares.

Every static library, executable and test in the meson.build files lists the `*_dep`s it uses.
A source file (or a header of the same module) that includes a project header of another
module must have that module among the transitive `dependencies:` of its target; otherwise
it only compiles because every target shares the repository root as an include path.
Usage: module_graph.py SOURCE_ROOT
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = {"build", ".git"}

def meson_files():
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP and not x.startswith("build")]
        if "meson.build" in files:
            yield os.path.join(d, "meson.build")

def strip_comments(text):
    return "\n".join(re.sub(r"#.*$", "", l) for l in text.splitlines())

def split_top(args):
    """Splits a call's argument text at top-level commas."""
    out, depth, cur, quote = [], 0, "", False
    for ch in args:
        if ch == "'":
            quote = not quote
        if not quote:
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif ch == "," and depth == 0:
                out.append(cur.strip()); cur = ""; continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out

def call_args(text, start):
    """The text between the parenthesis at `start` and its match."""
    depth, quote = 0, False
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "'":
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    raise ValueError("unbalanced call")

targets = {}   # name -> {"dir", "sources": [...], "deps": set(var names)}
dep_of = {}    # X_dep -> {"links": target var or None, "deps": set(), "dir"}

for path in meson_files():
    d = os.path.dirname(path)
    text = strip_comments(open(path).read())
    lists = {}
    for m in re.finditer(r"^\s*(\w+)\s*(\+?=)\s*(.+?)$", text, re.M):
        var, op, rhs = m.groups()
        items = re.findall(r"'([^']+)'|\b(\w+_dep)\b", rhs) if rhs.startswith("[") or op == "+=" else []
        if rhs.startswith("[") or op == "+=":
            vals = [a or b for a, b in items]
            lists.setdefault(var, [])
            if op == "=":
                lists[var] = vals
            else:
                lists[var] += vals
    for m in re.finditer(r"(?:(\w+)\s*=\s*)?\b(static_library|executable)\s*\(", text):
        var, kind = m.groups()
        args = split_top(call_args(text, m.end() - 1))
        sources, deps = [], set()
        for a in args:
            kw = re.match(r"(\w+)\s*:\s*(.*)$", a, re.S)
            if kw:
                if kw.group(1) == "dependencies":
                    v = kw.group(2).strip()
                    names = re.findall(r"\b\w+\b", v)
                    for n in names:
                        if n.endswith("_dep"):
                            deps.add(n)
                        elif n in lists:
                            deps.update(x for x in lists[n] if x.endswith("_dep"))
                continue
            for s in re.findall(r"'([^']+\.(?:cpp|cc))'", a):
                sources.append(os.path.normpath(os.path.join(d, s)))
            for n in re.findall(r"\b(\w+)\b", a):
                if n in lists:
                    sources += [os.path.normpath(os.path.join(d, s)) for s in lists[n] if s.endswith(".cpp")]
        name = var or f"{kind}@{os.path.relpath(d, root)}:{len(targets)}"
        targets[name] = {"dir": d, "sources": sources, "deps": deps}
    for m in re.finditer(r"(\w+_dep)\s*=\s*declare_dependency\s*\(", text):
        args = call_args(text, m.end() - 1)
        link = re.search(r"link_with\s*:\s*(\w+)", args)
        deps = set()
        dm = re.search(r"dependencies\s*:\s*(\[[^\]]*\]|\w+)", args)
        if dm:
            for n in re.findall(r"\b\w+\b", dm.group(1)):
                if n.endswith("_dep"):
                    deps.add(n)
                elif n in lists:
                    deps.update(x for x in lists[n] if x.endswith("_dep"))
        dep_of[m.group(1)] = {"links": link.group(1) if link else None, "deps": deps, "dir": d}

# Which module (library target, or header-only dep) owns each project header.
owner = {}
lib_of_dep = {k: v["links"] for k, v in dep_of.items()}
dep_of_lib = {v: k for k, v in lib_of_dep.items() if v}
for name, t in targets.items():
    if name not in dep_of_lib:
        continue
    for s in t["sources"]:
        owner[os.path.splitext(s)[0] + ".hpp"] = name
header_only = {k: v for k, v in dep_of.items() if not v["links"]}
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if x not in SKIP and not x.startswith("build")]
    for f in files:
        if not f.endswith(".hpp"):
            continue
        p = os.path.join(d, f)
        if p in owner:
            continue
        # A header without a .cpp of its own belongs to the module that owns its directory.
        libs = {n for n, t in targets.items() if n in dep_of_lib and any(os.path.dirname(s) == d for s in t["sources"])}
        if len(libs) == 1:
            owner[p] = libs.pop()
        else:
            for k, v in header_only.items():
                if v["dir"] == d:
                    owner[p] = k

def closure(deps):
    seen, todo = set(), list(deps)
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in dep_of:
            todo += dep_of[x]["deps"]
    mods = set()
    for x in seen:
        if x in dep_of:
            mods.add(dep_of[x]["links"] or x)
    return mods

inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

def includes(path):
    out = []
    for inc in inc_re.findall(open(path, errors="replace").read()):
        cand = os.path.normpath(os.path.join(root, inc))
        if os.path.exists(cand):
            out.append((inc, cand))
    return out

problems = []
for name, t in targets.items():
    mine = closure(t["deps"]) | {name}
    files = list(t["sources"])
    if name in dep_of_lib:
        files += [h for h, o in owner.items() if o == name]
    for f in files:
        if not os.path.exists(f):
            continue
        for inc, h in includes(f):
            o = owner.get(h)
            if o is None or o in mine:
                continue
            problems.append(f"{os.path.relpath(f, root)}: includes \"{inc}\" of {o}, "
                            f"which {name} does not declare among its dependencies")

# Every project include is written from the repository root: one include root for all.
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if x not in SKIP and not x.startswith("build")]
    for f in files:
        if not f.endswith((".cpp", ".hpp")):
            continue
        p = os.path.join(d, f)
        for inc in inc_re.findall(open(p, errors="replace").read()):
            if "/" in inc and not os.path.exists(os.path.join(root, inc)) and \
                    not os.path.exists(os.path.join(d, inc)):
                problems.append(f"{os.path.relpath(p, root)}: includes \"{inc}\", which is not a path from the repository root")

for p in sorted(set(problems)):
    print(p)
print(f"{len(targets)} targets, {len(owner)} headers with an owner: "
      f"{'the include graph is the declared graph' if not problems else str(len(set(problems))) + ' problems'}")
sys.exit(1 if problems else 0)
