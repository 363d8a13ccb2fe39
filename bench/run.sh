#!/bin/sh
# make bench: kforge's speed targets on this machine (bench/targets.py), then what the
# run store costs the loop (bench/store_bench.c), then lessons retrieval quality and
# latency (bench/lessons_bench.c), then the report of a 10,000-node run
# (bench/report_bench.c), then false rejections of the honest C kernels over
# repeated checks, alone and under load (bench/honest_repeat.sh).
set -eu
B=${1:-build}
python3 "$(dirname "$0")/targets.py" "$B" --reps 15
"$B/kf-store-bench"
"$B/kf-lessons-bench"
"$B/kf-report-bench" 10000
"$(dirname "$0")/honest_repeat.sh" "$B"
