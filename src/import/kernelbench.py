# kernelbench.py - `kforge import kernelbench` (docs/torch.md): reads a problem in the
# KernelBench format (a Model class, get_inputs(), get_init_inputs(), module-level sizes)
# and writes a C task directory whose reference is PyTorch: task.json, reference.py and a
# copy of the problem (problem.py). Run by libkforge as python3 -c with the arguments
# PROBLEM OUTDIR SCALE_LO SCALE_HI; prints one line "KFORGE-IMPORT " + a JSON object:
# {"status": "imported", "name", "dir", "notes"} or {"status": "refused", "reason"}.
#
# What it finds, by running the problem (it is the user's own, trusted, code):
# - arguments and dtypes from forward's signature and get_inputs(); the Model's
#   parameters become inputs, drawn from the secret seed like any input; its buffers (a
#   mask, a permutation, a table) and its frozen parameters (requires_grad=False: values
#   the constructor sets) become inputs with fixed data, a file under data/ of their
#   exact values as the constructor makes them (raw little-endian, row-major; a bool
#   becomes u8 0/1), and the sizes that shape them are kept fixed;
# - sizes: the module-level integers that move tensor extents, found by moving each one
#   (v + 1, v + 2) and fitting every extent as a sum of a * size + b; extents that fit
#   no such form keep their sizes fixed. Ranges are [v * SCALE_LO, v * SCALE_HI];
# - refusals: random ops (two calls on the same inputs differ), stateful modules
#   (forward changes a parameter or buffer), data-dependent output shapes (another
#   draw of the inputs changes an output's shape, or nonzero/unique/masked_select),
#   outputs that are not tensors, dtypes C tasks do not have.
import ast
import importlib.util
import inspect
import json
import math
import os
import re
import shutil
import sys

DTYPES = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "uint8": "u8"}
TOLERANCE = {"f32": {"rtol": 1e-3, "atol": 1e-3}, "f64": {"rtol": 1e-9, "atol": 1e-9}}
DATA_DEPENDENT = ("nonzero", "unique", "unique_consecutive", "masked_select", "argwhere")


class Refused(Exception):
    pass


