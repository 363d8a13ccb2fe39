#!/usr/bin/env python3
"""The structure figures of kforge's source tree (BENCHMARKS.md "Structure").

Usage: python3 bench/structure.py [--build DIR] [--file-lines N] [--func-lines N] [--ccn N] [-v]

Prints, over the files git tracks:

1. lines per part (include/, src/ by module, cli/, tests/, bench/), and the source files of
   src/, cli/ and include/ over --file-lines lines (default 1000);
2. the functions of src/ and cli/ over --func-lines lines (default 150) or over a
   cyclomatic complexity of --ccn (default 40), measured by lizard (PyPI; `make deps`
   installs it). Without lizard this part says so and the script exits 3 after the rest;
3. include edges between modules (a module is a folder src/<module>/, or a header that
   docs/design.md's layer table makes a module of its own, HEADER_MODULES; an `#include
   "../other/x.h"` from module A is an edge A -> other) and the cycles among them; with
   --build DIR, also the call edges of a build's object files (nm: a symbol one module
   uses and another defines) and their cycles, which includes alone can hide;
4. the places outside src/backend/ that ask which backend they are dealing with: lines
   of src/ and cli/ code (comments left out) that call kf_build_gpu(), read a build's
   `host` or a worker's `gpu` flag, compare a backend name or a source extension with
   a string ("c", "cu", "cuda", ".cu"), or fetch a backend by a literal name.

The last lines are a Markdown table of the headline figures, as BENCHMARKS.md keeps them.
Nothing is compiled or run; the figures depend only on the tree (and, with --build, on
that build's objects: build it from the same tree first).
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC_EXT = (".c", ".h", ".cu", ".cuh")

# How code asks "which backend": each pattern is one kind of question (see the docstring).
BACKEND_QUESTIONS = [
    ("kf_build_gpu()", re.compile(r"\bkf_build_gpu\s*\(")),
    ("a build's host flag", re.compile(r"(->|\.)host\b")),
    ("a worker's gpu flag", re.compile(r"(->|\.)gpu\b")),
    ("a backend name or extension compared",
     re.compile(r"\bstr(n?case)?n?cmp\s*\([^;]*\"\.?(c|cu|cuda|opencl|cl)\"")),
    ("a backend fetched by name", re.compile(r"\bkf_backend_get\s*\(\s*\"")),
]


def tracked(*dirs):
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *dirs], check=True,
                             capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d in dirs:
            for base, _, names in os.walk(os.path.join(ROOT, d)):
                out += [os.path.relpath(os.path.join(base, n), ROOT) for n in names]
    return sorted(p for p in out if p.endswith(SRC_EXT) and os.path.isfile(os.path.join(ROOT, p)))


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def strip_comments(text):
    """C text with comments and the contents of string literals blanked, line breaks kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c, d = text[i], text[i:i + 2]
        if d == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif d == "//":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])  # the quotes and the text: a name compared stays visible
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# Headers that docs/design.md's layer table counts as a module of their own (a row whose
# path is a file): the backend registry, which includes nothing and sits below the task
# layer although it lives in src/backend/. A function such a header declares is that
# module's, wherever it is defined (scripts/check-layers.sh counts the same way).
HEADER_MODULES = {"src/backend/registry.h": "registry"}


def module_of(path):
    """src/<module>/... -> module (HEADER_MODULES first); anything else -> its top folder."""
    if path in HEADER_MODULES:
        return HEADER_MODULES[path]
    parts = path.split("/")
    return parts[1] if parts[0] == "src" and len(parts) > 2 else parts[0]


def header_symbols():
    """The functions each HEADER_MODULES header declares -> its module."""
    out = {}
    for path, mod in HEADER_MODULES.items():
        if os.path.isfile(os.path.join(ROOT, path)):
            for name in re.findall(r"\b(kf_\w+)\s*\(", strip_comments(read(path))):
                out[name] = mod
    return out


def lines(path):
    return read(path).count("\n")


