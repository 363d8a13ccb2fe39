#!/usr/bin/env python3
"""bench/torch_compare.py - the CUDA backend's "for the record" comparisons, on a GPU host.

(a) How long a PyTorch `load_inline` harness takes to reach a verdict on a kernel-mode
    candidate (cold compile of a fresh extension + one correctness check), to set beside
    `kforge check` (NVRTC).
(b) The bundled candidates' kernel times with CUDA events and an L2 flush before every run
    (as `kforge bench` does), and the bf16 GEMM (bgemm) beside cuBLAS through torch.mm
    (sgemm too, with TF32 off).

How: each task's candidates/fast.cu (and reference.cu) is read, its `kforge:launch`
directives and `kforge:param` defaults are parsed, the launch expressions are evaluated
over the shape's sizes, and a C++/CUDA wrapper is generated that launches the kernels in
order with the task's arguments (buffers as torch tensors, scalars as int64/double). The
kernel files get a prelude like kforge's (src/backend/cuda/prelude.cuh); each file is put
in its own C++ namespace (its #includes hoisted out, `extern "C"` dropped, its macros
#undef'd after it) so several kernel files can share one translation unit.

Builds (each in a fresh build directory, unique name, removed afterwards):
  - "shared": every selected task's reference + candidate in ONE extension: used for the
    correctness checks on every visible shape and for the timings;
  - "cand:TASK" for each task of --verdict-tasks (default softmax,sgemm,bgemm): the
    candidate alone, a cold compile as a harness sees for each new candidate; its check
    runs it against the reference of the shared build (a harness builds the reference
    once), so verdict = this compile + this check.
A --budget (seconds, default 420) stops starting compiles that would not fit; whatever was
skipped is said in the output. Every task's failure is caught and reported in the tables.

Usage:
  python3 bench/torch_compare.py [--tasks softmax,sgemm] [--verdict-tasks softmax,sgemm,bgemm]
        [--reps 30] [--warmup 5] [--budget 420] [--out result.json] [--keep-build]
  python3 bench/torch_compare.py --dry-run [--emit DIR]   # no torch needed: parse, evaluate,
        print the generated sources (DIR: write cuda.cu / main.cpp per build for nvcc tests)
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK_DIR = os.path.join(ROOT, "tasks", "cuda")

# ------------------------------------------------------------------------------------
# Integer expressions (docs/tasks.md): 64-bit, C semantics (division truncates toward
# zero, % takes the dividend's sign), + - * / % unary - ! +, comparisons, && ||, ?:,
# parentheses, min(a, b), max(a, b). No eval().

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class ExprError(Exception):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(==|!=|<=|>=|&&|\|\||[-+*/%!<>?:(),]))")


def _tokenize(text):
    toks, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError("bad character at %d in %r" % (pos, text))
        pos = m.end()
        if m.group(1) is not None:
            toks.append(("num", int(m.group(1))))
        elif m.group(2) is not None:
            toks.append(("name", m.group(2)))
        else:
            toks.append(("op", m.group(3)))
    toks.append(("end", None))
    return toks


def _chk(v):
    if v < INT64_MIN or v > INT64_MAX:
        raise ExprError("integer overflow")
    return v


def _cdiv(a, b):
    if b == 0:
        raise ExprError("division by zero")
    q = abs(a) // abs(b)
    return _chk(-q if (a < 0) != (b < 0) else q)


def _cmod(a, b):
    return _chk(a - b * _cdiv(a, b))


class _Parser:
    def __init__(self, text, env):
        self.toks, self.i, self.env, self.text = _tokenize(text), 0, env, text

    def peek(self):
        return self.toks[self.i]

    def take(self, op=None):
        t = self.toks[self.i]
        if op is not None and t != ("op", op):
            raise ExprError("expected %r in %r" % (op, self.text))
        self.i += 1
        return t

    def parse(self):
        v = self.ternary()
        if self.peek()[0] != "end":
            raise ExprError("trailing text in %r" % self.text)
        return v

    def ternary(self):
        c = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take()
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return a if c else b
        return c

    LEVELS = [["||"], ["&&"], ["==", "!="], ["<", "<=", ">", ">="], ["+", "-"], ["*", "/", "%"]]

    def binary(self, lvl):
        if lvl == len(self.LEVELS):
            return self.unary()
        v = self.binary(lvl + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self.LEVELS[lvl]:
            op = self.take()[1]
            w = self.binary(lvl + 1)
            if op == "||":
                v = int(bool(v) or bool(w))
            elif op == "&&":
                v = int(bool(v) and bool(w))
            elif op == "==":
                v = int(v == w)
            elif op == "!=":
                v = int(v != w)
            elif op == "<":
                v = int(v < w)
            elif op == "<=":
                v = int(v <= w)
            elif op == ">":
                v = int(v > w)
            elif op == ">=":
                v = int(v >= w)
            elif op == "+":
                v = _chk(v + w)
            elif op == "-":
                v = _chk(v - w)
            elif op == "*":
                v = _chk(v * w)
            elif op == "/":
                v = _cdiv(v, w)
            else:
                v = _cmod(v, w)
        return v

    def unary(self):
        t = self.peek()
        if t == ("op", "-"):
            self.take()
            return _chk(-self.unary())
        if t == ("op", "+"):
            self.take()
            return self.unary()
        if t == ("op", "!"):
            self.take()
            return int(not self.unary())
        return self.primary()

    def primary(self):
        t = self.take()
        if t[0] == "num":
            return _chk(t[1])
        if t == ("op", "("):
            v = self.ternary()
            self.take(")")
            return v
        if t[0] == "name":
            if t[1] in ("min", "max") and self.peek() == ("op", "("):
                self.take("(")
                a = self.ternary()
                self.take(",")
                b = self.ternary()
                self.take(")")
                return min(a, b) if t[1] == "min" else max(a, b)
            if t[1] not in self.env:
                raise ExprError("unknown name %r in %r" % (t[1], self.text))
            return self.env[t[1]]
        raise ExprError("unexpected %r in %r" % (t[1], self.text))


def eval_expr(text, env):
    if isinstance(text, bool):
        raise ExprError("boolean where an integer was expected")
    if isinstance(text, int):
        return text
    return _Parser(str(text), env).parse()


# ------------------------------------------------------------------------------------
# Kernel files: directives, parameters, wrapper generation.

CTYPE = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t",
         "f16": "__half", "bf16": "__nv_bfloat16"}
FLOAT_TYPES = ("f32", "f64", "f16", "bf16")
DEFAULT_TOL = {"f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12), "f16": (1e-2, 1e-3), "bf16": (2e-2, 1e-2)}

# kforge's prelude (src/backend/cuda/prelude.cuh) typedefs the fixed-width integers itself
# (int64_t = long long); in a torch build <cstdint> already defines them (int64_t = long),
# so the equivalent prelude includes <cstdint> instead.
PRELUDE = "#include <cstdint>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"


def _split_top(s, sep=","):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out]


def _parse_launch(body, where):
    """kernel=NAME grid=(..) block=(..) smem=EXPR -> dict of raw expressions."""
    fields, i = {}, 0
    while i < len(body):
        m = re.compile(r"\s*(\w+)\s*=\s*").match(body, i)
        if not m:
            if body[i:].strip() == "":
                break
            raise ExprError("%s: cannot parse %r" % (where, body[i:]))
        key, i = m.group(1), m.end()
        if i < len(body) and body[i] == "(":
            depth, j = 0, i
            while j < len(body):
                if body[j] == "(":
                    depth += 1
                elif body[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if depth != 0:
                raise ExprError("%s: unbalanced parentheses" % where)
            fields[key], i = body[i:j + 1], j + 1
        else:
            m2 = re.compile(r"\S+").match(body, i)
            fields[key], i = m2.group(0), m2.end()
    if "kernel" not in fields or not re.fullmatch(r"[A-Za-z_]\w*", fields["kernel"]):
        raise ExprError("%s: kernel= missing or not an identifier" % where)

    def dims(v):
        if v is None:
            return ["1", "1", "1"]
        v = v.strip()
        parts = _split_top(v[1:-1]) if v.startswith("(") and v.endswith(")") else [v]
        # "(n+1)/2" alone starts with "(" too: a single expression, not a tuple, when the
        # outer parentheses do not enclose the whole text
        if v.startswith("(") and _closing(v) != len(v) - 1:
            parts = [v]
        if not 1 <= len(parts) <= 3 or any(p == "" for p in parts):
            raise ExprError("%s: bad dimension list %r" % (where, v))
        return parts + ["1"] * (3 - len(parts))

    unknown = set(fields) - {"kernel", "grid", "block", "smem"}
    if unknown:
        raise ExprError("%s: unknown launch fields %s" % (where, sorted(unknown)))
    return {"kernel": fields["kernel"], "grid": dims(fields.get("grid")),
            "block": dims(fields.get("block")), "smem": fields.get("smem", "0")}


def _closing(s):
    depth = 0
    for j, ch in enumerate(s):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def parse_kernel_file(path):
    src = open(path).read()
    launches, params = [], {}
    for ln, line in enumerate(src.splitlines(), 1):
        m = re.search(r"kforge:launch\b(.*)", line)
        if m:
            body = re.sub(r"\*/.*$", "", m.group(1)).strip()
            launches.append(_parse_launch(body, "%s:%d" % (path, ln)))
        m = re.search(r"kforge:param\s+([A-Za-z_]\w*)\s*=\s*(.*)", line)
        if m:
            vals = [v for v in _split_top(re.sub(r"\*/.*$", "", m.group(2)).strip()) if v]
            if not vals:
                raise ExprError("%s:%d: kforge:param without values" % (path, ln))
            params[m.group(1)] = int(vals[0], 0)   # the default is the first value
    if not launches:
        raise ExprError("%s: no kforge:launch directive" % path)
    if len(launches) > 8:
        raise ExprError("%s: more than 8 launches" % path)
    return {"path": path, "src": src, "launches": launches, "params": params}


def launch_config(kf, sizes):
    """The 7 integers (grid xyz, block xyz, smem) of every launch at these sizes."""
    env = dict(sizes)
    env.update(kf["params"])
    cfg = []
    for L in kf["launches"]:
        vals = [eval_expr(e, env) for e in L["grid"] + L["block"] + [L["smem"]]]
        if any(v < 0 for v in vals):
            raise ExprError("%s: negative launch dimension %s for %s" % (kf["path"], vals, L["kernel"]))
        cfg.extend(vals)
    return cfg


def load_task(name):
    d = os.path.join(TASK_DIR, name)
    task = json.load(open(os.path.join(d, "task.json")))
    task["dir"] = d
    return task


def _sanitize(name):
    return re.sub(r"\W", "_", name)


def section(task, side, kf):
    """One kernel file in its own namespace, the includes hoisted, macros undone after."""
    ns = "kf_%s_%s" % (_sanitize(task["name"]), side)
    includes, body = [], []
    for line in kf["src"].splitlines():
        if re.match(r"\s*#\s*include\b", line):
            includes.append(line.strip())
            body.append("")          # keep the line numbers of the file
        else:
            body.append(line)
    text = "\n".join(body)
    text = re.sub(r'extern\s+"C"\s+(?=(__global__|__device__|static|void|__launch_bounds__))', "", text)
    macros = set(re.findall(r"^\s*#\s*define\s+([A-Za-z_]\w*)", kf["src"], re.M)) | set(kf["params"])
    pre = ["#define %s %d" % (k, v) for k, v in sorted(kf["params"].items())]
    code = "\n".join(["// ---- %s %s: %s" % (task["name"], side, os.path.relpath(kf["path"], ROOT))]
                     + pre + ["namespace %s {" % ns, '#line 1 "%s"' % os.path.relpath(kf["path"], ROOT),
                              text, "} // namespace %s" % ns]
                     + ["#undef %s" % m for m in sorted(macros)])
    return ns, includes, code


def wrapper(task, side, kf, binding="pybind"):
    """The host function that launches the file's kernels in order: returns (cuda, decl, name)."""
    ns = "kf_%s_%s" % (_sanitize(task["name"]), side)
    fn = ns + "_run"
    params, call = [], []
    for a in task["args"]:
        n = "a_" + a["name"]
        t = a["type"]
        if "shape" in a:
            params.append("torch::Tensor " + n)
            const = "const " if a.get("io", "in") == "in" else ""
            call.append("reinterpret_cast<%s%s *>(%s.data_ptr())" % (const, CTYPE[t], n))
        elif t in ("f32", "f64"):
            params.append("double " + n)
            call.append("(%s)%s" % (CTYPE[t], n))
        else:
            params.append("int64_t " + n)
            call.append("(%s)%s" % (CTYPE[t], n))
    # pybind11 converts a list to std::vector; a torch op takes int[] as IntArrayRef
    cfgt = "std::vector<int64_t>" if binding == "pybind" else "at::IntArrayRef"
    sig = "void %s(%s, %s cfg, int64_t stream)" % (fn, ", ".join(params), cfgt)
    nl = len(kf["launches"])
    lines = [sig + " {",
             '    TORCH_CHECK(cfg.size() == %d, "%s: expected %d launch integers");' % (7 * nl, fn, 7 * nl)]
    for a in task["args"]:
        if "shape" in a:
            lines.append('    TORCH_CHECK(a_%s.is_cuda() && a_%s.is_contiguous(), "%s: a contiguous CUDA tensor");'
                         % (a["name"], a["name"], a["name"]))
    lines.append("    cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);")
    lines.append("    cudaError_t e;")
    for i, L in enumerate(kf["launches"]):
        o = 7 * i
        lines.append("    if (cfg[%d] * cfg[%d] * cfg[%d] > 0) {" % (o, o + 1, o + 2))
        lines.append("        %s::%s<<<dim3((unsigned)cfg[%d], (unsigned)cfg[%d], (unsigned)cfg[%d]), "
                     "dim3((unsigned)cfg[%d], (unsigned)cfg[%d], (unsigned)cfg[%d]), (size_t)cfg[%d], st>>>(%s);"
                     % (ns, L["kernel"], o, o + 1, o + 2, o + 3, o + 4, o + 5, o + 6, ", ".join(call)))
        lines.append("        e = cudaGetLastError();")
        lines.append('        TORCH_CHECK(e == cudaSuccess, "launch %d (%s): ", cudaGetErrorString(e));'
                     % (i + 1, L["kernel"]))
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines), sig + ";", fn


