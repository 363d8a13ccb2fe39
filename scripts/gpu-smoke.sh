#!/bin/sh
# scripts/gpu-smoke.sh OUTDIR - a fixed round of GPU checks on a GPU host, all output under
# OUTDIR (packed into OUTDIR.tgz): the device's ceilings, sum's template variants at
# n = 2^24, where a bench's time goes (bench -v), the CUDA export dispatcher and the
# sanitizer cases as tests, and the loop with --jobs 2 and the Critic on a GPU task.
# scripts/gpu-steps.sh runs any of these steps alone, with more options.
set -u
cd "$(dirname "$0")/.."
O=$1
mkdir -p "$O"
export KFT_SOURCE_DIR=$PWD KFT_BINARY_DIR=$PWD/build
echo "=== devinfo"; timeout 60 ./build/kforge device-info 2>&1 | grep -E "copy|device 0"
echo "=== sum variants at n=2^24 (param.cu)"
for v in "ILP=4 TAIL=0" "ILP=4 TAIL=1" "ILP=8 TAIL=1" "ILP=4 RES=2048 TAIL=1 LOAD=1" "ILP=2 RES=2048 TAIL=1"; do
    args=""; for kv in $v; do args="$args --param $kv"; done
    f=$O/sum_$(echo $v | tr ' =' '__').json
    timeout 40 ./build/kforge bench tasks/cuda/sum tasks/cuda/sum/candidates/param.cu $args --json > "$f" 2>/dev/null
    python3 - "$f" "$v" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    s = d["shapes"][0]
    print("%-28s %s %.1f us %.0f GB/s roofline %.3f spread %.3f" % (sys.argv[2], d["verdict"], s["candidate_ns"] / 1e3, s.get("gbytes_per_s", 0), s.get("roofline_fraction", 0), s.get("candidate_spread", 0)))
except Exception as e:
    print(sys.argv[2], "no result", e)
PY
done
echo "=== bench -v: where an evaluation's time goes (sum fast.cu)"
s=$(date +%s%N); timeout 60 ./build/kforge bench tasks/cuda/sum tasks/cuda/sum/candidates/fast.cu -v --json > "$O/bv.json" 2> "$O/bv.err"; e=$(date +%s%N)
echo "total $(( (e - s) / 1000000 )) ms"; grep "kforge: \[" "$O/bv.err" | grep -E "built|ready|phase done|closed|timing|timed" | cut -c1-120
echo "=== GPU tests"
timeout 150 ./build/kf-tests -j 2 export/cuda_dispatch_gpu sanitize/redteam/ sanitize/bundled/sum cuda/wrapped_orphan > "$O/t.txt" 2>&1
grep -E "^(pass|FAIL|skip)|FAIL at" "$O/t.txt" | cut -c1-300; tail -1 "$O/t.txt"
echo "=== loop: softmax, --jobs 2, budget 6"
s=$(date +%s); timeout 120 ./build/kforge run tasks/cuda/softmax --budget 6 --jobs 2 --run "$O/run" > "$O/loop.txt" 2>&1; echo "rc=$? $(( $(date +%s) - s )) s"
tail -2 "$O/loop.txt"; timeout 20 ./build/kforge tree "$O/run" 2>&1 | head -20
tar czf "$O.tgz" -C "$(dirname "$O")" "$(basename "$O")" 2>/dev/null
