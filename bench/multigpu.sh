#!/bin/sh
# bench/multigpu.sh [BUILD] [OUT]: kforge's local workers on every GPU of one host.
#
# On a host with N GPUs (N >= 1; a one-GPU host runs every step with one device):
#   1. throughput: `kforge run --devices 0..W-1` with the builtin proposer on MG_TASKS
#      (default: sum softmax) for W = 1, 2 and N workers, MG_BUDGET evaluations each;
#      prints evaluations per minute and the ratio to one worker; with a bundled CUDA
#      decode pipeline (pipelines/cuda/decode) also `kforge system run --devices`;
#   2. the record of each run: every evaluation recorded once (verdicts = dispatched,
#      no duplicates, none lost), each verdict timed on one device;
#   3. A/A on every device: the reference timed against itself (within 0.97-1.03), and
#      the spread of one kernel's time (MG_TASKS' first fast.cu) across the devices;
#   4. a kill (N >= 2): one busy worker killed mid-run; the evaluation is requeued, none
#      lost.
# MG_T limits each kernel run (240 s), MG_SYS_T each system run (900 s).
# Targets (BENCHMARKS.md): 2 GPUs at least 1.8x the evaluations per minute of 1, 4 GPUs
# at least 3.4x; A/A within 0.97-1.03 on every device; no evaluation lost or doubled.
# Exit 1 when a check of the record, the A/A or the kill fails, 2 on a usage error.
set -u
B=${1:-build}
O=${2:-/tmp/kf-multigpu}
K="$B/kforge"
[ -x "$K" ] || { echo "multigpu: no $K (build first)" >&2; exit 2; }
mkdir -p "$O"
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$N" -ge 1 ] 2>/dev/null || { echo "multigpu: no GPU (nvidia-smi -L lists none)" >&2; exit 2; }
TASKS=${MG_TASKS:-"sum softmax"}
BUDGET=${MG_BUDGET:-12}
T=${MG_T:-240}
fail=0
echo "multigpu: $N GPU(s): $(nvidia-smi -L | sed 's/ (UUID.*//' | tr '\n' ';')"

devlist() { # the first $1 device indices, comma-separated
    seq 0 $(($1 - 1)) | paste -sd, -
}

# the run's summary and scale.json: evaluations, minutes, the record's checks
judge_run() { # RUNDIR SUMMARY LABEL
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
run, summ, label = sys.argv[1:4]
try:
    s = json.load(open(summ))
except Exception as e:
    print("%s: no summary (%s)" % (label, e)); sys.exit(1)
sc = s.get("scale") or {}
ev = s.get("evaluations", 0)
wall = s.get("wall_s") or s.get("elapsed_s") or 0
bad = []
if sc:
    if sc.get("duplicates", 0): bad.append("duplicates %s" % sc["duplicates"])
    if sc.get("lost", 0): bad.append("lost %s" % sc["lost"])
    if sc.get("verdicts", ev) < sc.get("dispatched", 0) - sc.get("requeued", 0):
        bad.append("verdicts %s of %s dispatched" % (sc.get("verdicts"), sc.get("dispatched")))
per_min = 60.0 * ev / wall if wall else 0
print("%s: %d evaluations in %.1f s, %.2f per minute, scale %s%s" % (
    label, ev, wall, per_min,
    json.dumps({k: sc.get(k) for k in ("dispatched", "verdicts", "duplicates", "requeued", "lost", "models")}),
    ("; BAD: " + ", ".join(bad)) if bad else ""))
open(summ + ".rate", "w").write("%f\n" % per_min)
sys.exit(1 if bad else 0)
PY
}

# 1 and 2: throughput and the record, for 1, 2 and N workers
WS=1
[ "$N" -ge 2 ] && WS="$WS 2"
[ "$N" -gt 2 ] && WS="$WS $N"
for t in $TASKS; do
    for w in $WS; do
        r="$O/run_${t}_$w"
        rm -rf "$r"
        s0=$(date +%s)
        timeout "$T" "$K" run "tasks/cuda/$t" --budget "$BUDGET" --devices "$(devlist "$w")" --run "$r" --json \
            > "$r.json" 2> "$r.err"
        rc=$?
        python3 - "$r.json" "$s0" <<'PY'
import json, sys, time
p, s0 = sys.argv[1], float(sys.argv[2])
try:
    d = json.load(open(p))
except Exception:
    d = {}
