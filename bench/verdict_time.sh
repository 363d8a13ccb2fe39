#!/bin/sh
# bench/verdict_time.sh KFORGE_A KFORGE_B [REPS]: time to a trusted verdict, A against B.
#
# For each bundled C task (tasks/c/*), `kforge check` of its fastest bundled candidate
# (candidates/fast.c), REPS times (default 5) per build, the two builds interleaved so
# that load on the machine falls on both alike. Prints each task's median seconds (the
# verdict's own "seconds") for A and B and their ratio B/A, then the medians over the
# tasks and their ratio (the target: B/A at most 1.2), and the geometric mean of the
# tasks' ratios (less sensitive to which task lands in the middle on a noisy machine).
set -eu
A=$1
B=$2
REPS=${3:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
secs() { "$1" check "$2" "$3" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])'; }
printf '%-12s %10s %10s %7s\n' task A_s B_s B/A
for t in "$ROOT"/tasks/c/*/; do
    c="$t/candidates/fast.c"
    [ -f "$c" ] || continue
    ta="" tb=""
    i=0
    while [ "$i" -lt "$REPS" ]; do
        i=$((i + 1))
        ta="$ta $(secs "$A" "$t" "$c")"
        tb="$tb $(secs "$B" "$t" "$c")"
    done
    python3 - "$(basename "$t")" "$ta" "$tb" <<'PY'
import statistics, sys
a = statistics.median(float(x) for x in sys.argv[2].split())
b = statistics.median(float(x) for x in sys.argv[3].split())
print("%-12s %10.3f %10.3f %7.2f" % (sys.argv[1], a, b, b / a))
PY
done | tee "${TMPDIR:-/tmp}/kf-verdict-time.txt"
python3 - "${TMPDIR:-/tmp}/kf-verdict-time.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
a = statistics.median(float(r[1]) for r in rows)
b = statistics.median(float(r[2]) for r in rows)
print("%-12s %10.3f %10.3f %7.2f" % ("median", a, b, b / a))
g = statistics.geometric_mean(float(r[2]) / float(r[1]) for r in rows)
print("%-12s %10s %10s %7.2f" % ("geomean", "", "", g))
PY
