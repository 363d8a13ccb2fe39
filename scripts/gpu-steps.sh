#!/bin/sh
# scripts/gpu-steps.sh STEPS OUTDIR - run the named GPU steps on a GPU host, in order, each
# under its own time limit (devinfo profile verdict tests bench loop calls probe ab errs
# torch torchcuda hostcheat system), all output under OUTDIR and packed into OUTDIR.tgz.
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
    system)  # the CUDA decode step (docs/system.md "The CUDA decode step"): each stage task's
             # fast candidate and reference checked, the planted wrong ones, the pipeline with
             # every slot's fast candidate, its staging cost (1 step against 3), and the linear
             # slot benched in the step at batch 1 and 8; reports under OUTDIR/sys_*.json
             P=pipelines/cuda/decode/pipeline.json; SUM="python3 scripts/system-summary.py"
             for t in ${SYS_TASKS:-linear rope attn_decode add silu_mul rmsnorm_bf16}; do
                 for c in candidates/fast.cu reference.cu; do
                     k=${t}_$(basename $c .cu)
                     timeout ${SYS_CHECK_T:-180} ./build/kforge check "tasks/cuda/$t" "tasks/cuda/$t/$c" --json > "$O/sys_$k.json" 2> "$O/sys_$k.err"
                     $SUM check "$O/sys_$k.json" "check $t/$c"
                 done
             done
             for w in linear:linear_no_bias attn_decode:attn_decode_drop_last; do
                 timeout ${SYS_CHECK_T:-180} ./build/kforge check "tasks/cuda/${w%%:*}" "tests/redteam/cuda/${w#*:}.cu" --json > "$O/sys_${w#*:}.json" 2> "$O/sys_${w#*:}.err"
                 $SUM check "$O/sys_${w#*:}.json" "check ${w#*:} (must be rejected)"
             done
             SL=""; for t in linear rope attn_decode add silu_mul rmsnorm_bf16; do SL="$SL --slot $t=tasks/cuda/$t/candidates/fast.cu"; done
             for b in 1 8; do
                 timeout ${SYS_PIPE_T:-400} ./build/kforge system check $P $SL --knob batch=$b --json > "$O/sys_check_b$b.json" 2> "$O/sys_check_b$b.err"
                 $SUM syscheck "$O/sys_check_b$b.json" "system check batch=$b, every slot fast"
             done
             timeout ${SYS_PIPE_T:-400} ./build/kforge system check $P --slot linear=tests/redteam/cuda/linear_no_bias.cu --no-task-check --json > "$O/sys_check_nobias.json" 2> "$O/sys_check_nobias.err"
             $SUM syscheck "$O/sys_check_nobias.json" "system check linear_no_bias --no-task-check (must be rejected)"
             for ns in 1 3; do
                 timeout ${SYS_PIPE_T:-400} ./build/kforge system check $P --slot linear=tasks/cuda/linear/candidates/fast.cu --no-task-check --steps $ns --json > "$O/sys_stage_s$ns.json" 2> "$O/sys_stage_s$ns.err"
                 $SUM syscheck "$O/sys_stage_s$ns.json" "staging cost: system check --no-task-check --steps $ns"
             done
             for b in 1 8; do
                 timeout ${SYS_BENCH_T:-500} ./build/kforge system bench $P --slot linear=tasks/cuda/linear/candidates/fast.cu --knob batch=$b --local --min-time ${SYS_MIN_TIME:-2} --json > "$O/sys_bench_b$b.json" 2> "$O/sys_bench_b$b.err"
                 $SUM sysbench "$O/sys_bench_b$b.json" "system bench linear batch=$b"
             done
             timeout ${SYS_TESTS_T:-600} ./build/kf-tests -j 4 system/cuda_decode validate/cuda/linear validate/cuda/rope validate/cuda/attn_decode \
                 validate/cuda/add validate/cuda/silu_mul validate/cuda/rmsnorm_bf16 bundled/cuda/linear bundled/cuda/rope bundled/cuda/attn_decode \
                 bundled/cuda/add bundled/cuda/silu_mul bundled/cuda/rmsnorm_bf16 redteam/cuda/linear_no_bias redteam/cuda/attn_decode_drop_last \
                 xref/linear xref/rope xref/attn_decode xref/add xref/silu_mul > "$O/sys_tests.txt" 2>&1
             grep -E "^(FAIL|skip)|FAIL at|skipped:" "$O/sys_tests.txt" | cut -c1-300 | head -30; tail -1 "$O/sys_tests.txt"
             grep -h "error" "$O"/sys_*.err 2>/dev/null | sort | uniq -c | cut -c1-300 | head -20 ;;
    esac
    echo "=== $s: $(( $(date +%s) - t0 )) s"
done
tar czf "$O.tgz" -C "$(dirname "$O")" "$(basename "$O")" 2>/dev/null
