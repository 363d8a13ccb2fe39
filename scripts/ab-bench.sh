#!/bin/sh
# scripts/ab-bench.sh OUTDIR: two builds' `kforge bench -v` of TASKS' fast.cu on a GPU host, in turn
# (build-base, then build), N rounds; the whole time and the phase lines of each.
O=$1
N=${N:-2}
for i in $(seq 1 $N); do
  for t in ${TASKS:-sum softmax}; do
    for b in build-base build; do
      s=$(date +%s.%N)
      ./$b/kforge bench tasks/cuda/$t tasks/cuda/$t/candidates/fast.cu -v --json > $O/${b}_${t}_$i.json 2> $O/${b}_${t}_$i.err
      rc=$?
      e=$(python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),2))" $s)
      echo "$b $t run$i rc=$rc ${e}s"
      grep -E "a round|staging a|phase done|fresh workers|timed " $O/${b}_${t}_$i.err | cut -c1-260
    done
  done
done