def part_sizes():
    rows = []
    for part in ("include", "src", "cli", "tests", "bench", "tasks"):
        files = tracked(part)
        rows.append((part + "/", len(files), sum(lines(p) for p in files)))
    mods = {}
    for p in tracked("src"):
        m = module_of(p)
        mods.setdefault(m, [0, 0])
        mods[m][0] += 1
        mods[m][1] += lines(p)
    return rows, sorted(mods.items(), key=lambda kv: -kv[1][1])


def big_files(limit):
    sizes = [(lines(p), p) for p in tracked("src", "cli", "include")]
    return sorted((s for s in sizes if s[0] > limit), reverse=True)


def functions(func_lines, ccn):
    try:
        import lizard
    except ImportError:
        return None
    found, total = [], 0
    for p in tracked("src", "cli"):
        if not p.endswith((".c", ".cu")):
            continue
        info = lizard.analyze_file(os.path.join(ROOT, p))
        for f in info.function_list:
            total += 1
            if f.length > func_lines or f.cyclomatic_complexity > ccn:
                found.append((f.length, f.cyclomatic_complexity, f.name, "%s:%d" % (p, f.start_line)))
    return total, sorted(found, reverse=True)


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_graph():
    edges = {}
    for p in tracked("src"):
        a = module_of(p)
        for inc in INCLUDE.findall(strip_comments(read(p))):
            target = os.path.normpath(os.path.join(os.path.dirname(p), inc))
            # "kforge.h" (include/, by the include path) and generated files are no module's
            if not target.startswith("src/") or not os.path.isfile(os.path.join(ROOT, target)):
                continue
            b = module_of(target)
            if b != a:
                edges.setdefault((a, b), []).append("%s -> %s" % (p, inc))
    return edges