def load(path):
    spec = importlib.util.spec_from_file_location("kforge_problem", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ident(s, used):
    s = re.sub(r"[^A-Za-z0-9_]", "_", s).strip("_") or "arg"
    if s[0].isdigit():
        s = "p" + s
    if s in ("min", "max"):
        s += "_"
    base, k = s, 2
    while s in used:
        s = "%s_%d" % (base, k)
        k += 1
    used.add(s)
    return s


def flat(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def probe(torch, mod, sizes, seed=0):
    """Inputs, init inputs, model and outputs with mod's globals set to sizes."""
    for k, v in sizes.items():
        setattr(mod, k, v)
    torch.manual_seed(seed)
    inputs = list(mod.get_inputs())
    init = list(mod.get_init_inputs())
    model = mod.Model(*init)
    torch.manual_seed(seed + 1)
    with torch.no_grad():
        out = flat(model(*inputs))
    return inputs, init, model, out


def frozen(p):
    """A parameter whose values the constructor sets (frozen): fixed data, not drawn."""
    return not p.requires_grad


def extents(torch, inputs, model, out):
    """Every tensor's shape, by a key (kind, index or name)."""
    ex = {}
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            ex[("in", i)] = tuple(x.shape)
    for n, p in model.named_parameters():
        ex[("param", n)] = tuple(p.shape)
    for n, b in model.named_buffers():
        ex[("buf", n)] = tuple(b.shape)
    for k, o in enumerate(out):
        ex[("out", k)] = tuple(o.shape)
    return ex


def main():
    path, outdir = sys.argv[1], sys.argv[2]
    lo_f, hi_f = float(sys.argv[3]), float(sys.argv[4])
    try:
        print("KFORGE-IMPORT " + json.dumps(run(path, outdir, lo_f, hi_f)))
    except Refused as e:
        print("KFORGE-IMPORT " + json.dumps({"status": "refused", "reason": str(e)}))
    return 0


def run(path, outdir, lo_f, hi_f):
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        raise Refused("%s cannot import torch (%s): set KFORGE_PYTHON to a python3 with torch, or run "
                      "`make deps`" % (sys.executable, e))
    src = open(path).read()
    try:
        mod = load(path)
    except Exception as e:  # noqa: BLE001
        raise Refused("the problem does not load: %s: %s" % (type(e).__name__, e))
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, need):
            raise Refused("not a KernelBench problem: it defines no %s" % need)
    names = {n.attr if isinstance(n, ast.Attribute) else n.id
             for n in ast.walk(ast.parse(src)) if isinstance(n, (ast.Attribute, ast.Name))}
    for op in DATA_DEPENDENT:
        if op in names:
            raise Refused("data-dependent output shape: the problem calls %s" % op)
    glob = {k: v for k, v in vars(mod).items()
            if type(v) is int and v >= 1 and not k.startswith("_")}
    try:
        inputs, init, model, out = probe(torch, mod, glob)
    except Exception as e:  # noqa: BLE001
        raise Refused("the problem does not run: %s: %s" % (type(e).__name__, e))
    if not out or not all(isinstance(o, torch.Tensor) for o in out):
        raise Refused("forward returns something other than tensors (%s)" %
                      ", ".join(type(o).__name__ for o in out))
    # stateful: forward changes the model's own state
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(7)
    with torch.no_grad():
        again = flat(model(*inputs))
    for k, v in model.state_dict().items():
        if not torch.equal(before[k], v):
            raise Refused("stateful module: forward changes %s (a module that updates its state, "
                          "such as BatchNorm in training mode)" % k)
    for a, b in zip(out, again):
        if a.shape != b.shape or not torch.equal(a, b):
            raise Refused("random op: two calls on the same inputs give different outputs "
                          "(dropout, rand, ...)")
    # data-dependent output shapes: other input values, the same shapes
    try:
        inputs2, _, _, _ = probe(torch, mod, glob, seed=12345)
        with torch.no_grad():
            other = flat(model(*inputs2))
    except Exception as e:  # noqa: BLE001
        raise Refused("the problem does not run on a second draw of its inputs: %s" % e)
    if [tuple(o.shape) for o in other] != [tuple(o.shape) for o in out]:
        raise Refused("data-dependent output shape: another draw of the inputs changes the output's shape")
    for t in list(inputs) + [p for _, p in model.named_parameters()] + out:
        if isinstance(t, torch.Tensor) and str(t.dtype).replace("torch.", "") not in DTYPES:
            raise Refused("dtype %s is not one of a C task's (f32, f64, i32, i64, u8)" % t.dtype)
    for n, b in model.named_buffers():
        if str(b.dtype).replace("torch.", "") not in DTYPES and b.dtype != torch.bool:
            raise Refused("buffer %s: dtype %s is not one of a C task's (f32, f64, i32, i64, u8; bool as u8)"
                          % (n, b.dtype))
    if sys.byteorder != "little":
        raise Refused("fixed data files are little-endian: this machine is not")
    base = extents(torch, inputs, model, out)

    # sizes: which globals move which extents, and how
    coef = {}  # global -> {(key, dim): a}
    for g, v in glob.items():
        try:
            e1 = extents(torch, *drop_init(probe(torch, mod, dict(glob, **{g: v + 1}))))
            e2 = extents(torch, *drop_init(probe(torch, mod, dict(glob, **{g: v + 2}))))
        except Exception:  # noqa: BLE001 - not a size this problem can move
            continue
        if set(e1) != set(base) or set(e2) != set(base):
            continue
        moved, ok = {}, True
        for key, shp in base.items():
            if len(e1[key]) != len(shp) or len(e2[key]) != len(shp):
                ok = False
                break
            for d, x in enumerate(shp):
                a = e1[key][d] - x
                if a != e2[key][d] - e1[key][d]:
                    ok = False
                elif a:
                    moved[(key, d)] = a
        if ok and moved:
            coef[g] = moved
    sizes = sorted(coef, key=lambda g: list(glob).index(g))
    notes = []
    # fixed data has one size: the sizes that shape it stay at the problem's values
    datakeys = {("buf", n) for n, _ in model.named_buffers()}
    datakeys |= {("param", n) for n, p in model.named_parameters() if frozen(p)}
    for g in list(sizes):
        held = sorted({k[1] for (k, _d) in coef[g] if k in datakeys})
        if held:
            sizes.remove(g)
            notes.append("size %s kept fixed: it shapes fixed data (%s)" % (g, ", ".join(held)))
    # the whole fit at once: every size moved together
    if sizes:
        try:
            ej = extents(torch, *drop_init(probe(torch, mod, dict(glob, **{g: glob[g] + 3 for g in sizes}))))
        except Exception:  # noqa: BLE001
            ej = None
        for key, shp in base.items():
            for d, x in enumerate(shp):
                want = x + sum(3 * coef[g].get((key, d), 0) for g in sizes)
                if ej is None or ej[key][d] != want:
                    fixed = [g for g in sizes if (key, d) in coef[g]]
                    for g in fixed:
                        sizes.remove(g)
                    if fixed:
                        notes.append("sizes %s kept fixed: an extent is not a sum of sizes times "
                                     "integers" % ", ".join(fixed))
    used = set()
    size_name = {g: ident(g, used) for g in sizes}
    rng = {}
    for g in sizes:
        v = glob[g]
        lo = max(1, int(math.ceil(v * lo_f)))
        hi = max(lo, int(math.floor(v * hi_f)))
        rng[g] = [min(lo, v), max(hi, v)]
    # the smallest shape must run too; otherwise the visible shape alone
    if sizes:
        try:
            probe(torch, mod, dict(glob, **{g: rng[g][0] for g in sizes}))
        except Exception as e:  # noqa: BLE001
            notes.append("sizes fixed at the problem's values: the smallest shape fails (%s)" % e)
            rng = {g: [glob[g], glob[g]] for g in sizes}

    def extent_expr(key, d, x):
        terms, b = [], x
        for g in sizes:
            a = coef[g].get((key, d), 0)
            if a:
                terms.append(size_name[g] if a == 1 else "%d * %s" % (a, size_name[g]))
                b -= a * glob[g]
        if not terms:
            return x
        s = " + ".join(terms)
        return s + (" + %d" % b if b > 0 else " - %d" % -b if b < 0 else "")

    def init_of(t):
        f = t.double()
        if t.dtype.is_floating_point:
            mn, mx = float(f.min()), float(f.max())
            if mn >= 0 and mx <= 1:
                return {"dist": "uniform", "lo": 0, "hi": 1}
            sd = float(f.std()) if f.numel() > 1 else 0.0
            if sd == 0:
                c = mn
                return {"dist": "uniform", "lo": c - 0.5 * abs(c) - 0.5, "hi": c + 0.5 * abs(c) + 0.5}
            mean = float(f.mean())
            # a sample of randn has a mean near 0 and a std near 1: say so
            mean = 0.0 if abs(mean) < 0.1 * sd else float("%.3g" % mean)
            return {"dist": "normal", "mean": mean, "std": float("%.3g" % sd)}
        return {"dist": "int", "lo": int(f.min()), "hi": int(f.max())}

    args, plan = [], {"inputs": [], "params": [], "buffers": [], "nout": len(out), "sizes": sizes}
    # the fixed data: the Model as the reference builds it at the visible shape
    for k, v in glob.items():
        setattr(mod, k, v)
    torch.manual_seed(0)
    exact = mod.Model(*mod.get_init_inputs())
    state = dict(exact.named_parameters())
    state.update(dict(exact.named_buffers()))
    datafiles = {}

    def data_arg(key, n, t, nm):
        t = t.detach()
        ty = "u8" if t.dtype == torch.bool else DTYPES[str(t.dtype).replace("torch.", "")]
        if t.dtype == torch.bool:
            t = t.to(torch.uint8)
        rel = "data/%s.bin" % nm
        datafiles[rel] = bytes(t.contiguous().reshape(-1).view(torch.uint8).tolist())
        return {"name": nm, "type": ty, "io": "in",
                "shape": [extent_expr(key, d, x) for d, x in enumerate(t.shape)], "data": rel}
    try:
        fwd = [p for p in inspect.signature(model.forward).parameters.values()
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        fwd = []
    for i, x in enumerate(inputs):
        nm = ident(fwd[i].name if i < len(fwd) else "in%d" % i, used)
        if isinstance(x, torch.Tensor):
            ty = DTYPES[str(x.dtype).replace("torch.", "")]
            args.append({"name": nm, "type": ty, "io": "in",
                         "shape": [extent_expr(("in", i), d, s) for d, s in enumerate(x.shape)],
                         "init": init_of(x)})
        elif isinstance(x, bool) or not isinstance(x, (int, float)):
            raise Refused("input %d of forward is a %s: only tensors, ints and floats" % (i, type(x).__name__))
        else:
            args.append({"name": nm, "type": "i64" if isinstance(x, int) else "f32", "value": x})
        plan["inputs"].append(nm)
    for n, p in model.named_parameters():
        nm = ident(n, used)
        ty = DTYPES[str(p.dtype).replace("torch.", "")]
        if frozen(p):
            args.append(data_arg(("param", n), n, state[n], nm))
        else:
            args.append({"name": nm, "type": ty, "io": "in",
                         "shape": [extent_expr(("param", n), d, s) for d, s in enumerate(p.shape)],
                         "init": init_of(p.detach())})
        plan["params"].append(n)
    for n, b in model.named_buffers():
        nm = ident(n, used)
        args.append(data_arg(("buf", n), n, state[n], nm))
        plan["buffers"].append([n, "bool" if b.dtype == torch.bool else ""])
    for k, o in enumerate(out):
        ty = DTYPES[str(o.dtype).replace("torch.", "")]
        args.append({"name": ident("out" if len(out) == 1 else "out%d" % k, used), "type": ty, "io": "out",
                     "shape": [extent_expr(("out", k), d, s) for d, s in enumerate(o.shape)]})
    for g in sizes:
        args.append({"name": size_name[g], "type": "i64", "value": size_name[g]})
    if len(args) > 32:
        raise Refused("%d arguments: a task has at most 32" % len(args))
    if datafiles:
        notes.append("fixed data: %s" % ", ".join(sorted(datafiles)))
    stem = os.path.splitext(os.path.basename(path))[0]
    name = ident(stem.lower(), set())
    if name[0] == "p":
        name = "kb_" + name[1:] if stem[0].isdigit() else name
    outty = DTYPES[str(out[0].dtype).replace("torch.", "")]
    task = {
        "name": name,
        "description": "imported from %s (KernelBench format) by kforge import kernelbench"
                       % os.path.basename(path),
        "backend": "c",
        "entry": name,
        "reference": "reference.py",
        "sizes": {size_name[g]: rng[g] for g in sizes} or {"one": [1, 1]},
        "args": args,
        "shapes": [{size_name[g]: glob[g] for g in sizes} or {"one": 1}],
        "hidden": {"count": 4},
    }
    if outty in TOLERANCE:
        task["tolerance"] = TOLERANCE[outty]
    os.makedirs(outdir, exist_ok=True)
    shutil.copyfile(path, os.path.join(outdir, "problem.py"))
    for rel, data in datafiles.items():
        os.makedirs(os.path.join(outdir, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(outdir, rel), "wb") as f:
            f.write(data)
    with open(os.path.join(outdir, "task.json"), "w") as f:
        json.dump(task, f, indent=4)
        f.write("\n")
    with open(os.path.join(outdir, "reference.py"), "w") as f:
        f.write(REFERENCE % {"src": os.path.basename(path), "entry": name, "plan": json.dumps(plan)})
    return {"status": "imported", "name": name, "dir": outdir, "notes": notes}


def drop_init(r):
    inputs, _, model, out = r
    return inputs, model, out


REFERENCE = '''# The PyTorch reference of a task imported by `kforge import kernelbench` from
# %(src)s (copied beside it as problem.py; docs/torch.md). The arguments come in the
# task's order: forward's inputs, the Model's parameters, its buffers (fixed data), the
# output(s), the sizes. The Model is built for each shape's sizes (its module-level
# values set to them, as get_init_inputs reads them) and called with the given
# parameters and buffers (a bool buffer arrives as u8 0/1).
import importlib.util
import json
import os

import torch

_spec = importlib.util.spec_from_file_location(
    "kforge_problem", os.path.join(os.path.dirname(os.path.abspath(__file__)), "problem.py"))
_problem = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_problem)
_PLAN = json.loads(%(plan)r)
_models = {}


def _model(sizes):
    m = _models.get(sizes)
    if m is None:
        for name, v in zip(_PLAN["sizes"], sizes):
            setattr(_problem, name, v)
        torch.manual_seed(0)
        m = _models[sizes] = _problem.Model(*_problem.get_init_inputs())
    return m


def %(entry)s(*args):
    nin, npar, nbuf = len(_PLAN["inputs"]), len(_PLAN["params"]), len(_PLAN.get("buffers", []))
    sizes = tuple(int(v) for v in args[nin + npar + nbuf + _PLAN["nout"]:])
    m = _model(sizes)
    params = dict(zip(_PLAN["params"], args[nin:nin + npar]))
    for (name, kind), t in zip(_PLAN.get("buffers", []), args[nin + npar:nin + npar + nbuf]):
        params[name] = t.bool() if kind == "bool" else t
    return torch.func.functional_call(m, params, tuple(args[:nin]))
'''

if __name__ == "__main__":
    sys.exit(main())
