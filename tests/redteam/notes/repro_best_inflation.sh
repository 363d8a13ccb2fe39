#!/bin/sh
# HOLE 11 (not caught): `best` takes the first bench's figure, which the submitter makes
# noisy (submit accepts --min-runs/--max-runs/--min-time), and the same text can be submitted
# again and again: the maximum of many noisy measurements becomes the reported winner.
# The Critic's re-timings only require "a win each time" and are not what is recorded.
# Not deterministic: the 15x outliers came 2 times in ~25 short benches (runs /tmp/rt-retry
# node 3, and a 5-round try), the plain max-of-8 effect is smaller (7.39x vs ~6.9x median).
# Seen: identical fast.c, 8 submissions: recorded 6.6x..15.1x at rows=256,cols=1024, while
# the Critic's re-timings of the 15.1x node said 6.46x and 6.84x; `best` reports 15.073x.
cd "$(dirname "$0")/../../.."
K=build/kforge; T="--min-runs 6 --max-runs 6 --min-time 0.001 --hidden 1"
R=${R:-/tmp/rt-inflate}; rm -rf "$R"
$K run tasks/c/softmax --budget 0 --run "$R"
for i in 1 2 3 4 5 6 7 8; do
  $K submit "$R" --parent 0 --category vectorisation tests/redteam/notes/cands/sm_fast.c $T | cut -c1-100
done
$K best "$R"
sqlite3 "$R/run.db" "select node, json from events where kind='critic'" | grep -o 're-timing [12]: [0-9.]*x' | sort | uniq -c | sort -rn | head
