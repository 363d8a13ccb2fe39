#!/bin/sh
# scripts/gpu-steps.sh STEPS OUTDIR - run the named GPU steps on a GPU host, in order, each
# under its own time limit (devinfo profile verdict tests bench loop calls probe ab errs
# torch torchcuda hostcheat), all output under OUTDIR and packed into OUTDIR.tgz.
set -u
cd "$(dirname "$0")/.."
STEPS=$1
O=$2
mkdir -p "$O"
export KFT_SOURCE_DIR=$PWD KFT_BINARY_DIR=$PWD/build
for s in $STEPS; do
    t0=$(date +%s)
    echo "=== $s"
    case $s in
    devinfo) timeout 60 ./build/kforge device-info --refresh --json > "$O/devinfo.json" 2>&1
             timeout 30 ./build/kforge device-info 2>&1 | tee "$O/devinfo.txt" ;;
    profile) timeout ${PROFILE_T:-90} bench/gpu.sh profile "$O/p" | grep -v "^kforge: \[.*reference for" ;;
    verdict) RUNS=${RUNS:-3} timeout ${VERDICT_T:-90} bench/gpu.sh verdict "$O/v" ;;
    tests)   timeout ${TESTS_T:-200} ./build/kf-tests -j 4 ${TEST_FILTERS:-cuda/ cupti/ redteam/cuda honest/cuda bundled/cuda validate/cuda xref/ backend/ overstated_cost} > "$O/tests.txt" 2>&1
             grep -E "^(FAIL|skip)|FAIL at|skipped:" "$O/tests.txt" | sort | uniq -c | sort -rn | cut -c1-300 | head -40
             tail -1 "$O/tests.txt" ;;
    bench)   TASKS=${BENCH_TASKS:-"softmax rmsnorm sum transpose"} timeout ${BENCH_T:-200} bench/gpu.sh bench "$O/b" | tail -30 ;;
    loop)    # the optimisation loop on the GPU: builtin proposer over LOOP_TASK's template
             rm -rf "$O/run"
             timeout ${LOOP_T:-150} ./build/kforge run "tasks/cuda/${LOOP_TASK:-sum}" --budget ${LOOP_BUDGET:-20} --run "$O/run" > "$O/loop.txt" 2>&1
             tail -3 "$O/loop.txt"
             timeout 30 ./build/kforge tree "$O/run" 2>&1 | head -60
             timeout 30 ./build/kforge best "$O/run" 2>&1 | head -20 ;;
    calls)   # where a GPU bench's time goes: the phase clock and each call's steps (bench -v)
             # CALLS: TASK[:CANDIDATE] words (candidate file in the task's candidates/, default fast.cu)
             for tc in ${CALLS:-sum softmax}; do
                 t=${tc%%:*}; c=fast.cu; case $tc in *:*) c=${tc#*:} ;; esac
                 k=${t}_${c%.cu}
                 timeout ${CALLS_T:-60} ./build/kforge bench "tasks/cuda/$t" "tasks/cuda/$t/candidates/$c" -v --json \
                     > "$O/calls_$k.json" 2> "$O/calls_$k.err"
                 echo "-- $t $c"; grep -E "timing|timed|a candidate call|gap" "$O/calls_$k.err" | cut -c1-400
             done ;;
    probe)   # bench/sum_probe.cu (built here by nvcc into build/sum_probe): sum's fixed cost
             timeout ${PROBE_T:-60} ./build/sum_probe 41 2>&1 | tee "$O/sum_probe.txt" ;;
    ab)      # candidates of one task benched side by side, AB_ROUNDS rounds in turn (AB_TASK,
             # AB_FILES: candidate paths); the median time per shape of each bench
             for r in $(seq 1 ${AB_ROUNDS:-3}); do
                 for f in $AB_FILES; do
                     k=$(basename "$f" .cu)_$r
                     timeout ${AB_T:-60} ./build/kforge bench "tasks/cuda/$AB_TASK" "$f" --json > "$O/ab_$k.json" 2> "$O/ab_$k.err"
                     python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(sys.argv[2], d.get('verdict'), ' '.join('%s=%.2fus' % (list(s['sizes'].values())[0], s['candidate_ns']/1e3) for s in d.get('shapes',[]) if 'candidate_ns' in s))" "$O/ab_$k.json" "$k"
                 done
             done ;;
    errs)    # the largest error of a check, per shape, over ERR_RUNS checks (ERR_TASK, ERR_FILE, ERR_ARGS)
             for r in $(seq 1 ${ERR_RUNS:-5}); do
                 timeout 60 ./build/kforge check "tasks/cuda/$ERR_TASK" "$ERR_FILE" $ERR_ARGS --json > "$O/err_$r.json" 2>/dev/null
                 python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(d.get('verdict'), ' '.join('%s:%g' % ('x'.join(str(v) for v in s['sizes'].values()), s.get('max_abs_err',-1)) for s in d['check']['shapes'] if s.get('kind')=='visible') if 'check' in d else ' '.join('%s:%g' % ('x'.join(str(v) for v in s['sizes'].values()), s.get('max_abs_err',-1)) for s in d.get('shapes',[]) if s.get('kind')=='visible'))" "$O/err_$r.json"
             done ;;
    torch)   TORCH_TIMEOUT=${TORCH_T:-300} bench/gpu.sh torch "$O/t" | tail -60 ;;
    torchcuda) # a CUDA task's PyTorch reference (tasks/cuda/softmax_torch, docs/torch.md) beside
             # its CUDA twin: check and bench of softmax's fast.cu on both, TC_RUNS times in turn,
             # each verdict's wall time and the medians side by side (target: the torch one
             # within 1.5x); then its tests. python3 is KFORGE_PYTHON's, .venv's or PATH's
             # (docs/torch.md "Setting up"), as kforge finds it.
             if [ ! -x build/kforge ] || [ ! -x build/kf-tests ]; then
                 echo "building (make all): $O/tc_build.txt"
                 make all JOBS=${JOBS:-8} > "$O/tc_build.txt" 2>&1 || { tail -5 "$O/tc_build.txt"; continue; }
             fi
             py=${KFORGE_PYTHON:-}; [ -z "$py" ] && [ -x .venv/bin/python3 ] && py=.venv/bin/python3
             py=${py:-python3}
             echo "python3: $(command -v "$py") $("$py" -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1)"
             f=tasks/cuda/softmax/candidates/fast.cu; rm -f "$O/tc_times.txt"
             for r in $(seq 1 ${TC_RUNS:-3}); do
                 for c in check bench; do
                     for t in softmax softmax_torch; do
                         k=${c}_${t}_$r
                         s0=$(date +%s.%N)
                         timeout ${TC_T:-180} ./build/kforge $c "tasks/cuda/$t" "$f" --json > "$O/tc_$k.json" 2> "$O/tc_$k.err"
                         rc=$? e=$(date +%s.%N)
                         echo "$c $t $r $rc $e $s0" >> "$O/tc_times.txt"
                         python3 -c "
