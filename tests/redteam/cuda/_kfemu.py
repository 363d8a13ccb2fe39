#!/usr/bin/env python3
"""TEMPORARY (to be deleted): a stand-in for kforge's CUDA kernel-mode check, used to run
the .cu corpus on a real GPU before kforge's own GPU path is finished. It follows
docs/checker.md and src/check/check.c: per shape T0 (half A), T1 (half B, spikes),
T2 (T1's addresses, rescaled / sub-interval + zeros), T3 (T2's inputs, half A, new
poison); a light (maximum) shape gets T0 only. Finite sentinels, guard zones of one
random pattern, byte comparison of inputs, unwritten / nonfinite / wrong / stale,
then the determinism pair. One process per candidate (device globals persist across
its calls), a 5 s call deadline, CUDA errors end the candidate (crash)."""
import ctypes, glob, json, math, os, re, subprocess, sys, threading, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DATA = "/tmp/kfemu"
JITTER_MAX, ALIGN, GUARD = 4096, 64, 1024
CALL_TIMEOUT = 5.0

SHAPES = {  # visible first, then hidden/edge; a trailing "L" marks the light (maximum) shape
    "sum": [(16777216,), (100003,), (1,), (7919,), (65537,), (3000,), (33554432, "L")],
    "softmax": [(4096, 4096), (1000, 3001), (1, 1), (4093, 17), (257, 255), (33, 1000), (4096, 4096, "L")],
    "rmsnorm": [(4096, 4096), (777, 3001), (1, 1), (8191, 2), (31, 8191), (1025, 511), (2048, 8192, "L")],
    "transpose": [(4096, 4096), (1000, 3001), (1, 1), (31, 8191), (4099, 17), (257, 255), (2048, 8192, "L")],
    "bgemm": [(4096, 4096, 4096), (1000, 1500, 777), (1, 1, 1), (257, 127, 1025), (33, 4099, 5)],
}


def align(x):
    return (x + ALIGN - 1) // ALIGN * ALIGN


def cexpr(e, env):
    if isinstance(e, (int, float)):
        return e
    py = re.sub(r"(?<![/])/(?![/])", "//", e)
    return int(eval(py, {"__builtins__": {}, "min": min, "max": max}, dict(env)))


def task_info(name):
    t = json.load(open(os.path.join(ROOT, "tasks/cuda", name, "task.json")))
    return t


def sizes_env(t, shape):
    return dict(zip(list(t["sizes"].keys()), shape))


def buf_args(t):
    return [a for a in t["args"] if "shape" in a]


def count(a, env):
    n = 1
    for d in a["shape"]:
        n *= cexpr(d, env)
    return n


def bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16


def npdt(ty):
    return np.float32 if ty == "f32" else bf16()


# ---------------------------------------------------------------- data and references
def gen(t, env, rng, variant):
    out = {}
    scale = 2.0 ** int(rng.integers(-2, 3)) if variant == 2 else 1.0
    for a in buf_args(t):
        if a["io"] == "out":
            continue
        n = count(a, env)
        ini = a["init"]
        if ini["dist"] == "normal":
            mu, sd = ini["mean"] * scale, ini["std"] * scale
            v = rng.standard_normal(n, dtype=np.float32) * np.float32(sd) + np.float32(mu)
        else:
            lo, hi = ini["lo"], ini["hi"]
            if variant == 2:
                nlo = lo + (hi - lo) * 0.5 * rng.random()
                nhi = nlo + (hi - nlo) * (0.5 + 0.5 * rng.random())
                if nlo < nhi:
                    lo, hi = nlo, nhi
            v = (rng.random(n, dtype=np.float32) * np.float32(hi - lo) + np.float32(lo)).astype(np.float32)
        if a["type"] == "bf16":
            v = v.astype(bf16()).astype(np.float32)
        if variant == 1 and n > 0:
            ns = 1 + n // 512
            idx = rng.integers(0, n, ns)
            if ini["dist"] == "normal":
                v[idx] = v[idx] * 32
            else:
                his = rng.integers(0, 2, ns).astype(bool)
                v[idx] = np.where(his, np.float32(hi), np.float32(lo))
        if variant == 2 and ini["dist"] == "normal" and n > 0:
            dims = [cexpr(d, env) for d in a["shape"]]
            row = dims[-1] if dims[-1] > 0 else 1
            rows = n // row
            if len(dims) < 2 or rows < 2:
                row = n // 8
                rows = n // row if row else 0
            r0 = int(rng.integers(0, rows)) if rows > 0 else 0
            if row > 0:
                v[r0 * row:(r0 + 1) * row] = 0
            if n >= 8:
                v[rng.integers(0, n, 3)] = 0
        out[a["name"]] = v.astype(npdt(a["type"]))
    return out


