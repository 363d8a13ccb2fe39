#!/bin/sh
# bench/torch_verdict.sh [KFORGE] [REPS] [BENCH_REPS]: time to a trusted verdict of a task
# with a PyTorch reference against the same task with its C reference (docs/torch.md; the
# target in BENCHMARKS.md: at most 1.5x). For each bundled tasks/c/NAME_torch beside
# tasks/c/NAME:
# - `kforge check` of the twin's candidates/fast.c on both tasks, REPS times each
#   (default 7), interleaved so that load falls on both alike; the PyTorch one served by
#   the warm server (docs/torch.md "Across invocations": each `kforge check` is a process
#   of its own, and the server outlives it; a check before the loop starts it, so every
#   timed one finds it warm) and with KFORGE_TORCH_WARM=process (no server: each check's
#   first reference side starts a warm process of its own and imports torch). Prints each
#   median seconds (the verdict's own "seconds"), the ratios to C, and the median of the
#   PyTorch reference's start without the server (python3 and `import torch`, from -v's
#   "reference worker ready" line), what the server saves.
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
one() { # WARM TASK CAND -> "seconds ready_ms"
    env KFORGE_TORCH_WARM="$1" "$K" check "$2" "$3" --json -v 2>"$ERR" |
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
printf '%-14s %8s %8s %7s %8s %7s %11s\n' task C_ref_s server_s ratio proc_s ratio proc_ready
for t in "$ROOT"/tasks/c/*_torch/; do
    twin="${t%_torch/}"
    c="$t/candidates/fast.c"
    [ -d "$twin" ] && [ -f "$c" ] || continue
    one 1 "$t" "$c" >/dev/null # the server's start
    a="" b="" p="" r=""
    i=0
    while [ "$i" -lt "$REPS" ]; do
        i=$((i + 1))
        a="$a $(one 1 "$twin" "$c" | cut -d' ' -f1)"
        b="$b $(one 1 "$t" "$c" | cut -d' ' -f1)"
        x=$(one process "$t" "$c")
        p="$p ${x% *}"
        r="$r ${x#* }"
    done
    python3 - "$(basename "$twin")" "$a" "$b" "$p" "$r" <<'PY'
import statistics, sys
v = [sorted(float(x) for x in s.split()) for s in sys.argv[2:5]]
a, b, p = (statistics.median(x) for x in v)
r = statistics.median(float(x) for x in sys.argv[5].split()) / 1e3
print("%-14s %8.3f %8.3f %7.2f %8.3f %7.2f %10.3fs" % (sys.argv[1], a, b, b / a, p, p / a, r))
print("%-14s %8s %8s %7s %8s  (min-max of %d)" % ("", "%.2f-%.2f" % (v[0][0], v[0][-1]),
      "%.2f-%.2f" % (v[1][0], v[1][-1]), "", "%.2f-%.2f" % (v[2][0], v[2][-1]), len(v[0])))
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
