#!/usr/bin/env python3
"""Record a template's whole kforge:param space with the real checker, for replay.

Usage: bench/record_space.py BUILD TASK_DIR TEMPLATE OUT.json [--rounds N]

Every point of the declared space (the product of the value lists) is benched once with
`kforge bench TASK TEMPLATE --param ... --json --min-runs 5 --max-runs 10`. A point the
checker refuses (a failed kforge:require: exit 2) is recorded as "require"; a rejected
point with its reasons. The table is what bench/replay.c replays: point -> per visible
shape time (candidate_ns) and relative noise (the half-width of the speedup's ci95 over
the speedup), or a failure.
"""
import itertools, json, os, platform, re, subprocess, sys, time

def params_of(path):
    out = []
    for line in open(path):
        m = re.search(r"kforge:param\s+(\w+)\s*=\s*([^*#\n]+)", line)
        if m:
            out.append((m.group(1), [v.strip() for v in m.group(2).split(",") if v.strip()]))
    return out

def main():
    build, task, tmpl, out = sys.argv[1:5]
    kforge = os.path.join(build, "kforge")
    params = params_of(tmpl)
    rows = []
    for vals in itertools.product(*[v for _, v in params]):
        sel = [f"{n}={v}" for (n, _), v in zip(params, vals)]
        cmd = [kforge, "bench", task, tmpl, "--json", "--min-runs", "5", "--max-runs", "10"]
        for s in sel:
            cmd += ["--param", s]
        p = subprocess.run(cmd, capture_output=True, text=True)
        row = {"point": dict(zip([n for n, _ in params], vals))}
        try:
            d = json.loads(p.stdout)
        except ValueError:
            d = {"verdict": "error", "error": p.stderr.strip()[:200]}
        if d.get("verdict") == "error":
            row["failure"] = "require" if "kforge:require" in d.get("error", "") else "error"
            row["error"] = d.get("error", "")[:200]
        elif d.get("reasons"):
            row["failure"] = ",".join(r if isinstance(r, str) else r.get("code", "?") for r in d["reasons"])
        else:
            row["shapes"] = []
            for s in d["shapes"]:
                sp, ci = s["speedup"], s["ci95"]
                row["shapes"].append({"sizes": s["sizes"], "ns": s["candidate_ns"],
                                      "rel_noise": (ci[1] - ci[0]) / 2 / sp if sp else 0})
        rows.append(row)
        print(" ".join(sel), row.get("failure") or [round(s["ns"]) for s in row["shapes"]], flush=True)
    meta = {"task": task, "template": tmpl,
            "command": "kforge bench TASK TEMPLATE --param ... --json --min-runs 5 --max-runs 10",
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus " +
                       (open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
                        if os.path.exists("/proc/cpuinfo") and "model name" in open("/proc/cpuinfo").read() else ""),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "params": [{"name": n, "values": v} for n, v in params]}
    json.dump({"meta": meta, "points": rows}, open(out, "w"), indent=1)

if __name__ == "__main__":
    main()