def generate(items, binding="pybind", lib=None):
    """items: [(task, side, kf)] -> (cuda_source, cpp_source, [function names], kernels).
    binding "pybind": load_inline's own pybind11 module (functions=...; needs Python.h);
    "ops": no implicit headers, the functions registered as torch ops with TORCH_LIBRARY(lib)
    and called through torch.ops.lib (no Python.h needed)."""
    includes, sections, wrappers, decls, fns = [], [], [], [], []
    for task, side, kf in items:
        _, inc, code = section(task, side, kf)
        for i in inc:
            if i not in includes:
                includes.append(i)
        sections.append(code)
        w, d, fn = wrapper(task, side, kf, binding)
        wrappers.append(w)
        decls.append(d)
        fns.append(fn)
    # load_inline puts torch/types.h, cuda.h and cuda_runtime.h first, then this text
    head = PRELUDE + "\n".join(includes) + "\n"
    body = head + "\n".join(sections) + "\n"
    nlines = 3 + body.count("\n") + 1
    cuda = body + '#line %d "cuda.cu"\n' % (nlines + 1) + "\n\n".join(wrappers) + "\n"
    if binding == "pybind":
        cpp = "#include <vector>\n" + "\n".join(decls) + "\n"
    else:
        # the three lines load_inline would have put first, so line numbers stay the same
        cuda = "\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", cuda])
        cpp = "\n".join(["#include <torch/types.h>", "#include <torch/library.h>", "#include <vector>"] + decls
                        + ["TORCH_LIBRARY(%s, m) {" % lib] + ['    m.def("%s", &%s);' % (f, f) for f in fns] + ["}", ""])
    return cuda, cpp, fns, body