def cycles(edges):
    """Strongly connected components of two or more modules (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def link_graph(build):
    """Call edges between modules from the objects of a build: module -> module it calls."""
    objs = []
    for base, _, names in os.walk(build):
        for n in names:
            p = os.path.join(base, n)
            m = re.search(r"/src/([^/]+)/", p.replace(os.sep, "/"))
            if n.endswith(".o") and m:
                objs.append((m.group(1), p))
    defined, used = {}, {}
    for mod, p in objs:
        try:
            out = subprocess.run(["nm", "-P", p], check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            continue
        for line in out.splitlines():
            f = line.split()
            if len(f) < 2:
                continue
            if f[1] == "U":
                used.setdefault(mod, set()).add(f[0])
            elif f[1] in "TDBR":
                defined.setdefault(f[0], mod)
    edges = {}
    owner = header_symbols()
    for mod, syms in used.items():
        for sym in sorted(syms):
            other = owner.get(sym, defined.get(sym))
            if other and other != mod:
                edges.setdefault((mod, other), []).append(sym)
    return len(objs), edges


def backend_questions():
    per_file, per_kind, total = {}, {k: 0 for k, _ in BACKEND_QUESTIONS}, 0
    for p in tracked("src", "cli"):
        if p.startswith("src/backend/"):
            continue
        for no, line in enumerate(strip_comments(read(p)).split("\n"), 1):
            kinds = [k for k, rx in BACKEND_QUESTIONS if rx.search(line)]
            if kinds:
                total += 1
                per_file.setdefault(p, []).append((no, kinds, line.strip()))
                for k in kinds:
                    per_kind[k] += 1
    return total, per_file, per_kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file-lines", type=int, default=1000)
    ap.add_argument("--func-lines", type=int, default=150)
    ap.add_argument("--ccn", type=int, default=40)
    ap.add_argument("--build", metavar="DIR", help="also the call graph of this build's objects (nm)")
    ap.add_argument("-v", action="store_true", help="list every line counted in part 4")
    a = ap.parse_args()

    print("== 1. lines")
    rows, mods = part_sizes()
    for part, nf, nl in rows:
        print("%-10s %4d files %7d lines" % (part, nf, nl))
    print("src/ by module: " + ", ".join("%s %d" % (m, v[1]) for m, v in mods))
    big = big_files(a.file_lines)
    print("files of src/, cli/, include/ over %d lines: %d" % (a.file_lines, len(big)))
    for n, p in big:
        print("  %6d  %s" % (n, p))

    print("\n== 2. functions of src/ and cli/ over %d lines or CCN %d (lizard)" % (a.func_lines, a.ccn))
    fn = functions(a.func_lines, a.ccn)
    if fn is None:
        print("  lizard is not installed: these figures are missing. `make deps` installs it "
              "(deps.txt, [pypi]), or: python3 -m pip install lizard")
        nlong = nccn = None
    else:
        total, found = fn
        nlong = sum(1 for f in found if f[0] > a.func_lines)
        nccn = sum(1 for f in found if f[1] > a.ccn)
        print("%d functions measured; %d over %d lines, %d over CCN %d" % (total, nlong, a.func_lines, nccn, a.ccn))
        print("  lines   CCN  function  (file:line)")
        for length, c, name, where in found:
            print("  %5d  %4d  %s  (%s)" % (length, c, name, where))

    print("\n== 3. include edges between modules of src/, and cycles")
    edges = include_graph()
    for (x, y), why in sorted(edges.items()):
        print("  %-8s -> %-8s %d include(s)" % (x, y, len(why)))
    cyc = cycles(edges)
    print("cycles: %d" % len(cyc))
    for comp in cyc:
        print("  " + " <-> ".join(comp))
        for (x, y), why in sorted(edges.items()):
            if x in comp and y in comp:
                for w in why:
                    print("      " + w)

    lcyc = None
    if a.build:
        nobj, ledges = link_graph(a.build)
        print("call edges between modules, from %d objects of %s (nm):" % (nobj, a.build))
        for (x, y), syms in sorted(ledges.items()):
            print("  %-8s -> %-8s %d symbol(s)" % (x, y, len(syms)))
        lcyc = cycles(ledges)
        print("call cycles: %d" % len(lcyc))
        for comp in lcyc:
            print("  " + " <-> ".join(comp))
            for (x, y), syms in sorted(ledges.items()):
                if x in comp and y in comp:
                    print("      %s -> %s: %s" % (x, y, ", ".join(syms[:6]) + (" ..." if len(syms) > 6 else "")))

    print("\n== 4. backend questions outside src/backend/ (src/ and cli/, code only)")
    total, per_file, per_kind = backend_questions()
    print("%d lines in %d files" % (total, len(per_file)))
    for k, n in per_kind.items():
        print("  %-40s %d" % (k, n))
    for p, hits in sorted(per_file.items(), key=lambda kv: -len(kv[1])):
        print("  %4d  %s" % (len(hits), p))
        if a.v:
            for no, _, text in hits:
                print("          %d: %s" % (no, text[:100]))

    print("\n== summary (BENCHMARKS.md, Structure)")
    print("| figure | value |")
    print("|---|---:|")
    print("| source files of src/, cli/, include/ over %d lines | %d |" % (a.file_lines, len(big)))
    print("| functions of src/, cli/ over %d lines | %s |" % (a.func_lines, "lizard missing" if nlong is None else nlong))
    print("| functions of src/, cli/ over CCN %d | %s |" % (a.ccn, "lizard missing" if nccn is None else nccn))
    print("| include cycles between modules of src/ | %d |" % len(cyc))
    print("| call cycles between modules of src/ (objects of a build) | %s |"
          % ("not measured (--build DIR)" if lcyc is None else
             "%d (%s)" % (len(lcyc), "; ".join(" <-> ".join(c) for c in lcyc)) if lcyc else "0"))
    print("| lines outside src/backend/ that ask which backend | %d (in %d files) |" % (total, len(per_file)))
    return 3 if fn is None else 0


if __name__ == "__main__":
    sys.exit(main())
