# torch_pkg.py - `kforge export RUN --torch -o DIR` (docs/torch.md): writes DIR/torch, a
# small Python package that makes the exported dispatcher a PyTorch custom op,
# torch.ops.kforge.<entry>, registered with torch.library and built through
# torch.utils.cpp_extension on first import (the dispatcher itself with the command
# kforge checked it with). Run by libkforge as python3 -c with SPEC.json OUTDIR; the spec
# (written by src/export/torch.c) holds the task's directory, the dispatcher's path and
# the shapes the package's test runs at, each with every buffer's extents and every
# scalar's value, as kforge computes them. Prints the package's directory. The op's
# arguments are the task's in buffers, then the sizes no in buffer's extent gives; its
# results are the out buffers. It refuses (exit 2, the reason on stderr) tasks with
# inout buffers (an op that writes its inputs).
import json
import os
import re
import shutil
import sys

CTYPE = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t"}
ATEN = {"f32": "at::kFloat", "f64": "at::kDouble", "i32": "at::kInt", "i64": "at::kLong", "u8": "at::kByte"}
TORCH = {"f32": "torch.float32", "f64": "torch.float64", "i32": "torch.int32", "i64": "torch.int64",
         "u8": "torch.uint8"}


def cexpr(e, sizes):
    """A task expression (C syntax over sizes) as C++ over the op's size variables."""
    return re.sub(r"[A-Za-z_][A-Za-z_0-9]*", lambda m: "s_" + m.group(0) if m.group(0) in sizes else m.group(0),
                  str(e))