def kernel_files(task, candidate):
    ref = parse_kernel_file(os.path.join(task["dir"], "reference.cu"))
    cand = parse_kernel_file(os.path.join(task["dir"], "candidates", candidate))
    return ref, cand


# ------------------------------------------------------------------------------------
# Dry run: no torch.

def dry_run(args, tasks):
    ok = True
    items = []
    for name in tasks:
        try:
            task = load_task(name)
            ref, cand = kernel_files(task, args.candidate)
            print("## %s (%s, params %s)" % (name, os.path.relpath(cand["path"], ROOT), cand["params"] or "none"))
            for sh in task["shapes"]:
                sz = {k: int(v) for k, v in sh.items()}
                print("  shape %s: candidate launches %s; reference %s; cost flops=%s bytes=%s" % (
                    " ".join("%s=%d" % kv for kv in sz.items()),
                    _fmt_cfg(cand, launch_config(cand, sz)), _fmt_cfg(ref, launch_config(ref, sz)),
                    eval_expr(task.get("cost", {}).get("flops", "0"), sz),
                    eval_expr(task.get("cost", {}).get("bytes", "0"), sz)))
                for a in task["args"]:
                    if "shape" in a:
                        [eval_expr(e, sz) for e in a["shape"]]
                    elif isinstance(a["value"], str):
                        eval_expr(a["value"], sz)
            items.append((name, task, ref, cand))
        except Exception as e:
            ok = False
            print("## %s: ERROR %s" % (name, e))
    builds = [("shared", [(t, s, kf) for _, t, ref, cand in items for s, kf in (("ref", ref), ("cand", cand))])]
    builds += [("cand_" + n, [(t, "cand", cand)]) for n, t, _, cand in items if n in args.verdict_tasks]
    for bname, its in builds:
        if not its:
            continue
        binding = "ops" if args.binding == "ops" else "pybind"
        cuda, cpp, fns, kernels = generate(its, binding, "kf_" + bname)
        if args.emit and binding == "ops":
            d = os.path.join(args.emit, bname)
            os.makedirs(d, exist_ok=True)
            open(os.path.join(d, "cuda.cu"), "w").write(cuda)
            open(os.path.join(d, "main.cpp"), "w").write(cpp)
            open(os.path.join(d, "kernels.cu"), "w").write(kernels)
        elif args.emit:
            d = os.path.join(args.emit, bname)
            os.makedirs(d, exist_ok=True)
            # exactly what load_inline writes (its implicit headers included)
            open(os.path.join(d, "cuda.cu"), "w").write(
                "\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", cuda]))
            mod = ["#include <torch/extension.h>", cpp, "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
            mod += ['m.def("%s", torch::wrap_pybind_function(%s), "%s");' % (f, f, f) for f in fns] + ["}"]
            open(os.path.join(d, "main.cpp"), "w").write("\n".join(mod))
            open(os.path.join(d, "kernels.cu"), "w").write(kernels)   # the kernels alone, no torch
        if args.print_source:
            print("\n### build %s: functions %s\n--- cpp_sources\n%s--- cuda_sources (wrappers)" % (bname, fns, cpp))
            print(cuda[len(kernels):])
        else:
            print("build %s: %d functions, %d lines of CUDA" % (bname, len(fns), cuda.count("\n")))
    return 0 if ok else 1


def _fmt_cfg(kf, cfg):
    out = []
    for i, L in enumerate(kf["launches"]):
        c = cfg[7 * i:7 * i + 7]
        out.append("%s<<<(%d,%d,%d),(%d,%d,%d),%d>>>" % (L["kernel"], *c))
    return " ".join(out)


# ------------------------------------------------------------------------------------
# Ninja: load_inline needs it and the torch wheel does not bring it. Where it is missing,
# a small stand-in that runs torch's build.ninja (rules, builds, variables, $-escapes)
# goes first on PATH; the output says which one ran.

NINJA_SHIM = r'''#!PYTHON
import os, re, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
if "--version" in sys.argv:
    print("1.11.1"); sys.exit(0)
jobs = 16
if "-j" in sys.argv:
    jobs = int(sys.argv[sys.argv.index("-j") + 1])
if "-C" in sys.argv:
    os.chdir(sys.argv[sys.argv.index("-C") + 1])
raw = open("build.ninja").read().replace("$\n", "")
def expand(s, env):
    out, i = "", 0
    while i < len(s):
        c = s[i]
        if c != "$":
            out += c; i += 1; continue
        n = s[i + 1] if i + 1 < len(s) else ""
        if n in "$ :":
            out += n; i += 2; continue
        if n == "{":
            j = s.index("}", i); out += env.get(s[i + 2:j], ""); i = j + 1; continue
        m = re.match(r"[A-Za-z0-9_-]+", s[i + 1:])
        out += env.get(m.group(0), "") if m else ""; i += 1 + (len(m.group(0)) if m else 0)
    return out
def split(s):
    parts, cur, i = [], "", 0
    while i < len(s):
        if s[i] == "$" and i + 1 < len(s):
            cur += s[i:i + 2]; i += 2; continue
        if s[i] == " ":
            if cur: parts.append(cur)
            cur = ""
        else:
            cur += s[i]
        i += 1
    if cur: parts.append(cur)
    return parts
top, rules, builds, cur = {}, {}, [], None
for line in raw.split("\n"):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    if line[0] in " \t" and cur is not None:
        k, _, v = line.strip().partition("=")
        cur[k.strip()] = v.strip(); continue
    cur = None
    if line.startswith("rule "):
        cur = rules.setdefault(line[5:].strip(), {})
    elif line.startswith("build "):
        outs, _, rest = line[6:].partition(": ")
        parts = split(rest)
        ins = [p for p in parts[1:] if p not in ("|", "||")]
        b = {"outs": [expand(o, top) for o in split(outs)], "rule": parts[0], "ins": [expand(x, top) for x in ins], "vars": {}}
        builds.append(b); cur = b["vars"]
    elif line.startswith("default "):
        pass
    else:
        k, _, v = line.partition("=")
        top[k.strip()] = expand(v.strip(), top)
made, pending = set(), list(builds)
def run(b):
    env = dict(top); env.update({k: expand(v, top) for k, v in b["vars"].items()})
    env["in"] = " ".join(map(shlex.quote, b["ins"])); env["out"] = " ".join(map(shlex.quote, b["outs"]))
    cmd = expand(rules[b["rule"]]["command"], env)
    print(cmd, flush=True)
    return subprocess.run(cmd, shell=True).returncode
outs_all = {o for b in builds for o in b["outs"]}
while pending:
    ready = [b for b in pending if all(i in made or i not in outs_all for i in b["ins"])]
    if not ready:
        print("ninja shim: dependency cycle", flush=True); sys.exit(1)
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        rcs = list(ex.map(run, ready))
    if any(rcs):
        print("ninja shim: build stopped: subcommand failed", flush=True); sys.exit(1)
    for b in ready:
        pending.remove(b); made.update(b["outs"])
'''


def ensure_ninja(tmp_root):
    import subprocess
    try:
        subprocess.run(["ninja", "--version"], check=True, capture_output=True)
        return "system ninja (%s)" % shutil.which("ninja")
    except Exception:
        pass
    d = os.path.join(tmp_root, "ninja-shim")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "ninja")
    open(p, "w").write(NINJA_SHIM.replace("PYTHON", sys.executable, 1))
    os.chmod(p, 0o755)
    os.environ["PATH"] = d + os.pathsep + os.environ.get("PATH", "")
    return "ninja stand-in (no ninja installed): %s" % p


