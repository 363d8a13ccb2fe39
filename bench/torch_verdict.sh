#!/bin/sh
# bench/torch_verdict.sh [KFORGE] [REPS] [BENCH_REPS]: time to a trusted verdict of a task
# with a PyTorch reference against the same task with its C reference (docs/torch.md; the
# target in BENCHMARKS.md: at most 1.5x). For each bundled tasks/c/NAME_torch beside
# tasks/c/NAME:
# - `kforge check` of the twin's candidates/fast.c on both tasks, REPS times each
#   (default 7), interleaved so that load falls on both alike. Prints each pair's median
#   seconds (the verdict's own "seconds"), their ratio, and the median of the PyTorch
#   reference's start (python3 and `import torch`, from -v's "reference worker ready"
#   line), the part of the difference that no check of the reference can avoid: each
#   `kforge check` is a process of its own, and its first reference side starts the
#   warm process (docs/torch.md "The warm process").
# - `kforge bench` of the same candidate (a check, then timing in fresh workers: two
#   reference sides in one kforge process, the second one forked by the warm process),
#   BENCH_REPS times each (default 3), interleaved: the C reference, the PyTorch one, and
#   the PyTorch one with KFORGE_TORCH_WARM=0 (every side cold). Prints the medians, the
#   ratios to C, and the median time from the check's end to the timing workers' start
#   (-v's "timing: fresh workers ready" minus the last "workers closed" before it): the
#   second reference side's start, warm and cold.
set -eu
K=${1:-build/kforge}
REPS=${2:-7}
BREPS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ERR="${TMPDIR:-/tmp}/kf-tv-err.$$.txt"
BOPTS="--min-time 0.05 --min-runs 5"
one() { # TASK CAND -> "seconds ready_ms"
    "$K" check "$1" "$2" --json -v 2>"$ERR" |
        python3 -c 'import json,re,sys
s = json.load(sys.stdin)["seconds"]
m = re.search(r"\[([0-9.]+) ms\] reference worker ready", open(sys.argv[1]).read())
print(s, m.group(1) if m else "nan")' "$ERR"
}
bone() { # WARM TASK CAND -> "seconds second_side_ms"
    env KFORGE_TORCH_WARM="$1" "$K" bench "$2" "$3" $BOPTS --json -v 2>"$ERR" |
        python3 -c 'import json,re,sys
s = json.load(sys.stdin)["seconds"]
t = open(sys.argv[1]).read()
m = re.search(r"\[([0-9.]+) ms\] timing: fresh workers ready", t)
c = [float(x) for x in re.findall(r"\[([0-9.]+) ms\] workers closed", t[: m.start()])] if m else []
print(s, float(m.group(1)) - c[-1] if m and c else "nan")' "$ERR"
}
printf '%-14s %8s %8s %7s %11s\n' task C_ref_s torch_s ratio torch_ready
for t in "$ROOT"/tasks/c/*_torch/; do
    twin="${t%_torch/}"
    c="$t/candidates/fast.c"
    [ -d "$twin" ] && [ -f "$c" ] || continue
    a="" b="" r=""
    i=0
    while [ "$i" -lt "$REPS" ]; do
        i=$((i + 1))
        a="$a $(one "$twin" "$c" | cut -d' ' -f1)"
        x=$(one "$t" "$c")
        b="$b ${x% *}"
        r="$r ${x#* }"
    done
    python3 - "$(basename "$twin")" "$a" "$b" "$r" <<'PY'
import statistics, sys
a = statistics.median(float(x) for x in sys.argv[2].split())
b = statistics.median(float(x) for x in sys.argv[3].split())
r = statistics.median(float(x) for x in sys.argv[4].split()) / 1e3
print("%-14s %8.3f %8.3f %7.2f %10.3fs" % (sys.argv[1], a, b, b / a, r))
PY
done
[ "$BREPS" -gt 0 ] || exit 0
printf '\nbench (%s): seconds, ratio to C, second reference side'"'"'s start\n' "$BOPTS"
printf '%-14s %8s %8s %7s %8s %7s %10s %10s\n' task C_s warm_s ratio cold_s ratio warm_start cold_start
for t in "$ROOT"/tasks/c/*_torch/; do
    twin="${t%_torch/}"
    c="$t/candidates/fast.c"
    [ -d "$twin" ] && [ -f "$c" ] || continue
    a="" w="" ws="" k="" ks=""
    i=0
    while [ "$i" -lt "$BREPS" ]; do
        i=$((i + 1))
        a="$a $(bone 1 "$twin" "$c" | cut -d' ' -f1)"
        x=$(bone 1 "$t" "$c")
        w="$w ${x% *}" ws="$ws ${x#* }"
        x=$(bone 0 "$t" "$c")
        k="$k ${x% *}" ks="$ks ${x#* }"
    done
    python3 - "$(basename "$twin")" "$a" "$w" "$k" "$ws" "$ks" <<'PY'
import statistics, sys
m = [statistics.median(float(x) for x in v.split()) for v in sys.argv[2:]]
print("%-14s %8.3f %8.3f %7.2f %8.3f %7.2f %9.3fs %9.3fs"
      % (sys.argv[1], m[0], m[1], m[1] / m[0], m[2], m[2] / m[0], m[3] / 1e3, m[4] / 1e3))
PY
done
rm -f "$ERR"
