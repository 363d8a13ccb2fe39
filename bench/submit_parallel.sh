#!/bin/sh
# bench/submit_parallel.sh KFORGE [TASK] [REPS]: concurrent tool-mode submits to one run
# (docs/run.md "One writer at a time"). For N in 1, 2 and 4: a fresh empty run of TASK
# (default tasks/c/saxpy, the run's default timing), N different copies of its
# candidates/fast.c submitted at once; prints the wall seconds until the last answers
# and the most evaluations the run's recorded spans (created to finished) show in
# progress at once (1: they took turns). REPS rounds (default 2), the Ns interleaved;
# NS (environment) overrides the list of Ns.
set -eu
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
T=${2:-tasks/c/saxpy}
REPS=${3:-2}
tmp=$(mktemp -d)
export KFORGE_KEYS=$tmp/keys
trap 'rm -rf "$tmp"' EXIT
for i in 0 1 2 3; do
    { cat "$T/candidates/fast.c"; echo "/* copy $i */"; } > "$tmp/f$i.c"
done
for rep in $(seq "$REPS"); do
    for n in ${NS:-1 2 4}; do
        r=$tmp/r$n-$rep
        "$K" run "$T" --budget 0 --run "$r" > /dev/null 2>&1
        s=$(date +%s.%N)
        i=0
        pids=
        while [ $i -lt $n ]; do
            "$K" submit "$r" --parent 0 "$tmp/f$i.c" --json > "$tmp/o$i.json" 2> "$tmp/e$i" &
            pids="$pids $!"
            i=$((i + 1))
        done
        rcs=
        for p in $pids; do
            rc=0
            wait "$p" || rc=$?
            rcs="$rcs $rc"
        done
        e=$(date +%s.%N)
        echo "exits:$rcs"
        python3 - "$r/run.db" "$n" "$rep" "$s" "$e" << 'PY'
import sqlite3, sys
db, n, rep, s, e = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
rows = sqlite3.connect(db).execute("select created, finished, state from nodes").fetchall()
spans = [(c, f) for c, f, st in rows if f]
most = max((sum(1 for c2, f2 in spans if c2 <= c < f2) for c, f in spans), default=0)
states = ",".join(sorted(st for _, _, st in rows))
print(f"{n} submits rep {rep}: {e - s:.2f} s, {len(spans)} of {len(rows)} nodes finished ({states}), "
      f"at most {most} evaluating at once")
PY
    done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
