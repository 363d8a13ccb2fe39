#!/usr/bin/env python3
"""kforge run --jobs 1 against --jobs 2: wall time of a whole run on a bundled task.

Each run starts with an empty compile cache (every candidate compiles, as in a fresh run)
and the default timing options; the CPU ceilings are measured once by a warm-up run that
is not counted. The order of the two settings alternates between repetitions, so that a
drift in the machine's load does not favour one. The same --seed is given to both
settings of a repetition.

    python3 bench/jobs.py [BUILD] [--reps 3] [--task tasks/c/sgemm] [--budget 9] [--jobs 2]
                          [--agent-sleep S]

--agent-sleep S: the proposer is a cmd agent that thinks for S seconds and then writes the
task's candidates/fast.c (a stand-in for a model's latency); the agent is asked one
proposal at a time, and with --jobs 2 the evaluations of earlier proposals go on while it
thinks.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time


def one(kf, task, budget, jobs, seed, tmp, cache, agent=None):
    run = os.path.join(tmp, "run")
    shutil.rmtree(run, ignore_errors=True)
    shutil.rmtree(os.path.join(cache, "c"), ignore_errors=True)  # compiled candidates
    env = dict(os.environ, KFORGE_CACHE_DIR=cache)
    t0 = time.monotonic()
    p = subprocess.run([kf, "run", task, "--budget", str(budget), "--seed", str(seed), "--jobs", str(jobs),
                        "--run", run, "--json"] + (["--agent", agent] if agent else []),
                       env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode:
        sys.exit(f"kforge run --jobs {jobs} failed ({p.returncode}): {p.stderr[-2000:]}")
    return wall, json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--task", default="tasks/c/sgemm")
    ap.add_argument("--budget", type=int, default=9)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--agent-sleep", type=float, default=0)
    a = ap.parse_args()
    agent = None
    if a.agent_sleep > 0:
        fast = os.path.abspath(os.path.join(a.task, "candidates", "fast.c"))
        agent = f'cmd:sleep {a.agent_sleep}; cp {fast} "$KFORGE_OUT"'
    kf = os.path.join(a.build, "kforge")
    tmp = tempfile.mkdtemp(prefix="kf-jobs-bench-")
    cache = os.path.join(tmp, "cache")
    settings = [1, a.jobs]
    res = {j: [] for j in settings}
    try:
        one(kf, a.task, 1, 1, 1, tmp, cache)  # warm-up: CPU ceilings into the cache
        for r in range(a.reps):
            for j in settings if r % 2 == 0 else settings[::-1]:
                wall, s = one(kf, a.task, a.budget, j, r + 1, tmp, cache, agent)
                res[j].append((wall, s))
                print(f"rep {r + 1} --jobs {j}: {wall:.2f} s, {s['evaluations']} evaluations, {s['kept']} kept, "
                      f"best {s['best_speedup']:.3f}x, max_concurrent_timing {s['max_concurrent_timing']}",
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    who = f"a cmd agent thinking {a.agent_sleep:g} s per proposal" if agent else "the builtin proposer"
    print(f"\n{a.task}, --budget {a.budget}, {who}, default timing options, {a.reps} runs each, "
          "empty compile cache per run")
    print("| --jobs | median wall (s) | min - max (s) | evaluations | kept (per run) |")
    print("|---|---|---|---|---|")
    for j in settings:
        w = [x[0] for x in res[j]]
        print(f"| {j} | {statistics.median(w):.2f} | {min(w):.2f} - {max(w):.2f} | "
              f"{res[j][0][1]['evaluations']} | {', '.join(str(x[1]['kept']) for x in res[j])} |")
    m1, mj = statistics.median(x[0] for x in res[1]), statistics.median(x[0] for x in res[a.jobs])
    print(f"\nspeedup of --jobs {a.jobs} over --jobs 1 (medians): {m1 / mj:.2f}x")


if __name__ == "__main__":
    main()
