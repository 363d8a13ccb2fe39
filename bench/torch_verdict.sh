#!/bin/sh
# bench/torch_verdict.sh [KFORGE] [REPS]: time to a trusted verdict of a task with a
# PyTorch reference against the same task with its C reference (docs/torch.md; the
# target in BENCHMARKS.md: at most 1.5x). For each bundled tasks/c/NAME_torch beside
# tasks/c/NAME, `kforge check` of the twin's candidates/fast.c on both tasks, REPS times
# each (default 7), interleaved so that load falls on both alike. Prints each pair's
# median seconds (the verdict's own "seconds"), their ratio, and the median of the
# PyTorch reference's start (python3 and `import torch`, from -v's "reference worker
# ready" line), the part of the difference that no check of the reference can avoid.
set -eu
K=${1:-build/kforge}
REPS=${2:-7}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
one() { # TASK CAND -> "seconds ready_ms"
    "$K" check "$1" "$2" --json -v 2>"${TMPDIR:-/tmp}/kf-tv-err.txt" |
        python3 -c 'import json,re,sys
s = json.load(sys.stdin)["seconds"]
m = re.search(r"\[([0-9.]+) ms\] reference worker ready", open(sys.argv[1]).read())
print(s, m.group(1) if m else "nan")' "${TMPDIR:-/tmp}/kf-tv-err.txt"
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