# ------------------------------------------------------------------------------------
# The GPU run.

DEVICE = "cuda"   # a local self-test of the harness logic swaps in "cpu"

NVCC_FLAGS = ["-O3",
              # torch's extension flags switch off __half/__nv_bfloat16 operators and
              # conversions; NVRTC in kforge does not, so a kernel file compiles the same here
              "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__"]


def pick_binding(requested):
    if requested != "auto":
        return requested
    import sysconfig
    inc = sysconfig.get_path("include", scheme="posix_prefix") or ""
    return "pybind" if os.path.exists(os.path.join(inc, "Python.h")) else "ops"


def build_extension(label, items, tmp_root, binding="pybind"):
    """load_inline in a fresh build directory under tmp_root, unique module name.
    Returns (object whose attributes are the functions, names, build dir)."""
    from torch.utils.cpp_extension import load_inline
    name = "kf_%s_%d_%d" % (_sanitize(label), os.getpid(), int(time.time() * 1000) % 10 ** 9)
    cuda, cpp, fns, _ = generate(items, binding, name)
    bdir = tempfile.mkdtemp(prefix="build-" + _sanitize(label) + "-", dir=tmp_root)
    if binding == "pybind":
        mod = load_inline(name=name, cpp_sources=[cpp], cuda_sources=[cuda], functions=fns,
                          extra_cuda_cflags=NVCC_FLAGS, build_directory=bdir, verbose=False)
    else:
        import torch
        load_inline(name=name, cpp_sources=[cpp], cuda_sources=[cuda], extra_cuda_cflags=NVCC_FLAGS,
                    build_directory=bdir, verbose=False, is_python_module=False, no_implicit_headers=True)
        mod = getattr(torch.ops, name)
    return mod, fns, bdir


