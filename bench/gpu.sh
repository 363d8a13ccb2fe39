#!/bin/sh
# bench/gpu.sh - the GPU half of kforge's tests and benchmarks, in one go on a machine
# with an NVIDIA GPU (the H200 host). It runs the prebuilt binaries in build/ (built on
# the development machine: `make`), because the GPU host has the runtime libraries but
# not their headers; with headers present it builds first.
#   bench/gpu.sh [tests|sanitize|verdict|profile|bench|host|all] [OUTDIR]
#   bench/gpu.sh torch [OUTDIR]   # PyTorch load_inline verdict time and cuBLAS, for the record
#                                 # (bench/torch_compare.py; needs python3 with torch, not build/)
#   bench/gpu.sh multigpu [OUTDIR] # local workers on every GPU of the host (bench/multigpu.sh)
# Prints a summary; full JSON and logs go to OUTDIR (default /tmp/kforge-gpu).
set -u
cd "$(dirname "$0")/.."
MODE=${1:-all}
OUT=${2:-/tmp/kforge-gpu}
mkdir -p "$OUT"
if [ "$MODE" = torch ]; then
    # Not part of "all": it needs PyTorch and takes minutes of load_inline compiles.
    # TORCH_ARGS passes options through (e.g. "--tasks softmax,bgemm --reps 50");
    # TORCH_TIMEOUT bounds the whole run (the script's own --budget stops new compiles first).
    echo "== machine"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
    echo "== PyTorch load_inline verdict time and cuBLAS (bench/torch_compare.py)"
    TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16} \
        timeout -k 10 "${TORCH_TIMEOUT:-540}" python3 bench/torch_compare.py --out "$OUT/torch.json" \
        ${TORCH_ARGS:-} > "$OUT/torch.txt" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "(timed out after ${TORCH_TIMEOUT:-540} s)"
    tail -n 120 "$OUT/torch.txt"
    tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" 2>/dev/null
    exit $rc
fi
[ -x build/kforge ] || make
if [ "$MODE" = multigpu ]; then # not part of "all": minutes of runs on every GPU
    sh bench/multigpu.sh build "$OUT"
    exit $?
fi
export KFT_SOURCE_DIR=$PWD KFT_BINARY_DIR=$PWD/build
echo "== machine"
uname -r; nvidia-smi -L 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
TASKS=${TASKS:-"softmax rmsnorm sum transpose sgemm bgemm gdn_decode"}
RUNS=${RUNS:-5}
BENCH_ARGS=${BENCH_ARGS:-}
rc=0
if [ "$MODE" = tests ] || [ "$MODE" = all ]; then
    echo "== GPU test suite (cuda/, redteam/cuda, honest/cuda, bundled/cuda, validate/cuda, xref/)"
    ./build/kf-tests -j 4 cuda/ redteam/cuda honest/cuda bundled/cuda validate/cuda xref/ > "$OUT/tests.txt" 2>&1
    rc=$?
    grep -E "^(FAIL|skip)|FAIL at|skipped:" "$OUT/tests.txt" | cut -c1-400 | head -80
    tail -1 "$OUT/tests.txt"
fi
if [ "$MODE" = sanitize ] || [ "$MODE" = all ]; then
    echo "== kforge check --sanitize (needs compute-sanitizer; KFORGE_SANITIZER to point at it)"
    ./build/kf-tests -j 2 -v sanitize/ > "$OUT/sanitize.txt" 2>&1 || rc=1
    grep -E "^(FAIL|skip)|FAIL at|skipped:" "$OUT/sanitize.txt" | cut -c1-400 | head -40
    tail -1 "$OUT/sanitize.txt"
fi
if [ "$MODE" = verdict ] || [ "$MODE" = all ]; then
    echo "== time to a trusted verdict (kforge check, fresh candidate text, compile included)"
    for t in $TASKS; do
        for i in $(seq 1 "$RUNS"); do
            f="$OUT/v_${t}_$i.cu"
            cp "tasks/cuda/$t/candidates/fast.cu" "$f"; echo "// run $i $(date +%s%N)" >> "$f"
            s=$(date +%s%N)
            timeout 120 ./build/kforge check "tasks/cuda/$t" "$f" --hidden 4 --json > "$OUT/v_${t}_$i.json" 2> "$OUT/v_${t}_$i.err"
            e=$(date +%s%N)
            echo "$t run $i: $(( (e - s) / 1000000 )) ms, verdict $(python3 -c "import json,sys;d=json.load(open('$OUT/v_${t}_$i.json'));print(d.get('verdict'), d.get('compile',{}).get('seconds'))" 2>/dev/null)"
        done
    done
