#!/usr/bin/env python3
"""The C checker's speed and fairness targets (BENCHMARKS.md), measured side by side in one run.

  1. time to a trusted verdict: `kforge check` of a small bundled candidate, compile
     included (a fresh text each run, so the build cache never hits), against a bare
     `cc -O2 -c` of the same file; target: median ratio <= 3;
  2. every bundled reference benched against itself: speedup in [0.95, 1.05];
  3. a candidate doing the reference's work three times: speedup in [0.25, 0.45].

Usage: bench/targets.py BUILD_DIR [--reps N]. Prints a Markdown table for BENCHMARKS.md.
"""
import json, os, re, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = ["saxpy", "softmax", "rmsnorm", "sum", "transpose", "sgemm", "linear"]
CTYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t"}


def kforge(build, *args):
    p = subprocess.run([os.path.join(build, "kforge"), *args], cwd=ROOT,
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def timed(cmd, cwd=ROOT):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - t0, p


def spread(xs):
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]


def verdict_time(build, reps):
    task = "tasks/c/saxpy"
    src = open(os.path.join(ROOT, task, "candidates/fast.c")).read()
    tmp = tempfile.mkdtemp(prefix="kforge-bench-")
    # warm the reference build once (a task's reference is built once per machine)
    kforge(build, "check", task, os.path.join(ROOT, task, "candidates/fast.c"))
    ks, cs = [], []
    for i in range(reps):
        path = os.path.join(tmp, "cand.c")
        with open(path, "w") as f:  # a new text: no cache hit, a real compile
            f.write(src + "\n/* run %d %f */\n" % (i, time.time()))
        tc, pc = timed(["cc", "-O2", "-c", path, "-o", os.path.join(tmp, "cand.o")])
        tk, pk = timed([os.path.join(build, "kforge"), "check", task, path, "--hidden", "4", "--json"])
        assert pk.returncode == 0, pk.stdout + pk.stderr
        shapes = json.loads(pk.stdout)["shapes"]
        assert sum(s["kind"] == "visible" for s in shapes) == 2
        assert sum(s["kind"] == "hidden" for s in shapes) == 4
        ks.append(tk)
        cs.append(tc)
    ratios = [k / c for k, c in zip(ks, cs)]
    shutil.rmtree(tmp, ignore_errors=True)
    return ks, cs, ratios


def wrapper_3x(task_dir, flush=True):
    """The reference's work three times: its body, renamed, called three times. With
    flush, every buffer is clflushed between passes, so each pass starts as cold as the
    reference's single pass (kforge flushes before every call); without it, passes 2
    and 3 of a cache-sized shape run from the cache and the ratio measures the cache."""
    spec = json.load(open(os.path.join(task_dir, "task.json")))
    ref = open(os.path.join(task_dir, "reference.c")).read()
    entry = spec["entry"]
    params, names, flushes = [], [], []
    for a in spec["args"]:
        t = CTYPES[a["type"]]
        if "shape" in a:
            params.append(("const " if a["io"] == "in" else "") + t + " *" + a["name"])
            count = " * ".join("(%s)" % d for d in a["shape"])
            if a["io"] == "in":  # inputs only: flushing a dirty output would time its write-back
                flushes.append("kf_flush(%s, (size_t)(%s) * sizeof(%s));" % (a["name"], count, t))
        else:
            params.append(t + " " + a["name"])
        names.append(a["name"])
    call = "kf_once(%s);" % ", ".join(names)
    between = ('__asm__ volatile("" ::: "memory");' +
               (" " + " ".join(flushes) if flush else ""))
    helper = ("#include <stddef.h>\n"
              "static void kf_flush(const void *p, size_t n) {\n"
              "    for (size_t i = 0; i < n; i += 64) __builtin_ia32_clflush((const char *)p + i);\n"
              "    __builtin_ia32_mfence();\n}\n")
    return ("#define %s kf_once\n%s\n#undef %s\n%s"
            "void %s(%s) {\n    %s %s\n    %s %s\n    %s\n}\n" %
            (entry, ref.replace("void " + entry, "__attribute__((noinline)) void " + entry, 1),
             entry, helper, entry, ", ".join(params), call, between, call, between, call))


def bench_pair(build, task, cand):
    rc, out, err = kforge(build, "bench", task, cand, "--json")
    if rc != 0:
        return None, out + err
    d = json.loads(out)
    return d, None


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 15
    cpu = open("/proc/cpuinfo").read()
    model = re.search(r"model name\s*:\s*(.*)", cpu)
    print("machine: %s, %d cores; date: %s" % (model.group(1) if model else "?", os.cpu_count(),
                                               time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    ks, cs, ratios = verdict_time(build, reps)
    print("\n## 1. time to a trusted verdict (saxpy fast.c, 2 visible + 4 hidden + the edge shapes, compile included)\n")
    print("| measure | median | IQR | runs |")
    print("|---|---|---|---|")
    print("| `kforge check` | %.1f ms | %.1f ms | %d |" % (1e3 * statistics.median(ks), 1e3 * spread(ks), reps))
    print("| `cc -O2 -c` | %.1f ms | %.1f ms | %d |" % (1e3 * statistics.median(cs), 1e3 * spread(cs), reps))
    print("| ratio (target <= 3) | %.2f | %.2f | %d |" % (statistics.median(ratios), spread(ratios), reps))
    print("\n## 2. reference vs itself (target 0.95-1.05) and 3. three times the work (target 0.25-0.45)\n")
    print("| task | shape | self speedup | self noise | 3x speedup | 3x noise | 3x, no flush between passes |")
    print("|---|---|---|---|---|---|---|")
    tmp = tempfile.mkdtemp(prefix="kforge-bench-")
    ok = True
    for t in TASKS:
        task = "tasks/c/" + t
        self_d, e1 = bench_pair(build, task, os.path.join(ROOT, task, "reference.c"))
        p3 = os.path.join(tmp, t + "_3x.c")
        open(p3, "w").write(wrapper_3x(os.path.join(ROOT, task)))
        x3_d, e2 = bench_pair(build, task, p3)
        pn = os.path.join(tmp, t + "_3x_noflush.c")
        open(pn, "w").write(wrapper_3x(os.path.join(ROOT, task), flush=False))
        xn_d, e3 = bench_pair(build, task, pn)
        if not self_d or not x3_d or not xn_d:
            print("| %s | error: %s |" % (t, (e1 or e2 or e3)[:200].replace("\n", " ")))
            ok = False
            continue
        for s, x, xn in zip(self_d["shapes"], x3_d["shapes"], xn_d["shapes"]):
            sz = " ".join("%s=%d" % kv for kv in s["sizes"].items())
            good = 0.95 <= s["speedup"] <= 1.05 and 0.25 <= x["speedup"] <= 0.45
            ok &= good
            print("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f |%s" % (t, sz, s["speedup"], s["noise"],
                  x["speedup"], x["noise"], xn["speedup"], "" if good else " OUT OF TARGET"))
    shutil.rmtree(tmp, ignore_errors=True)
    print("\nall targets met" if ok and statistics.median(ratios) <= 3 else "\nSOME TARGETS MISSED")


if __name__ == "__main__":
    main()
