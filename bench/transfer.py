#!/usr/bin/env python3
"""Transfer of lessons between related tasks (BENCHMARKS.md, docs/lessons.md).

Does a lessons database distilled from runs on a source task cut the evaluations the
builtin proposer needs to reach a target speedup on a related task, compared with the
same run (same seed, same options) without lessons?

Usage: bench/transfer.py [--build build] [--seeds 5] [--within 0.05] [--work DIR]
                         [--source tasks/c/softmax] [--source-budget N]
                         [--target tasks/c/rmsnorm]... [--keep]

Steps:
  1. every point of each target's template is benched once (bench/record_space.py, the
     real checker and timing); the target is "within F (5%) of the best point's
     geometric-mean time";
  2. `kforge run SOURCE --budget B --seed s` for each seed s, each distilled into one
     fresh lessons database (`kforge lessons distill RUN --lessons DB`). B defaults to the
     source template's whole space (the product of its kforge:param value lists; the run
     stops by itself once every point its kforge:require allows has been tried, "the
     parameter space is exhausted"), so the lessons know every setting of the source.
     (The default was 3, softmax's whole space when its template had W alone; it stayed 3
     when softmax's template grew to 44 allowed points, and 3 evaluations never tried
     W=16: bench/history/lessons.md "transfer softmax -> rmsnorm with a shared W".)
     `--source-budget N` gives a shorter, partial run instead;
  3. per target and seed, `kforge run TARGET --budget N --seed s` (N: the whole space)
     twice, without and with `--lessons DB`; its evaluations to the target are the
     1-based position, in node order, of the first node whose point the table puts within
     F of the best (the table judges, so timing noise in the runs does not move the
     finish line; the runs' own Critic and search decide the walk, as in any run).
Prints Markdown: per target the evaluations per seed, the medians and their ratio (with /
without; below 1: lessons helped), the lessons that applied and the first proposals.
Quick timing options in the runs (--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1).
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

QUICK = ["--min-runs", "5", "--max-runs", "8", "--min-time", "0.01", "--hidden", "1"]


def sh(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"transfer.py: {' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def geo(xs):
    p = 1.0
    for x in xs:
        p *= x
    return p ** (1.0 / len(xs))


def table(build, task, work):
    out = os.path.join(work, os.path.basename(task.rstrip("/")) + "-space.json")
    tmpl = os.path.join(task, "candidates", "param.c")
    sh([sys.executable, os.path.join(os.path.dirname(__file__), "record_space.py"), build, task, tmpl, out])
    t = json.load(open(out))
    pts = {}
    for row in t["points"]:
        key = tuple(sorted(row["point"].items()))
        pts[key] = geo([s["ns"] for s in row["shapes"]]) if "shapes" in row else None
    return pts


def space_size(task):
    """The product of the template's kforge:param value lists (record_space.py's parsing)."""
    n = 1
    for line in open(os.path.join(task, "candidates", "param.c")):
        m = re.search(r"kforge:param\s+(\w+)\s*=\s*([^*#\n]+)", line)
        if m:
            n *= len([v for v in m.group(2).split(",") if v.strip()])
    return n


def evals_to_target(kforge, run, pts, within):
    tree = json.loads(sh([kforge, "tree", run, "--json"]).stdout)
    best = min(v for v in pts.values() if v is not None)
    nodes = sorted(tree["nodes"], key=lambda n: n["id"])
    first = None
    for i, n in enumerate(nodes, 1):
        key = tuple(sorted((k, str(v)) for k, v in (n.get("params") or {}).items()))
        if first is None:
            first = ",".join(f"{k}={v}" for k, v in key)
        g = pts.get(key)
        if g is not None and g <= best * (1 + within):
            return i, first, tree.get("lessons")
    return None, first, tree.get("lessons")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--within", type=float, default=0.05)
    ap.add_argument("--source", default="tasks/c/softmax")
    ap.add_argument("--source-budget", type=int, default=0, help="0 (default): the source's whole space")
    ap.add_argument("--target", action="append")
    ap.add_argument("--work")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    targets = a.target or ["tasks/c/rmsnorm", "bench/data/transfer/logsoftmax"]
    kforge = os.path.join(a.build, "kforge")
    work = a.work or tempfile.mkdtemp(prefix="kf-transfer-")
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, "lessons.db")
    if os.path.exists(db):
        os.remove(db)
    seeds = list(range(1, a.seeds + 1))
    t0 = time.time()
    budget = a.source_budget or space_size(a.source)
    src_evals = []
    for s in seeds:
        run = os.path.join(work, f"source-{s}")
        shutil.rmtree(run, ignore_errors=True)
        sh([kforge, "run", a.source, "--budget", str(budget), "--seed", str(s), "--run", run] + QUICK)
        src_evals.append(len(json.loads(sh([kforge, "tree", run, "--json"]).stdout)["nodes"]))
        sh([kforge, "lessons", "distill", run, "--lessons", db])
    lessons = [json.loads(l) for l in sh([kforge, "lessons", "export", "--lessons", db]).stdout.splitlines() if l]
    print(f"## Transfer of lessons: {a.source} -> {', '.join(targets)}\n")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; seeds {seeds[0]}..{seeds[-1]}; target: within "
          f"{a.within:.0%} of the best point of the target's space; source runs of budget {budget}"
          f"{'' if a.source_budget else ' (the whole space)'}: {', '.join(map(str, src_evals))} evaluations.\n")
    print(f"Lessons distilled from the {len(seeds)} source runs ({len(lessons)}):\n")
    for l in lessons:
        t = l.get("trust", {})
        print(f"- `{l['id']}` (+{t.get('confirmations', 0)} -{t.get('refutations', 0)}, ops "
              f"{l['situation'].get('ops')}): {l['action'][:90]}")
    print()
    for target in targets:
        pts = table(a.build, target, work)
        best = min(v for v in pts.values() if v is not None)
        print(f"### {target} ({len(pts)} points)\n")
        print("Space (geometric mean of the visible shapes' times, `kforge bench`): " +
              ", ".join(f"{','.join(f'{k}={v}' for k, v in key)} {'refused' if g is None else f'{g / 1e3:.1f} us'}"
                        f"{' (target)' if g is not None and g <= best * (1 + a.within) else ''}"
                        for key, g in sorted(pts.items(), key=lambda kv: kv[1] or 1e30)) + "\n")
        print("| seed | evaluations without lessons | with lessons | first proposal without | with |")
        print("|---|---|---|---|---|")
        res = {0: [], 1: []}
        applied = None
        for s in seeds:
            row = []
            for with_l in (0, 1):
                run = os.path.join(work, f"{os.path.basename(target)}-{'lessons' if with_l else 'base'}-{s}")
                shutil.rmtree(run, ignore_errors=True)
                cmd = [kforge, "run", target, "--budget", str(len(pts)), "--seed", str(s), "--run", run] + QUICK
                if with_l:
                    cmd += ["--lessons", db]
                sh(cmd)
                n, first, lev = evals_to_target(kforge, run, pts, a.within)
                res[with_l].append(n if n is not None else len(pts) + 1)
                row += [n, first]
                if with_l:
                    applied = lev
            print(f"| {s} | {row[0]} | {row[2]} | {row[1]} | {row[3]} |")
        m0, m1 = statistics.median(res[0]), statistics.median(res[1])
        ap_list = (applied or {}).get("applied", [])
        print(f"\nMedian evaluations to the target: **{m0:g} without lessons, {m1:g} with; ratio {m1 / m0:.2f}**"
              f" (with / without). Lessons retrieved for it: {(applied or {}).get('retrieved', 0)}; applied: "
              + (", ".join(f"{x['setting']} ({x['weight']:+.2f})" for x in ap_list) or "none") + ".\n")
    print(f"Wall time {time.time() - t0:.0f} s; work directory {work}{'' if a.keep else ' (removed)'}.")
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
