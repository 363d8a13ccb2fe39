#!/bin/sh
# bench/scale.sh - scale-out's figures (BENCHMARKS.md "Scale-out", docs/scale.md):
#   1. evaluations per minute of kforge run on a bundled C task with a big parameter
#      space (linear) with 1 and 2 local workers, and the A/A of two timings at once;
#   2. the coordinator's cost per evaluation and the pool's per request with 64
#      simulated workers replaying a recorded verdict (kf-scale-bench);
#   3. with Slurm (tests/slurm/cluster.sh, as root): the time from kforge run to the
#      first verdict, and 2 Slurm workers against 2 local ones.
# Usage: sh bench/scale.sh [BUILD] [BUDGET]   (default build, 12)
set -u
B=${1:-build}
N=${2:-12}
K=$B/kforge
T=tasks/c/linear
Q="--min-time 0.05 --min-runs 6"
tmp=$(mktemp -d)
export KFORGE_KEYS=$tmp/keys
trap 'sh tests/slurm/cluster.sh stop $tmp/cluster > /dev/null 2>&1; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
field() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

echo "## evaluations per minute, $T, budget $N ($(nproc) CPUs)"
for rep in 1 2; do
    for w in 1 2; do
        s=$(date +%s.%N)
        $K run $T --run $tmp/r$w-$rep --budget "$N" --workers $w $Q --seed 1 --json > $tmp/o.json 2> /dev/null
        e=$(date +%s.%N)
        ev=$(field $tmp/o.json "d['evaluations']")
        echo "workers $w rep $rep: $ev evaluations in $(echo "$e - $s" | bc) s: $(echo "scale=2; $ev * 60 / ($e - $s)" | bc) per minute"
    done
done

echo "## A/A: the reference against itself, two timings at once, 3 pairs"
for rep in 1 2 3; do
    $K bench $T $T/reference.c $Q --json > $tmp/a1.json 2> /dev/null &
    $K bench $T $T/reference.c $Q --json > $tmp/a2.json 2> /dev/null
    wait
    echo "pair $rep: $(field $tmp/a1.json "d.get('speedup')") $(field $tmp/a2.json "d.get('speedup')")"
done

echo "## the coordinator with 64 simulated workers (replayed verdicts)"
$K bench $T $T/candidates/fast.c $Q --json > $tmp/verdict.json 2> /dev/null
for rep in 1 2 3; do $B/kf-scale-bench $K $T $tmp/verdict.json 64 99; done
for rep in 1 2 3; do $B/kf-scale-bench --pool $tmp/verdict.json 64 10000 2> /dev/null; done

echo "## Slurm"
if ! out=$(sh tests/slurm/cluster.sh start $tmp/cluster 3 18817 2>&1); then
    echo "skipped: $out"
    exit 0
fi
export SLURM_CONF=$tmp/cluster/slurm.conf
for rep in 1 2; do
    for l in slurm local; do
        s=$(date +%s.%N)
        if [ $l = slurm ]; then
            $K run $T --run $tmp/s$l-$rep --budget "$N" --launcher slurm --workers 2 --partition cpu $Q --seed 1 \
                --json > $tmp/o.json 2> /dev/null
        else
            $K run $T --run $tmp/s$l-$rep --budget "$N" --workers 2 $Q --seed 1 --json > $tmp/o.json 2> /dev/null
        fi
        e=$(date +%s.%N)
        ev=$(field $tmp/o.json "d['evaluations']")
        fv=$(field $tmp/o.json "d['scale']['first_verdict_s']")
        echo "$l 2 workers rep $rep: $ev evaluations in $(echo "$e - $s" | bc) s ($(echo "scale=2; $ev * 60 / ($e - $s)" | bc) per minute); first verdict $fv s after the pool started"
    done
done