def main():
    spec = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    task = json.load(open(os.path.join(spec["task"], "task.json")))
    entry, name = task["entry"], task["name"]
    sizes = list(task["sizes"])
    args = task["args"]
    if any(a.get("io") == "inout" for a in args):
        sys.stderr.write("kforge export --torch: %s has inout buffers; an op that writes its inputs is not "
                         "exported (the C dispatcher is)\n" % name)
        return 2
    ins = [a for a in args if "shape" in a and a["io"] == "in"]
    outs = [a for a in args if "shape" in a and a["io"] == "out"]
    given = {}
    for a in ins:
        for d, e in enumerate(a["shape"]):
            if isinstance(e, str) and e.strip() in sizes and e.strip() not in given:
                given[e.strip()] = (a["name"], d)
    free = [s for s in sizes if s not in given]
    pkg = "kforge_" + name
    pdir = os.path.join(out, pkg)
    os.makedirs(pdir, exist_ok=True)
    disp = os.path.basename(spec["dispatcher"])
    shutil.copyfile(spec["dispatcher"], os.path.join(pdir, disp))

    # op.cpp: checks, sizes, outputs, the call
    proto = ", ".join(("const " if a.get("io") == "in" else "") + CTYPE[a["type"]] + (" *" if "shape" in a else " ")
                      + a["name"] for a in args)
    params = ["const at::Tensor &%s_in" % a["name"] for a in ins] + ["int64_t s_%s" % s for s in free]
    body = []
    for a in ins:
        n, nd = a["name"], len(a["shape"])
        body.append('    TORCH_CHECK(%s_in.device().is_cpu(), "kforge.%s: %s must be a CPU tensor");' % (n, entry, n))
        body.append('    TORCH_CHECK(%s_in.scalar_type() == %s, "kforge.%s: %s must be %s, not ", %s_in.scalar_type());'
                    % (n, ATEN[a["type"]], entry, n, TORCH[a["type"]], n))
        body.append('    TORCH_CHECK(%s_in.dim() == %d, "kforge.%s: %s must have %d dimension(s), not ", %s_in.dim());'
                    % (n, nd, entry, n, nd, n))
        body.append("    const at::Tensor %s = %s_in.contiguous();" % (n, n))
    for s in sizes:
        if s in given:
            body.append("    const int64_t s_%s = %s.size(%d);" % (s, given[s][0], given[s][1]))
        lo, hi = task["sizes"][s]
        body.append('    TORCH_CHECK(s_%s >= %d && s_%s <= %d, "kforge.%s: %s = ", s_%s, " is outside [%d, %d], '
                    'the sizes its kernels were verified on");' % (s, lo, s, hi, entry, s, s, lo, hi))
    for c in task.get("constraints", []):
        body.append('    TORCH_CHECK(%s, "kforge.%s: the task requires %s");' % (cexpr(c, sizes), entry, c))
    for a in ins:
        for d, e in enumerate(a["shape"]):
            body.append('    TORCH_CHECK(%s.size(%d) == (%s), "kforge.%s: %s.size(%d) must be %s");'
                        % (a["name"], d, cexpr(e, sizes), entry, a["name"], d, e))
    for a in outs:
        ext = ", ".join("(int64_t)(%s)" % cexpr(e, sizes) for e in a["shape"])
        body.append("    at::Tensor %s = at::empty({%s}, at::TensorOptions().dtype(%s));"
                    % (a["name"], ext, ATEN[a["type"]]))
    call = []
    for a in args:
        if "shape" in a:
            call.append("%s.data_ptr<%s>()" % (a["name"], CTYPE[a["type"]]))
        else:
            call.append("(%s)(%s)" % (CTYPE[a["type"]], cexpr(a["value"], sizes)))
    body.append("    %s(%s);" % (entry, ", ".join(call)))
    if len(outs) == 1:
        ret, schema_ret = "at::Tensor", "Tensor"
        body.append("    return %s;" % outs[0]["name"])
    else:
        ret, schema_ret = "std::vector<at::Tensor>", "Tensor[]"
        body.append("    return {%s};" % ", ".join(a["name"] for a in outs))
    schema = "%s(%s) -> %s" % (entry, ", ".join(["Tensor %s" % a["name"] for a in ins] +
                                               ["int %s" % s for s in free]), schema_ret)
    with open(os.path.join(pdir, "op.cpp"), "w") as f:
        f.write("""// op.cpp - torch.ops.kforge.%(entry)s: the dispatcher kforge exported for the task %(name)s
// (%(disp)s, beside this file), as a PyTorch custom op for CPU tensors. Generated by
// `kforge export --torch`; built by __init__.py through torch.utils.cpp_extension.
#include <torch/extension.h>

#include <cstdint>
#include <vector>

extern "C" void %(entry)s(%(proto)s);

namespace {
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }

%(ret)s op(%(params)s) {
%(body)s
}
} // namespace

TORCH_LIBRARY_FRAGMENT(kforge, m) { m.def("%(schema)s"); }
TORCH_LIBRARY_IMPL(kforge, CPU, m) { m.impl("%(entry)s", &op); }
""" % {"entry": entry, "name": name, "disp": disp, "proto": proto, "ret": ret, "params": ", ".join(params),
            "body": "\n".join(body), "schema": schema})

    with open(os.path.join(pdir, "__init__.py"), "w") as f:
        f.write('''"""torch.ops.kforge.%(entry)s: the kernels kforge exported for %(name)s, as a PyTorch op.

Importing this package builds the dispatcher (%(disp)s) with the command kforge checked it
with, then the op's binding (op.cpp) through torch.utils.cpp_extension, once (into build/
here, or $KFORGE_TORCH_BUILD), and registers the op: %(schema)s
"""
import os
import subprocess

import torch
from torch.utils import cpp_extension

_here = os.path.dirname(os.path.abspath(__file__))
_build = os.environ.get("KFORGE_TORCH_BUILD") or os.path.join(_here, "build")


def _load():
    os.makedirs(_build, exist_ok=True)
    src = os.path.join(_here, "%(disp)s")
    so = os.path.join(_build, "lib%(name)s_dispatch.so")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
        subprocess.check_call([os.environ.get("CC", "cc"), "-O2", "-march=native", "-std=gnu11", "-fPIC",
                               "-shared", "-fno-fast-math", "-o", so, src, "-lm", "-Wl,-z,defs"])
    cpp_extension.load(name="kforge_%(name)s_op", sources=[os.path.join(_here, "op.cpp")],
                       build_directory=_build, extra_ldflags=[so, "-Wl,-rpath," + _build],
                       is_python_module=False, verbose=False)


_load()
%(entry)s = torch.ops.kforge.%(entry)s
''' % {"entry": entry, "name": name, "disp": disp, "schema": schema})

    # the test: the op against the task's reference at the shapes kforge chose
    tdir = os.path.join(out, "reference")
    os.makedirs(tdir, exist_ok=True)
    ref = "reference.py" if task.get("reference") else "reference.c"
    for fn in os.listdir(spec["task"]):
        if fn.endswith((".py", ".c", ".h", ".json")):
            shutil.copyfile(os.path.join(spec["task"], fn), os.path.join(tdir, fn))
    tol = {}
    for a in outs:
        t = dict(task.get("tolerance", {}))
        t.update(a.get("tolerance", {}))
        default = {"f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12)}.get(a["type"], (0, 0))
        tol[a["name"]] = [t.get("rtol", default[0]), t.get("atol", default[1])]
    meta = {"entry": entry, "args": args, "ins": [a["name"] for a in ins], "free": free,
            "outs": [a["name"] for a in outs], "shapes": spec["shapes"], "tolerance": tol, "reference": ref}
    with open(os.path.join(out, "test_%s.py" % name), "w") as f:
        f.write(TEST % {"pkg": pkg, "name": name, "meta": json.dumps(meta)})
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(README % {"pkg": pkg, "name": name, "entry": entry, "schema": schema, "disp": disp,
                          "out": os.path.abspath(out), "run": spec.get("run", "RUN"),
                          "example": ", ".join(["x"] if len(ins) == 1 else [a["name"] for a in ins])})
    print(os.path.abspath(out))
    return 0


TEST = '''"""The exported op torch.ops.kforge.%(name)s against the task's reference (reference/),
at the task's visible shapes and a few drawn ones (kforge export --torch wrote them), with the
task's tolerance. Run: python3 test_%(name)s.py (or pytest). Exit 0 when every shape agrees."""
import ctypes
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import %(pkg)s  # noqa: E402  the one import line a model needs

META = json.loads(%(meta)r)
DT = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
CT = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
      "u8": ctypes.c_uint8}


def draw(a, dims, g):
    init = a.get("init", {})
    dist = init.get("dist", "normal" if a["type"] in ("f32", "f64") else "int")
    if dist == "normal":
        return torch.randn(dims, generator=g, dtype=torch.float64).mul(init.get("std", 1)).add(
            init.get("mean", 0)).to(DT[a["type"]])
    if dist == "uniform":
        lo, hi = init.get("lo", 0), init.get("hi", 1)
        return (torch.rand(dims, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(DT[a["type"]])
    lo, hi = init.get("lo", 0), init.get("hi", 255 if a["type"] == "u8" else 100)
    return torch.randint(int(lo), int(hi) + 1, dims, generator=g).to(DT[a["type"]])


def reference():
    path = os.path.join(HERE, "reference", META["reference"])
    if path.endswith(".py"):
        spec = importlib.util.spec_from_file_location("kforge_task_reference", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, META["entry"])

        def call(values):
            outs = [v for a, v in zip(META["args"], values) if a.get("io") == "out"]
            r = fn(*values)
            if r is not None:
                for o, x in zip(outs, [r] if isinstance(r, torch.Tensor) else list(r)):
                    o.copy_(x.reshape(o.shape))
        return call
    so = os.path.join(tempfile.mkdtemp(), "reference.so")
    subprocess.check_call([os.environ.get("CC", "cc"), "-O2", "-march=native", "-std=gnu11", "-fPIC",
                           "-shared", "-fno-fast-math", "-o", so, path, "-lm"])
    fn = getattr(ctypes.CDLL(so), META["entry"])

    def call(values):
        fn(*[ctypes.c_void_p(v.data_ptr()) if "shape" in a else CT[a["type"]](v)
             for a, v in zip(META["args"], values)])
    return call


def test_%(name)s():
    ref, g, bad = reference(), torch.Generator().manual_seed(1), 0
    for sh in META["shapes"]:
        values, named = [], {}
        for a, dims, sv in zip(META["args"], sh["dims"], sh["scalars"]):
            if "shape" not in a:
                values.append(sv)
            elif a["io"] == "out":
                o = torch.empty(dims, dtype=DT[a["type"]])
                values.append(o.fill_(float("nan")) if o.is_floating_point() else o.fill_(0))
            else:
                values.append(draw(a, dims, g))
            named[a["name"]] = values[-1]
        got = getattr(torch.ops.kforge, META["entry"])(*[named[n] for n in META["ins"]],
                                                       *[sh["sizes"][s] for s in META["free"]])
        got = [got] if isinstance(got, torch.Tensor) else list(got)
        ref(values)
        for n, x in zip(META["outs"], got):
            rtol, atol = META["tolerance"][n]
            want = named[n]
            ok = torch.equal(x, want) if rtol == 0 and atol == 0 else torch.allclose(
                x.double(), want.double(), rtol=rtol, atol=atol)
            print("%%s %%s %%s" %% ("ok  " if ok else "FAIL", n, sh["sizes"]))
            bad += not ok
    assert not bad, "%%d output(s) differ from the reference" %% bad


if __name__ == "__main__":
    try:
        test_%(name)s()
    except AssertionError as e:
        print(e)
        sys.exit(1)
'''

README = '''# %(pkg)s

The kernels kforge found for the task `%(name)s`, checked and exported by kforge (the
dispatcher `%(pkg)s/%(disp)s` picks the winning kernel by shape), as a PyTorch custom op for
CPU tensors:

    torch.ops.kforge.%(schema)s

## Use it in a model

Put `%(out)s` on `sys.path` (or `PYTHONPATH`), then add the one import line:

```python
import %(pkg)s  # registers torch.ops.kforge.%(entry)s
y = torch.ops.kforge.%(entry)s(%(example)s)
```

The first import builds the dispatcher (with the command kforge checked it with) and the
op's binding (`op.cpp`, through `torch.utils.cpp_extension`) into `%(pkg)s/build/`
(`KFORGE_TORCH_BUILD` moves it); later imports reuse the build. The op accepts the sizes
the kernels were verified on (the task's ranges and constraints) and says so otherwise.

## Test

```sh
python3 test_%(name)s.py
```

compares the op with the task's reference (copied into `reference/`) at the task's visible
shapes and a few others, with the task's tolerance.

Made by `kforge export %(run)s --torch` (docs/torch.md).
'''

if __name__ == "__main__":
    sys.exit(main())