class Runner:
    def __init__(self, args, torch, tmp_root, t_start):
        self.args, self.torch, self.tmp_root = args, torch, tmp_root
        self.binding = pick_binding(args.binding)
        self.t_start = t_start
        self.compiles = []          # what was compiled, how long
        self.est = 60.0             # estimated compile time before one was measured
        dev = torch.cuda.get_device_properties(0)
        self.l2 = int(getattr(dev, "L2_cache_size", 0) or 50 * 2 ** 20)
        self.flush_buf = torch.empty(2 * self.l2, dtype=torch.uint8, device=DEVICE)
        self.dtype = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64,
                      "u8": torch.uint8, "f16": torch.float16, "bf16": torch.bfloat16}

    def left(self):
        return self.args.budget - (time.time() - self.t_start)

    def build(self, label, items):
        """A fresh load_inline build; returns (module, seconds) or raises."""
        need = self.est * 1.15
        if self.left() < need:
            msg = "skipped: %.0f s of the budget left, a compile needs ~%.0f s" % (self.left(), need)
            self.compiles.append({"build": label, "skipped": msg})
            raise RuntimeError(msg)
        t0 = time.time()
        try:
            mod, fns, bdir = build_extension(label, items, self.tmp_root, self.binding)
        except Exception as e:
            dt = time.time() - t0
            self.compiles.append({"build": label, "seconds": round(dt, 2), "error": _short(e, 1500)})
            raise
        dt = time.time() - t0
        self.est = max([dt] + [c["seconds"] for c in self.compiles if "functions" in c])
        self.compiles.append({"build": label, "seconds": round(dt, 2), "functions": fns,
                              "build_dir": bdir if self.args.keep_build else "(removed)"})
        return mod, dt

    # -- inputs and calls

    def make_inputs(self, task, sizes, seed):
        torch = self.torch
        g = torch.Generator(device=DEVICE)
        g.manual_seed(seed)
        vals = []
        for a in task["args"]:
            t = a["type"]
            if "shape" not in a:
                v = a["value"]
                if isinstance(v, str):
                    v = eval_expr(v, sizes)
                vals.append(float(v) if t in ("f32", "f64") else int(v))
                continue
            shape = [eval_expr(e, sizes) for e in a["shape"]]
            dt = self.dtype[t]
            if a.get("io", "in") == "out":
                if t in FLOAT_TYPES:
                    x = torch.full(shape, float("nan"), dtype=dt, device=DEVICE)
                else:
                    x = torch.full(shape, torch.iinfo(dt).min, dtype=dt, device=DEVICE)
            else:
                init = a.get("init", {"dist": "normal"} if t in FLOAT_TYPES else
                             {"dist": "int", "lo": 0, "hi": 255 if t == "u8" else 100})
                d = init.get("dist", "normal")
                if d == "normal":
                    x = torch.randn(shape, generator=g, device=DEVICE, dtype=torch.float32)
                    x = (x * float(init.get("std", 1)) + float(init.get("mean", 0))).to(dt)
                elif d == "uniform":
                    lo, hi = float(init["lo"]), float(init["hi"])
                    x = (torch.rand(shape, generator=g, device=DEVICE, dtype=torch.float32) * (hi - lo) + lo).to(dt)
                else:
                    x = torch.randint(int(init["lo"]), int(init["hi"]) + 1, shape, generator=g,
                                      device=DEVICE, dtype=torch.int64).to(dt)
            vals.append(x.contiguous())
        return vals

    def call(self, mod, task, side, vals, cfg):
        fn = getattr(mod, "kf_%s_%s_run" % (_sanitize(task["name"]), side))
        fn(*vals, cfg, self.torch.cuda.current_stream().cuda_stream)

    def fresh_copy(self, task, vals):
        """Outputs re-poisoned and inout buffers restored, so each side starts equal."""
        out = []
        for a, v in zip(task["args"], vals):
            out.append(v.clone() if "shape" in a and a.get("io", "in") != "in" else v)
        return out

    def compare(self, task, got, want):
        torch = self.torch
        res = {"pass": True, "buffers": {}}
        for a, x, y in zip(task["args"], got, want):
            if "shape" not in a or a.get("io", "in") == "in":
                continue
            tol = a.get("tolerance") or task.get("tolerance")
            if tol is None and a["type"] not in FLOAT_TYPES:
                ok = bool(torch.equal(x, y))
                err = 0.0 if ok else float((x.double() - y.double()).abs().max())
                res["buffers"][a["name"]] = {"pass": ok, "max_abs_err": err}
            else:
                rtol, atol = (tol["rtol"], tol["atol"]) if tol else DEFAULT_TOL[a["type"]]
                xf = x.double() if a["type"] in ("f64", "i32", "i64", "u8") else x.float()
                yf = y.double() if a["type"] in ("f64", "i32", "i64", "u8") else y.float()
                ok = bool(torch.allclose(xf, yf, rtol=rtol, atol=atol))
                diff = (xf - yf).abs()
                bad = int((~(diff <= atol + rtol * yf.abs())).sum())
                res["buffers"][a["name"]] = {"pass": ok, "rtol": rtol, "atol": atol, "mismatches": bad,
                                             "max_abs_err": float(torch.nan_to_num(diff, nan=float("inf")).max())}
            res["pass"] = res["pass"] and ok
        return res

    def check(self, task, ref_mod, cand_mod, sizes, ref_kf, cand_kf, seed=1234):
        """Reference and candidate on the same fresh inputs; returns the comparison."""
        t0 = time.time()
        vals = self.make_inputs(task, sizes, seed)
        rv, cv = self.fresh_copy(task, vals), self.fresh_copy(task, vals)
        self.call(ref_mod, task, "ref", rv, launch_config(ref_kf, sizes))
        self.torch.cuda.synchronize()
        t1 = time.time()
        self.call(cand_mod, task, "cand", cv, launch_config(cand_kf, sizes))
        self.torch.cuda.synchronize()
        t2 = time.time()
        res = self.compare(task, cv, rv)
        res["seconds"] = {"inputs_and_reference": round(t1 - t0, 4), "candidate": round(t2 - t1, 4),
                          "compare": round(time.time() - t2, 4)}
        return res, cv

    # -- timing

    def time_fn(self, fn, restore=None):
        """Median CUDA-event time (us) over reps, the L2 flushed by a write of 2x its size
        before every run. 'sync' (as kforge bench): synchronise after the flush, then
        record, launch, record; 'queued': no synchronise (the launch overhead hides behind
        the flush), as triton's do_bench."""
        torch = self.torch
        out = {}
        for mode in ("sync", "queued"):
            for _ in range(self.args.warmup):
                if restore:
                    restore()
                fn()
            torch.cuda.synchronize()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(self.args.reps)]
            t0, n = time.time(), 0
            for s, e in ev:
                if restore:
                    restore()
                self.flush_buf.zero_()
                if mode == "sync":
                    torch.cuda.synchronize()
                s.record()
                fn()
                e.record()
                n += 1
                if time.time() - t0 > 20:      # bound the time of a slow kernel
                    break
            torch.cuda.synchronize()
            ts = [s.elapsed_time(e) * 1000.0 for s, e in ev[:n]]
            out[mode] = {"median_us": statistics.median(ts), "min_us": min(ts), "max_us": max(ts), "runs": len(ts)}
        return out


