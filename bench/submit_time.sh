#!/bin/sh
# bench/submit_time.sh KFORGE [REPS] [MODES]: wall time of `kforge submit` in tool mode.
#
# For each bundled C task (tasks/c/*), its fastest bundled candidate (candidates/fast.c)
# is submitted as a child of the root of a fresh empty run (`kforge run TASK --budget 0`,
# default timing: no --min-runs, --max-runs or --min-time), REPS times (default 3) per
# mode, the modes interleaved so that load on the machine falls on each alike:
#   full     kforge submit RUN --parent 0 fast.c            (check, timing, the Critic)
#   screen   kforge submit RUN --parent 0 fast.c --screen   (check, one short timing)
#   clflush  full, with KFORGE_CLFLUSH=1 (the staged lines flushed with clflush, as before
#            clflushopt): the A/B of the flush in one binary
#   fixed    full, in a run made with --precision 0: every shape timed to --min-time or
#            --max-runs as before the precision stop (the A/B of that stop in one binary)
#   retimes  full, in a run made with --critic decisive=0: every Critic re-timing done
#            even for a decisive win (the A/B of the decisive stop in one binary)
# MODES is a space-separated list (default "full screen"); TASKS (environment) names the
# tasks to run (default: every one with a candidates/fast.c). Prints per task and mode the
# median wall seconds and the spread (min-max), then the median over the tasks of each
# mode's medians and the load average at the end. Targets (BENCHMARKS.md, quiet 2-core
# machine): full at most 10 s, screen at most 2 s, medians over the bundled tasks.
set -eu
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REPS=${2:-3}
MODES=${3:-full screen}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/kf-submit-time-XXXXXX")
OUT=$W/rows.txt
: >"$OUT"
one() { # mode task -> seconds
    run=$W/r$$-$(date +%s%N)
    if [ "$1" = fixed ]; then
        "$K" run "$2" --budget 0 --run "$run" --precision 0 >/dev/null 2>&1
    elif [ "$1" = retimes ]; then
        "$K" run "$2" --budget 0 --run "$run" --critic decisive=0 >/dev/null 2>&1
    else
        "$K" run "$2" --budget 0 --run "$run" >/dev/null 2>&1
    fi
    case $1 in
    screen) set -- --screen ;;
    *) set -- ;;
    esac
    t0=$(date +%s%N)
    if [ "$mode" = clflush ]; then
        KFORGE_CLFLUSH=1 "$K" submit "$run" --parent 0 "$cand" "$@" >/dev/null 2>&1 || true
    else
        "$K" submit "$run" --parent 0 "$cand" "$@" >/dev/null 2>&1 || true
    fi
    t1=$(date +%s%N)
    rm -rf "$run"
    python3 -c "print(($t1 - $t0) / 1e9)"
}
printf '%-10s %-8s %8s %17s\n' task mode median_s spread_s
for t in "$ROOT"/tasks/c/*/; do
    case " ${TASKS:-$(basename "$t")} " in *" $(basename "$t") "*) ;; *) continue ;; esac
    cand="$t/candidates/fast.c"
    [ -f "$cand" ] || continue
    name=$(basename "$t")
    i=0
    : >"$W/$name"
    while [ "$i" -lt "$REPS" ]; do
        i=$((i + 1))
        for mode in $MODES; do echo "$mode $(one "$mode" "$t")" >>"$W/$name"; done
    done
    python3 - "$name" "$W/$name" "$MODES" <<'PY' | tee -a "$OUT"
import statistics, sys
rows = [l.split() for l in open(sys.argv[2]) if l.strip()]
for m in sys.argv[3].split():
    v = sorted(float(r[1]) for r in rows if r[0] == m)
    print("%-10s %-8s %8.2f %8.2f-%-8.2f" % (sys.argv[1], m, statistics.median(v), v[0], v[-1]))
PY
done
python3 - "$OUT" "$MODES" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for m in sys.argv[2].split():
    v = [float(r[2]) for r in rows if r[1] == m]
    print("%-10s %-8s %8.2f   (median of %d tasks' medians)" % ("all", m, statistics.median(v), len(v)))
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$W"