import json,sys
c,t,r,rc=sys.argv[2:6]; w=float(sys.argv[6])-float(sys.argv[8])
try: d=json.load(open(sys.argv[1]))
except Exception as e: d={'error':'no JSON: %s' % open(sys.argv[7]).read()[-300:]}
sh=' '.join('%s:%.1f/%.1fus' % ('x'.join(str(v) for v in s['sizes'].values()), s.get('candidate_ns',0)/1e3, s.get('baseline_ns',0)/1e3) for s in d.get('shapes',[]) if 'baseline_ns' in s)
print('%-5s %-13s run %s rc=%s %6.2fs %s speedup=%s %s %s' % (c,t,r,rc,w,d.get('verdict'),d.get('speedup'),sh,(d.get('error') or ' '.join(x.get('code','')+': '+x.get('message','')[:120] for x in d.get('reasons',[])))[:300]))
" "$O/tc_$k.json" "$c" "$t" "$r" "$rc" "$e" "$O/tc_$k.err" "$s0"
                     done
                 done
             done
             python3 -c "
import sys,statistics as st
w={}
for l in open(sys.argv[1]):
    c,t,r,rc,e,s=l.split(); w.setdefault((c,t),[]).append(float(e)-float(s))
for c in ('check','bench'):
    a,b=w.get((c,'softmax'),[0]),w.get((c,'softmax_torch'),[0])
    ma,mb=st.median(a),st.median(b)
    print('%s: CUDA reference %.2fs, PyTorch reference %.2fs (median of %d): %.2fx' % (c,ma,mb,len(b),mb/ma if ma else 0))
" "$O/tc_times.txt"
             timeout ${TC_TEST_T:-500} ./build/kf-tests -j 1 -v xref/softmax_torch_cuda torch/cuda_judges torch/cuda_task \
                 torch/cuda_missing torch/field xref/softmax xref/softmax_torch > "$O/tc_tests.txt" 2>&1
             grep -E "^(pass|FAIL|skip)|FAIL at|skipped:|agree at|baseline .* us|passed," "$O/tc_tests.txt" | cut -c1-300 | head -40 ;;
    hostcheat) # the host-mode cheats of tests/redteam/cuda benched (verdict, speedup, what
             # refused them), on build/ and, with OLD=DIR (a build of an earlier commit), on
             # DIR too; then the left-running spinner without CUPTI (the idle-device wait
             # alone), as written and as a spinner of 20 ns per element (traced to the candidate)
             sed 's/ns_per_elem = 1.4;/ns_per_elem = 20.0;/' tests/redteam/cuda/host_linger_context.cu > "$O/linger_long.cu"
             for b in ${OLD:-} build; do
                 for c in transpose:host_driver_table transpose:host_linger_context sgemm:host_timing_cublas \
                          sum:host_runtime_tells nocupti:host_linger_context nocupti:linger_long; do
                     t=${c%%:*}; f=tests/redteam/cuda/${c#*:}.cu; cup=${KFORGE_LIBCUPTI:-}
                     [ "$t" = nocupti ] && { [ "$b" = build ] || continue; t=transpose; cup=/nonexistent; }
                     [ "${c#*:}" = linger_long ] && f=$O/linger_long.cu
                     k=$(basename "$b")_${c%%:*}_${c#*:}
                     KFORGE_LIBCUPTI=$cup timeout ${HC_T:-90} ./$b/kforge bench "tasks/cuda/$t" "$f" --json > "$O/hc_$k.json" 2> "$O/hc_$k.err"
                     python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(sys.argv[2],d.get('verdict'),'speedup=%s'%d.get('speedup'),[r.get('code','')+': '+r.get('message','')[:160] for r in d.get('reasons',[])],d.get('error','')[:200],[(s.get('speedup'),s.get('discarded_rounds'),s.get('baseline_waited_rounds')) for s in d.get('shapes',[])],d.get('libraries_loaded'))" "$O/hc_$k.json" "$k" 2>&1 | cut -c1-700
                 done
             done ;;
    esac
    echo "=== $s: $(( $(date +%s) - t0 )) s"
done
tar czf "$O.tgz" -C "$(dirname "$O")" "$(basename "$O")" 2>/dev/null