def _short(e, n=400):
    s = "%s: %s" % (type(e).__name__, e)
    s = s.replace("\n", " | ")
    return s if len(s) <= n else s[:n // 2] + " ... " + s[-n // 2:]


def gpu_run(args, tasks, result):
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    os.environ.setdefault("MAX_JOBS", "16")
    tmp_root = tempfile.mkdtemp(prefix="kf-torch-")
    t_import = time.time()
    R = None
    try:
        import torch
        result.update({"torch": torch.__version__, "cuda": torch.version.cuda, "tasks": {}, "compiles": [],
                       "env": {k: os.environ.get(k) for k in ("TORCH_CUDA_ARCH_LIST", "MAX_JOBS")}})
        result["ninja"] = ensure_ninja(tmp_root)
        torch.cuda.init()
        torch.zeros(1, device=DEVICE)
        torch.cuda.synchronize()
        result["torch_import_and_cuda_init_s"] = round(time.time() - t_import, 2)
        props = torch.cuda.get_device_properties(0)
        result["device"] = {"name": props.name, "sms": props.multi_processor_count,
                            "l2_bytes": int(getattr(props, "L2_cache_size", 0))}
        try:
            if torch.backends.cuda.matmul.allow_tf32:     # sgemm's cuBLAS in true f32 (the default)
                torch.backends.cuda.matmul.allow_tf32 = False
        except Exception as e:
            result["tf32_note"] = _short(e)
        R = Runner(args, torch, tmp_root, t_import)
        result["compiles"] = R.compiles
        result["binding"] = R.binding + (" (load_inline functions=..., pybind11)" if R.binding == "pybind" else
                                         " (no Python.h: TORCH_LIBRARY ops through torch.ops)")
        result["flush_bytes"] = 2 * R.l2
        loaded = {}
        for name in tasks:
            try:
                task = load_task(name)
                loaded[name] = (task,) + kernel_files(task, args.candidate)
            except Exception as e:
                result["tasks"][name] = {"error": "task: " + _short(e)}
        # 1. the shared build: every reference and candidate
        shared = None
        items = [(t, s, kf) for t, ref, cand in loaded.values() for s, kf in (("ref", ref), ("cand", cand))]
        if items:
            try:
                shared, dt = R.build("shared", items)
                print("shared build (%d tasks, reference + candidate each): %.1f s" % (len(loaded), dt), flush=True)
            except Exception as e:
                print("shared build failed: %s" % _short(e, 3000), flush=True)
                result["shared_error"] = _short(e, 3000)
        # 2. checks and timings from the shared build
        for name, (task, ref, cand) in loaded.items():
            tr = result["tasks"].setdefault(name, {})
            tr["shapes"] = []
            if shared is None:
                tr["error"] = "no shared build"
                continue
            for sh in task["shapes"]:
                sizes = {k: int(v) for k, v in sh.items()}
                row = {"sizes": sizes}
                tr["shapes"].append(row)
                try:
                    row.update(shape_run(R, task, shared, ref, cand, sizes))
                except Exception as e:
                    row["error"] = _short(e)
                    traceback.print_exc()
                    try:
                        torch.cuda.synchronize()
                    except Exception as e2:     # a sticky error: every later CUDA call fails too
                        row["error"] += " (then: %s)" % _short(e2, 200)
            print("%s: done (%.0f s elapsed)" % (name, time.time() - R.t_start), flush=True)
        # 3. verdict time: a fresh candidate-only build per task, then one check
        for name in args.verdict_tasks:
            if name not in loaded:
                continue
            task, ref, cand = loaded[name]
            tr = result["tasks"][name]
            v = tr.setdefault("verdict", {})
            v["sizes"] = {k: int(x) for k, x in task["shapes"][0].items()}
            try:
                if shared is not None:
                    v["build"] = "candidate alone"
                    mod, dt = R.build("cand:" + name, [(task, "cand", cand)])
                else:
                    # the shared build failed: this task's reference and candidate together,
                    # so it still gets a check and timings (the compile then includes both)
                    v["build"] = "reference + candidate (shared build failed)"
                    mod, dt = R.build("ref+cand:" + name, [(task, "ref", ref), (task, "cand", cand)])
                v["compile_s"] = round(dt, 2)
                sizes = {k: int(x) for k, x in task["shapes"][0].items()}
                t0 = time.time()
                cmp, _ = R.check(task, shared if shared is not None else mod, mod, sizes, ref, cand, seed=99)
                v["check_s"] = round(time.time() - t0, 3)
                v["verdict_s"] = round(dt + v["check_s"], 2)
                v["check"] = cmp
                print("verdict %s: compile %.1f s + check %.3f s -> %s" % (
                    name, dt, v["check_s"], "pass" if cmp["pass"] else "FAIL"), flush=True)
                if shared is None:
                    tr.pop("error", None)
                    tr["shapes"] = []
                    for sh in task["shapes"]:
                        row = {"sizes": {k: int(x) for k, x in sh.items()}}
                        tr["shapes"].append(row)
                        try:
                            row.update(shape_run(R, task, mod, ref, cand, row["sizes"]))
                        except Exception as e:
                            row["error"] = _short(e)
            except Exception as e:
                v["error"] = _short(e, 1500)
                print("verdict %s: %s" % (name, v["error"]), flush=True)
    finally:
        if R is not None:
            result["compiles"] = R.compiles
        result["total_s"] = round(time.time() - t_import, 1)
        if not args.keep_build:
            shutil.rmtree(tmp_root, ignore_errors=True)
        else:
            result["build_root"] = tmp_root
    return result


def shape_run(R, task, shared, ref, cand, sizes):
    torch = R.torch
    row = {}
    cmp, _ = R.check(task, shared, shared, sizes, ref, cand)
    row["check"] = cmp
    vals = R.make_inputs(task, sizes, 7)
    work = R.fresh_copy(task, vals)
    cfg = launch_config(cand, sizes)
    inout = [(w, v) for a, w, v in zip(task["args"], work, vals) if "shape" in a and a.get("io") == "inout"]

    def restore():
        for w, v in inout:
            w.copy_(v)

    row["kernel"] = R.time_fn(lambda: R.call(shared, task, "cand", work, cfg), restore if inout else None)
    us = row["kernel"]["sync"]["median_us"]
    cost = task.get("cost", {})
    flops = eval_expr(cost.get("flops", "0"), sizes)
    nbytes = eval_expr(cost.get("bytes", "0"), sizes)
    row["flops"], row["bytes"] = flops, nbytes
    row["gbytes_per_s"] = nbytes / (us * 1e-6) / 1e9 if us > 0 else None
    row["tflops"] = flops / (us * 1e-6) / 1e12 if us > 0 else None
    if task["name"] in ("bgemm", "sgemm") and [a["name"] for a in task["args"][:3]] == ["a", "b", "c"]:
        a, b = vals[0], vals[1]
        c2 = torch.empty_like(work[2])
        torch.mm(a, b, out=c2)
        mine = R.fresh_copy(task, vals)
        R.call(shared, task, "cand", mine, cfg)
        torch.cuda.synchronize()
        row["cublas_check"] = R.compare(task, mine, [None, None, c2] + [None] * (len(mine) - 3))
        row["cublas"] = R.time_fn(lambda: torch.mm(a, b, out=c2))
        cus = row["cublas"]["sync"]["median_us"]
        row["cublas_tflops"] = flops / (cus * 1e-6) / 1e12 if cus > 0 else None
        row["cublas_note"] = "torch.mm(a, b, out=c), %s, row-major (m,k)x(k,n)%s" % (
            task["args"][0]["type"], ", TF32 off" if task["args"][0]["type"] == "f32" else
            ", allow_bf16_reduced_precision_reduction=%s" %
            getattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction", "?"))
    return row


# ------------------------------------------------------------------------------------
# Report.

def _f(v, fmt):
    return "-" if v is None else fmt % v


def report(result):
    L = []
    L.append("torch %s (CUDA %s) on %s; %s; binding %s; L2 flush %s bytes; %s" % (
        result.get("torch"), result.get("cuda"), result.get("device", {}).get("name"),
        result.get("ninja"), result.get("binding"), result.get("flush_bytes"), json.dumps(result.get("env"))))
    L.append("")
    L.append("Compiled (load_inline, each in a fresh build directory):")
    for c in result.get("compiles", []):
        if "skipped" in c:
            L.append("- %s: %s" % (c["build"], c["skipped"]))
        elif "error" in c:
            L.append("- %s: FAILED after %.1f s: %s" % (c["build"], c["seconds"], c["error"][:600]))
        else:
            L.append("- %s: %.1f s (%s)" % (c["build"], c["seconds"], ", ".join(c["functions"])))
    L.append("")
    L.append("Time to a verdict through load_inline (candidate alone, cold build; check = first visible "
             "shape against the reference of the shared build, module load included):")
    L.append("")
    L.append("| task | shape | build | load_inline compile s | check s (inputs+ref / candidate / compare) "
             "| verdict s | check |")
    L.append("|---|---|---|---|---|---|---|")
    for name, tr in result.get("tasks", {}).items():
        v = tr.get("verdict")
        if not v:
            continue
        shape = v.get("sizes", {})
        sz = " ".join("%s=%d" % kv for kv in shape.items())
        if "error" in v or "check" not in v:
            L.append("| %s | %s | %s | %s | - | - | %s |" % (name, sz, v.get("build", "?"), _f(v.get("compile_s"), "%.1f"),
                                                     ("error: " + v["error"][:300].replace("|", "/"))
                                                     if "error" in v else "incomplete"))
        else:
            cs = v["check"].get("seconds", {})
            L.append("| %s | %s | %s | %.1f | %.3f (%.3f / %.3f / %.3f) | %.1f | %s |" % (
                name, sz, v.get("build", "?"), v["compile_s"], v["check_s"], cs.get("inputs_and_reference", 0),
                cs.get("candidate", 0), cs.get("compare", 0), v["verdict_s"], _checkstr(v["check"])))
    L.append("")
    L.append("Kernel times (CUDA events, L2 flushed before every run; 'sync' as kforge bench: "
             "synchronise after the flush, then record/launch/record; 'queued': no synchronise):")
    L.append("")
    L.append("| task | shape | check vs reference.cu | kernel us (sync) | kernel us (queued) | GB/s | TFLOP/s "
             "| cuBLAS us (sync) | cuBLAS us (queued) | cuBLAS TFLOP/s | fast vs cuBLAS check |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, tr in result.get("tasks", {}).items():
        if "error" in tr and not tr.get("shapes"):
            L.append("| %s | - | error: %s |  |  |  |  |  |  |  |  |" % (name, tr["error"][:300].replace("|", "/")))
            continue
        for row in tr.get("shapes", []):
            sz = " ".join("%s=%d" % kv for kv in row["sizes"].items())
            if "error" in row or "kernel" not in row:
                L.append("| %s | %s | %s |  |  |  |  |  |  |  |  |" % (
                    name, sz, ("error: " + row["error"][:300].replace("|", "/")) if "error" in row else "incomplete"))
                continue
            k = row["kernel"]
            cb = row.get("cublas")
            L.append("| %s | %s | %s | %.1f | %.1f | %s | %s | %s | %s | %s | %s |" % (
                name, sz, _checkstr(row["check"]), k["sync"]["median_us"], k["queued"]["median_us"],
                _f(row.get("gbytes_per_s"), "%.0f"),
                _f(row.get("tflops"), "%.2f") if row.get("flops") else "-",
                _f(cb and cb["sync"]["median_us"], "%.1f"), _f(cb and cb["queued"]["median_us"], "%.1f"),
                _f(row.get("cublas_tflops"), "%.2f"),
                _checkstr(row["cublas_check"]) if "cublas_check" in row else "-"))
    L.append("")
    L.append("'sync' includes the host launch path inside the event window, as kforge bench's does (a "
             "Python call and the wrapper here, a few us; torch.mm's dispatch for cuBLAS); 'queued' leaves it "
             "out (the launch is enqueued while the flush runs). GB/s and TFLOP/s use the task's cost model and "
             "the 'sync' time; cuBLAS TFLOP/s its 'sync' time too.")
    L.append("")
    if result.get("interrupted"):
        L.append("INTERRUPTED: %s" % result["interrupted"])
    L.append("total %.1f s (torch import + CUDA init %s s)" % (result.get("total_s", 0),
                                                               result.get("torch_import_and_cuda_init_s")))
    return "\n".join(L)


def _checkstr(c):
    if c["pass"]:
        errs = [b.get("max_abs_err", 0) for b in c["buffers"].values()]
        return "pass (max abs err %.2g)" % max(errs) if errs else "pass"
    bad = ["%s: %s mismatches, max abs err %.3g" % (n, b.get("mismatches", "?"), b.get("max_abs_err", 0))
           for n, b in c["buffers"].items() if not b["pass"]]
    return "FAIL (" + "; ".join(bad) + ")"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    # the tasks with a reference.cu: a PyTorch reference's twin (softmax_torch) has none
    all_tasks = sorted(d for d in os.listdir(TASK_DIR) if os.path.isfile(os.path.join(TASK_DIR, d, "task.json"))
                       and os.path.isfile(os.path.join(TASK_DIR, d, "reference.cu")))
    ap.add_argument("--tasks", default=",".join(all_tasks),
                    help="comma list (default: every task of tasks/cuda with a reference.cu)")
    ap.add_argument("--verdict-tasks", default="softmax,sgemm,bgemm",
                    help="tasks that get their own candidate-only build for the verdict time ('' for none)")
    ap.add_argument("--candidate", default="fast.cu", help="file under candidates/ (default fast.cu)")
    ap.add_argument("--reps", type=int, default=30, help="timed runs per figure (>= 20 advised)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--budget", type=float, default=420, help="seconds: no compile is started past it")
    ap.add_argument("--out", help="write the JSON result here")
    ap.add_argument("--binding", choices=("auto", "pybind", "ops"), default="auto",
                    help="pybind: load_inline's functions= module (needs Python.h); ops: TORCH_LIBRARY "
                         "ops without Python.h; auto: pybind where Python.h exists")
    ap.add_argument("--keep-build", action="store_true", help="keep the build directories")
    ap.add_argument("--dry-run", action="store_true", help="no torch: parse, evaluate and generate only")
    ap.add_argument("--print-source", action="store_true", help="with --dry-run: print the generated wrappers")
    ap.add_argument("--emit", help="with --dry-run: write each build's cuda.cu and main.cpp under this folder")
    args = ap.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    args.verdict_tasks = [t for t in args.verdict_tasks.split(",") if t and t in tasks]
    if args.dry_run:
        return dry_run(args, tasks)
    result = {"tasks": {}}

    def on_term(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_term)
    try:
        gpu_run(args, tasks, result)
    except BaseException as e:          # a timeout's SIGTERM, ^C, an import error: report what there is
        result["interrupted"] = _short(e, 2000)
        print("stopped: %s" % result["interrupted"], flush=True)
    text = report(result)
    print(text, flush=True)
    if args.out:
        result["table"] = text
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, default=str)
    return 1 if result.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
