#!/usr/bin/env python3
"""Record a template's whole kforge:param space with the real checker, for replay.

Usage: bench/record_space.py BUILD TASK_DIR TEMPLATE OUT.json [--rounds N]

Every point of the declared space (the product of the value lists) is benched with
`kforge bench TASK TEMPLATE --param ... --json --min-runs 5 --max-runs 10`, N rounds (1)
over the whole space in turn, so that a burst of load from other processes lands on a few
rounds of many points rather than on every round of a few. A point the checker refuses (a
failed kforge:require: exit 2) is recorded as "require"; a point rejected in any round
with its reasons. The table is what bench/replay.c replays: point -> per visible shape
time (candidate_ns, the median over the rounds; "rounds_ns" lists them) and relative noise
(the half-width of the speedup's ci95 over the speedup, the median over the rounds), or a
failure. The load average before and after the recording is in "meta".
"""
import itertools, json, os, platform, re, subprocess, sys, time

def params_of(path):
    out = []
    for line in open(path):
        m = re.search(r"kforge:param\s+(\w+)\s*=\s*([^*#\n]+)", line)
        if m:
            out.append((m.group(1), [v.strip() for v in m.group(2).split(",") if v.strip()]))
    return out

def bench(kforge, task, tmpl, params, vals):
    sel = [f"{n}={v}" for (n, _), v in zip(params, vals)]
    cmd = [kforge, "bench", task, tmpl, "--json", "--min-runs", "5", "--max-runs", "10"]
    for s in sel:
        cmd += ["--param", s]
    # timing_mismatch alone (the two clocks disagreed: a loaded machine) says nothing about
    # the point; the loop re-times it in fresh workers, so does this, up to twice more
    for attempt in range(3):
        p = subprocess.run(cmd, capture_output=True, text=True)
        try:
            d = json.loads(p.stdout)
        except ValueError:
            d = {"verdict": "error", "error": p.stderr.strip()[:200]}
        codes = [r if isinstance(r, str) else r.get("code", "?") for r in d.get("reasons") or []]
        if not codes or set(codes) != {"timing_mismatch"}:
            break
    row = {"point": dict(zip([n for n, _ in params], vals))}
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
    print(" ".join(sel), row.get("failure") or [round(s["ns"]) for s in row["shapes"]], flush=True)
    return row

def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2

def main():
    build, task, tmpl, out = sys.argv[1:5]
    nrounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 1
    kforge = os.path.join(build, "kforge")
    params = params_of(tmpl)
    load0 = os.getloadavg()
    points = list(itertools.product(*[v for _, v in params]))
    rows = [None] * len(points)
    for rnd in range(nrounds):
        print(f"round {rnd + 1} of {nrounds}, load average {os.getloadavg()[0]:.2f}", flush=True)
        for i, vals in enumerate(points):
            if rows[i] is not None and "failure" in rows[i]:
                continue  # refused or rejected once: recorded as such
            row = bench(kforge, task, tmpl, params, vals)
            if rows[i] is None or "failure" in row:
                rows[i] = row
                if "shapes" in row:
                    for s in row["shapes"]:
                        s["rounds_ns"], s["rounds_noise"] = [s["ns"]], [s["rel_noise"]]
            else:
                for s, t in zip(rows[i]["shapes"], row["shapes"]):
                    s["rounds_ns"].append(t["ns"])
                    s["rounds_noise"].append(t["rel_noise"])
    for row in rows:
        for s in row.get("shapes", []):
            s["ns"], s["rel_noise"] = median(s["rounds_ns"]), median(s.pop("rounds_noise"))
    meta = {"task": task, "template": tmpl,
            "command": "kforge bench TASK TEMPLATE --param ... --json --min-runs 5 --max-runs 10",
            "rounds": nrounds, "loadavg_before": list(load0), "loadavg_after": list(os.getloadavg()),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus " +
                       (open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
                        if os.path.exists("/proc/cpuinfo") and "model name" in open("/proc/cpuinfo").read() else ""),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "params": [{"name": n, "values": v} for n, v in params]}
    json.dump({"meta": meta, "points": rows}, open(out, "w"), indent=1)

if __name__ == "__main__":
    main()