fi
if [ "$MODE" = profile ]; then
    echo "== where a verdict's time goes (kforge check -v, fresh candidate text)"
    for t in $TASKS; do
        f="$OUT/p_$t.cu"
        cp "tasks/cuda/$t/candidates/fast.cu" "$f"; echo "// profile $(date +%s%N)" >> "$f"
        s=$(date +%s%N)
        timeout 120 ./build/kforge check "tasks/cuda/$t" "$f" --hidden 4 --json -v > "$OUT/p_$t.json" 2> "$OUT/p_$t.err"
        e=$(date +%s%N)
        echo "-- $t: $(( (e - s) / 1000000 )) ms"
        grep "^kforge: \[" "$OUT/p_$t.err" | cut -c1-160
    done
fi
if [ "$MODE" = bench ] || [ "$MODE" = all ]; then
    echo "== bench: fast candidate vs reference, and reference vs itself (A/A)"
    for t in $TASKS; do
        # the whole bench of a fresh text, timed: the trusted verdict with its timing
        f="$OUT/b_${t}_fast.cu"
        cp "tasks/cuda/$t/candidates/fast.cu" "$f"; echo "// bench $(date +%s%N)" >> "$f"
        s=$(date +%s%N)
        timeout 300 ./build/kforge bench "tasks/cuda/$t" "$f" $BENCH_ARGS --json > "$OUT/b_${t}_fast.json" 2> "$OUT/b_${t}_fast.err"
        echo "$t: kforge bench of fast.cu (fresh text) $(( ($(date +%s%N) - s) / 1000000 )) ms"
        timeout 300 ./build/kforge bench "tasks/cuda/$t" "tasks/cuda/$t/reference.cu" $BENCH_ARGS --json > "$OUT/b_${t}_aa.json" 2> "$OUT/b_${t}_aa.err"
    done
    python3 - "$OUT" $TASKS <<'PY'
import json, sys
out = sys.argv[1]
print("| task | shape | fast us | ref us | speedup | noise | fast GB/s | A/A speedup |")
print("|---|---|---|---|---|---|---|---|")
for t in sys.argv[2:]:
    try:
        f = json.load(open("%s/b_%s_fast.json" % (out, t))); a = json.load(open("%s/b_%s_aa.json" % (out, t)))
    except Exception as e:
        print("| %s | error: %s |" % (t, open("%s/b_%s_fast.err" % (out, t)).read()[-300:].replace("\n", " "))); continue
    if f.get("verdict") != "accepted":
        print("| %s | verdict %s: %s |" % (t, f.get("verdict"), json.dumps(f.get("reasons"))[:300])); continue
    for s, s2 in zip(f["shapes"], a.get("shapes", [])):
        sz = " ".join("%s=%d" % kv for kv in s["sizes"].items())
        print("| %s | %s | %.1f | %.1f | %.3f | %.3f | %.0f | %.3f |" % (t, sz, s["candidate_ns"] / 1e3, s["baseline_ns"] / 1e3,
              s["speedup"], s["noise"], s.get("gbytes_per_s", 0), s2.get("speedup", 0)))
PY
fi
if [ "$MODE" = host ] || [ "$MODE" = all ]; then
    echo "== host mode (nvcc, kforge_launch): check and bench of each host.cu, with the seccomp filter on"
    for t in softmax sgemm bgemm; do
        timeout 300 ./build/kforge bench "tasks/cuda/$t" "tasks/cuda/$t/candidates/host.cu" $BENCH_ARGS --json > "$OUT/h_${t}.json" 2> "$OUT/h_${t}.err"
        python3 - "$OUT/h_${t}.json" "$t" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("%s: no JSON (%s); see %s" % (sys.argv[2], e, sys.argv[1].replace(".json", ".err"))); sys.exit(0)
c = d.get("check", {})
print("%s: %s %s seccomp=%s libraries=%s" % (sys.argv[2], d.get("verdict"), [r.get("message", "")[:200] for r in d.get("reasons", [])],
      d.get("sandbox", c.get("sandbox", {})).get("seccomp"), d.get("libraries", c.get("libraries"))))
for s in d.get("shapes", []):
    print("  %s: speedup %.3f fair=%s win=%s modes=%s graph_use=%s launches=%s %s" % (s.get("sizes"), s.get("speedup", 0), s.get("fair"),
          s.get("win"), s.get("launch_mode"), s.get("graph_use"), s.get("launches_per_call"), s.get("fair_reason", s.get("fair_note", ""))[:120]))
PY
    done
fi
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" 2>/dev/null
exit $rc