d.setdefault("wall_s", time.time() - s0)
json.dump(d, open(p, "w"))
PY
        judge_run "$r" "$r.json" "$t, $w worker(s), rc $rc" || fail=1
    done
    one=$(cat "$O/run_${t}_1.json.rate" 2>/dev/null || echo 0)
    for w in $WS; do
        [ "$w" = 1 ] && continue
        rw=$(cat "$O/run_${t}_$w.json.rate" 2>/dev/null || echo 0)
        python3 -c "import sys; a,b,w=map(float,sys.argv[1:]); print('%s: %d workers %.2fx the evaluations per minute of 1 (target %s)' % (sys.argv[4], w, b/a if a else 0, '1.8x' if w == 2 else '3.4x at 4'))" "$one" "$rw" "$w" "$t"
    done
done
if [ -f pipelines/cuda/decode/pipeline.json ]; then
    for w in $WS; do
        r="$O/sys_$w"
        rm -rf "$r"
        timeout "${MG_SYS_T:-900}" "$K" system run pipelines/cuda/decode/pipeline.json --run "$r" --budget 2 --slots 1 \
            --devices "$(devlist "$w")" > "$r.txt" 2>&1
        echo "system run, $w device(s): rc $? $(tail -1 "$r.txt" | cut -c1-200)"
    done
fi

# 3: A/A and the spread of one kernel across the devices
first=${TASKS%% *}
: > "$O/aa.txt"
d=0
while [ "$d" -lt "$N" ]; do
    CUDA_VISIBLE_DEVICES=$d timeout 120 "$K" bench "tasks/cuda/$first" "tasks/cuda/$first/reference.cu" --json \
        > "$O/aa_$d.json" 2> /dev/null
    CUDA_VISIBLE_DEVICES=$d timeout 120 "$K" bench "tasks/cuda/$first" "tasks/cuda/$first/candidates/fast.cu" --json \
        > "$O/fast_$d.json" 2> /dev/null
    d=$((d + 1))
done
python3 - "$O" "$N" <<'PY' || fail=1
import json, sys
o, n = sys.argv[1], int(sys.argv[2])
bad = 0
times = {}
for d in range(n):
    try:
        aa = json.load(open("%s/aa_%d.json" % (o, d)))
        fa = json.load(open("%s/fast_%d.json" % (o, d)))
    except Exception as e:
        print("device %d: no bench (%s)" % (d, e)); bad = 1; continue
    for s in aa.get("shapes", []):
        if "speedup" not in s: continue
        ok = 0.97 <= s["speedup"] <= 1.03
        bad |= not ok
        print("device %d A/A %s: %.3f%s" % (d, s["sizes"], s["speedup"], "" if ok else "  OUTSIDE 0.97-1.03"))
    for s in fa.get("shapes", []):
        if "candidate_ns" in s: times.setdefault(json.dumps(s["sizes"]), []).append(s["candidate_ns"])
for k, v in times.items():
    print("fast kernel at %s across %d device(s): %.2f-%.2f us, spread %.1f%%" % (
        k, len(v), min(v) / 1e3, max(v) / 1e3, 100.0 * (max(v) - min(v)) / min(v)))
sys.exit(bad)
PY

# 4: one busy worker killed mid-run: requeued on another, nothing lost
if [ "$N" -lt 2 ]; then
    echo "kill: skipped (one GPU: no other worker to take the evaluation)"
    exit $fail
fi
r="$O/run_kill"
rm -rf "$r"
"$K" run "tasks/cuda/$first" --budget 6 --devices "$(devlist "$N")" --run "$r" --json > "$r.json" 2> "$r.err" &
kp=$!
killed=$(python3 - "$r" <<'PY'
import json, os, signal, sys, time
run = sys.argv[1]
for _ in range(3000):
    try:
        s = json.load(open(os.path.join(run, "scale.json")))
        for w in s.get("workers", []):
            if w.get("state") == "busy" and w.get("evaluations", 0) >= 1:
                os.kill(w["pid"], signal.SIGKILL); print(w["pid"]); sys.exit(0)
    except Exception:
        pass
    time.sleep(0.05)
print("none")
PY
)
wait $kp
rc=$?
echo "kill: worker $killed killed, kforge run exit $rc"
[ "$killed" = none ] && fail=1
judge_run "$r" "$r.json" "after the kill" || fail=1
python3 -c "import json,sys; s=json.load(open(sys.argv[1])).get('scale',{}); sys.exit(0 if s.get('requeued',0)>=1 else 1)" "$r.json" \
    || { echo "kill: nothing was requeued"; fail=1; }
exit $fail