def reference(task, env, ins):
    if task == "sum":
        return {"out": np.array([ins["x"].astype(np.float64).sum()], dtype=np.float32)}
    if task == "softmax":
        r, c = env["rows"], env["cols"]
        x = ins["x"].reshape(r, c)
        mx = x.max(axis=1, keepdims=True)
        e = np.exp(x - mx).astype(np.float32)
        s = e.sum(axis=1, dtype=np.float64, keepdims=True)
        return {"y": (e * (1.0 / s).astype(np.float32)).astype(np.float32).ravel()}
    if task == "rmsnorm":
        r, c = env["rows"], env["cols"]
        x = ins["x"].reshape(r, c)
        ss = (x.astype(np.float64) ** 2).sum(axis=1, keepdims=True)
        sc = (1.0 / np.sqrt(ss / c + float(np.float32(1e-5)))).astype(np.float32)
        return {"y": ((x * sc).astype(np.float32) * ins["w"]).astype(np.float32).ravel()}
    if task == "transpose":
        r, c = env["rows"], env["cols"]
        return {"b": np.ascontiguousarray(ins["a"].reshape(r, c).T).ravel()}
    if task == "bgemm":
        m, n, k = env["m"], env["n"], env["k"]
        a = ins["a"].astype(np.float32).reshape(m, k)
        b = ins["b"].astype(np.float32).reshape(k, n)
        return {"c": (a @ b).astype(bf16()).ravel()}
    raise SystemExit("no reference for " + task)


def prepare(task):
    t = task_info(task)
    d = os.path.join(DATA, task)
    if os.path.exists(os.path.join(d, "done")):
        return
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(abs(hash(task)) % (1 << 32))
    for si, sh in enumerate(SHAPES[task]):
        light = sh[-1] == "L"
        shape = sh[:-1] if light else sh
        env = sizes_env(t, shape)
        for k in range(1 if light else 3):
            ins = gen(t, env, rng, k)
            ref = reference(task, env, ins)
            for nm, v in list(ins.items()) + [("ref_" + a, v) for a, v in ref.items()]:
                np.save(os.path.join(d, "s%d_k%d_%s.npy" % (si, k, nm)),
                        v.view(np.uint16) if v.dtype.itemsize == 2 else v)
    open(os.path.join(d, "done"), "w").close()


# ---------------------------------------------------------------- device
def libs():
    cands = sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*")) + \
        sorted(glob.glob("/usr/local/cuda*/targets/*/lib/libnvrtc.so*"))
    nv = ctypes.CDLL(cands[0])
    inc = (glob.glob("/usr/local/cuda/include") + glob.glob("/usr/local/cuda*/include"))[0]
    cu = ctypes.CDLL("libcuda.so.1")
    return nv, inc, cu


def compile_cu(nv, inc, path):
    prelude = open(os.path.join(ROOT, "src/backend/cuda/prelude.cuh")).read()
    base = os.path.basename(path)
    src = prelude + '#line 1 "%s"\n' % base + open(path).read()
    prog = ctypes.c_void_p()
    nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), base.encode(), 0, None, None)
    opts = ["--gpu-architecture=sm_90", "-default-device", "-std=c++17", "-lineinfo",
            "--ptxas-options=-v", "-I" + inc]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = nv.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value + 1)
    nv.nvrtcGetProgramLog(prog, log)
    if rc:
        return None, log.value.decode(errors="replace")
    cs = ctypes.c_size_t()
    nv.nvrtcGetCUBINSize(prog, ctypes.byref(cs))
    cub = ctypes.create_string_buffer(cs.value)
    nv.nvrtcGetCUBIN(prog, cub)
    return cub, log.value.decode(errors="replace")


def parse_launches(text, t):
    L = []
    for line in text.splitlines():
        if "kforge:launch" not in line:
            continue
        kv = line.split("kforge:launch", 1)[1]
        name = re.search(r"kernel=(\w+)", kv).group(1)
        g = re.search(r"grid=\((.*?)\)\s+block=", kv).group(1)
        b = re.search(r"block=\((.*?)\)(\s|$)", kv).group(1)
        sm = re.search(r"smem=(\S+)", kv)
        L.append((name, g, b, sm.group(1) if sm else "0"))
    return L


def split3(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    parts.append(cur)
    return parts + ["1"] * (3 - len(parts))


class Result:
    def __init__(self, path):
        self.path, self.reasons = path, []

    def add(self, code, shape, trial, msg=""):
        self.reasons.append([code, list(shape), trial, msg])

    def dump(self):
        print("RESULT " + json.dumps({"file": self.path, "reasons": self.reasons}), flush=True)


def child(path):
    text = open(path).read()
    hdr = dict(re.findall(r"(\w+)=(\S+)", text.splitlines()[0]))
    task = hdr["task"].split("/")[-1]
    t = task_info(task)
    res = Result(path)
    nv, inc, cu = libs()
    cub, log = compile_cu(nv, inc, path)
    if cub is None:
        res.add("compile_error", [], -1, log.strip().splitlines()[0] if log.strip() else "")
        return res.dump()
    launches = parse_launches(text, t)

    def ck(r, what):
        if r:
            s = ctypes.c_char_p()
            cu.cuGetErrorName(r, ctypes.byref(s))
            raise RuntimeError("%s: %s" % (what, s.value.decode()))

    cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
    cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
    cu.cuMemsetD32_v2.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t]
    cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p,
                                                                              ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    ck(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
    ck(cu.cuCtxSetCurrent(ctx), "setcurrent")
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), cub), "cuModuleLoadData")
    fns = {}
    for (nm, _, _, _) in launches:
        f = ctypes.c_void_p()
        if cu.cuModuleGetFunction(ctypes.byref(f), mod, nm.encode()):
            res.add("missing_entry", [], -1, nm)
            return res.dump()
        fns[nm] = f
    bufs = buf_args(t)
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))

    def layout(env, base):
        p, offs, guards = base, {}, []
        for a in bufs:
            off = align(p + GUARD)
            guards.append((p, off - p))
            offs[a["name"]] = off
            p = off + count(a, env) * (4 if a["type"] == "f32" else 2)
        guards.append((p, GUARD))
        return offs, guards, p + GUARD

    def lsize(env):
        return align(layout(env, 0)[2])

    arena = 0
    for sh in SHAPES[task]:
        env = sizes_env(t, sh[:-1] if sh[-1] == "L" else sh)
        arena = max(arena, 2 * (lsize(env) + JITTER_MAX))
    host = np.zeros(arena, dtype=np.uint8)
    mirror = ctypes.c_uint64()
    ck(cu.cuMemAlloc_v2(ctypes.byref(mirror), (arena + 255) // 256 * 256), "alloc")
    ck(cu.cuMemsetD32_v2(mirror.value, 0x71800000 | int(rng.integers(0, 1 << 23)), (arena + 255) // 256 * 64), "poison")
    ck(cu.cuCtxSynchronize(), "sync")
    d = os.path.join(DATA, task)
    rtol, atol = t["tolerance"]["rtol"], t["tolerance"]["atol"]
    exact = t.get("determinism", "exact") == "exact"

    def same(a, b):
        if exact:
            return a.tobytes() == b.tobytes()
        return close(a, b).all()

    def close(got, want):
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        with np.errstate(invalid="ignore"):
            return np.abs(g - w) <= atol + rtol * np.abs(w)

    for si, sh in enumerate(SHAPES[task]):
        light = sh[-1] == "L"
        shape = sh[:-1] if light else sh
        env = sizes_env(t, shape)
        def ld(k, nm, ty):
            v = np.load(os.path.join(d, "s%d_k%d_%s.npy" % (si, k, nm)))
            return v.view(bf16()) if ty == "bf16" else v
        sets = [{a["name"]: ld(k, a["name"], a["type"]) for a in bufs if a["io"] != "out"} for k in range(1 if light else 3)]
        refs = [{a["name"]: ld(k, "ref_" + a["name"], a["type"]) for a in bufs if a["io"] == "out"} for k in range(1 if light else 3)]
        dims = []
        for (nm, g, b, sm) in launches:
            dd = [cexpr(x, env) for x in split3(g)] + [cexpr(x, env) for x in split3(b)] + [cexpr(sm, env)]
            lim = [2 ** 31 - 1, 65535, 65535, 1024, 1024, 64]
            if any(v < 1 or v > l for v, l in zip(dd[:6], lim)) or dd[3] * dd[4] * dd[5] > 1024:
                res.add("crash", shape, 0, "launch dims out of range %s" % dd)
                return res.dump()
            dims.append((nm, dd))
        halfsz = lsize(env) + JITTER_MAX
        late = [None, None]
        bad_late = [False, False]
        offs = None
        for trial in range(1 if light else 4):
            kset = trial if trial < 3 else 2
            if trial != 2:
                half = [0, 1, 1, 0][trial]
                offs, guards, end = layout(env, half * halfsz + int(rng.integers(0, JITTER_MAX // ALIGN)) * ALIGN)
            lo = guards[0][0]
            gpat = rng.integers(0, 256, GUARD + ALIGN, dtype=np.uint8)
            for (g0, gl) in guards:
                host[g0:g0 + gl] = gpat[:gl]
            sent = {}
            for a in bufs:
                n = count(a, env)
                o = offs[a["name"]]
                if a["io"] == "out":
                    r = int(rng.integers(0, 1 << 63, dtype=np.int64)) | (int(rng.integers(0, 2)) << 63)
                    if a["type"] == "f32":
                        bits = ((r >> 63) << 31) | ((0xFB + (r >> 40) % 3) << 23) | (r & 0x7FFFFF)
                        sent[a["name"]] = np.array([bits], dtype=np.uint32)
                    else:
                        bits = ((r >> 63) << 15) | 0x7B80 | (r & 0x7F)
                        sent[a["name"]] = np.array([bits], dtype=np.uint16)
                    host[o:o + n * sent[a["name"]].itemsize] = np.tile(sent[a["name"]], n).view(np.uint8)
                else:
                    raw = sets[kset][a["name"]].view(np.uint8)
                    host[o:o + raw.size] = raw
            hp = host.ctypes.data
            ck(cu.cuMemcpyHtoD_v2(mirror.value + lo, hp + lo, end - lo), "copy in")
            params, keep = [], []
            for a in t["args"]:
                if "shape" in a:
                    v = ctypes.c_uint64(mirror.value + offs[a["name"]])
                elif a["type"] == "i64":
                    v = ctypes.c_int64(cexpr(a["value"], env))
                else:
                    v = ctypes.c_float(float(a["value"]))
                keep.append(v)
                params.append(ctypes.cast(ctypes.pointer(v), ctypes.c_void_p))
            parr = (ctypes.c_void_p * len(params))(*params)
            timer = threading.Timer(CALL_TIMEOUT, lambda: (res.add("timeout", shape, trial, "call deadline"),
                                                           res.dump(), os._exit(0)))
            timer.start()
            try:
                for (nm, dd) in dims:
                    ck(cu.cuLaunchKernel(fns[nm], *dd[:6], dd[6], None, parr, None), "launch " + nm)
                ck(cu.cuCtxSynchronize(), "running the kernels")
            except RuntimeError as e:
                timer.cancel()
                res.add("crash", shape, trial, str(e))
                return res.dump()
            timer.cancel()
            ck(cu.cuMemcpyDtoH_v2(hp + lo, mirror.value + lo, end - lo), "copy out")
            ck(cu.cuMemsetD32_v2(mirror.value + lo, 0x71800000 | int(rng.integers(0, 1 << 23)), (end - lo) // 4), "repoison")
            ck(cu.cuCtxSynchronize(), "sync")
            # judge
            bad = False
            for (g0, gl) in guards:
                if not np.array_equal(host[g0:g0 + gl], gpat[:gl]):
                    res.add("out_of_bounds", shape, trial)
                    bad = True
                    break
            for a in bufs:
                if a["io"] == "out":
                    continue
                raw = sets[kset][a["name"]].view(np.uint8)
                o = offs[a["name"]]
                if not np.array_equal(host[o:o + raw.size], raw):
                    res.add("input_modified", shape, trial, a["name"])
                    bad = True
            outs = {}
            for a in bufs:
                if a["io"] != "out":
                    continue
                n = count(a, env)
                o = offs[a["name"]]
                dt = npdt(a["type"])
                isz = 4 if a["type"] == "f32" else 2
                got = host[o:o + n * isz].copy().view(dt)
                outs[a["name"]] = got
                want = refs[kset][a["name"]]
                gbits = got.view(np.uint32 if isz == 4 else np.uint16)
                wbits = want.view(np.uint32 if isz == 4 else np.uint16)
                unw = (gbits == sent[a["name"]][0]) & (wbits != sent[a["name"]][0])
                g64 = got.astype(np.float64)
                nonf = ~unw & ~np.isfinite(g64) & np.isfinite(want.astype(np.float64))
                wrong = ~unw & ~nonf & ~close(got, want)
                if unw.any() or nonf.any() or wrong.any():
                    bad = True
                    stale = False
                    if trial in (1, 2):
                        for k in range(trial):
                            if close(got, refs[k][a["name"]]).all():
                                stale = True
                    if stale:
                        res.add("stale_result", shape, trial)
                        continue
                    if unw.any():
                        res.add("unwritten_output", shape, trial, "%d of %d" % (unw.sum(), n))
                    if nonf.any():
                        res.add("nonfinite", shape, trial, "%d of %d" % (nonf.sum(), n))
                    if wrong.any():
                        i = int(np.argmax(wrong))
                        res.add("wrong_result", shape, trial, "%d of %d, first [%d] got %.9g want %.9g" %
                                (wrong.sum(), n, i, g64[i], float(want[i])))
            if trial >= 2:
                late[trial - 2] = outs
                bad_late[trial - 2] = bad
            if trial == 3:
                sm = all(same(late[0][k], late[1][k]) for k in late[0])
                if not sm and not (bad_late[0] and bad_late[1]):
                    k0 = list(late[0])[0]
                    dif = int((late[0][k0].view(np.uint8) != late[1][k0].view(np.uint8)).sum())
                    res.add("nondeterministic", shape, trial, "%d bytes differ" % dif)
    res.dump()


def main():
    files = sys.argv[1:]
    tasks = set()
    for f in files:
        h = open(f).readline()
        tasks.add(re.search(r"task=(\S+)", h).group(1).split("/")[-1])
    t0 = time.time()
    for tk in sorted(tasks):
        prepare(tk)
        print("prepared %s at %.1fs" % (tk, time.time() - t0), flush=True)
    procs, outs = [], {}
    pending = list(files)
    running = []
    while pending or running:
        while pending and len(running) < 4:
            f = pending.pop(0)
            p = subprocess.Popen([sys.executable, __file__, "--child", f], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            running.append((f, p, time.time()))
        for (f, p, st) in list(running):
            if p.poll() is not None or time.time() - st > 240:
                if p.poll() is None:
                    p.kill()
                out = p.stdout.read()
                running.remove((f, p, st))
                outs[f] = out
                r = [l for l in out.splitlines() if l.startswith("RESULT ")]
                h = open(f).readline()
                exp = re.search(r"expect=(\w+)", h).group(1)
                er = re.search(r"reason=(\w+)", h)
                er = er.group(1) if er else ""
                if r:
                    rr = json.loads(r[-1][7:])["reasons"]
                    codes = [x[0] for x in rr]
                    first = codes[0] if codes else "accepted"
                    ok = (exp == "accepted" and not codes) or (exp == "rejected" and er in codes)
                    exact = (exp == "accepted" and not codes) or (exp == "rejected" and first == er and set(codes) == {er})
                    print("%-4s %-6s %-40s expect=%-18s first=%-18s all=%s" % (
                        "OK" if ok else "FAIL", "only" if exact else "", os.path.basename(f), er or exp, first,
                        sorted(set(codes))), flush=True)
                    for x in rr[:6]:
                        print("      ", x, flush=True)
                else:
                    print("FAIL no result %s\n%s" % (f, out[-3000:]), flush=True)
        time.sleep(0.05)
    print("total %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        try:
            child(sys.argv[2])
        except Exception as e:
            import traceback
            traceback.print_exc()
        sys.stdout.flush()
        os._exit(0)
    main()
