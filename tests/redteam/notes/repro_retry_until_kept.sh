#!/bin/sh
# HOLE 10 (not caught): retry until lucky. A text that already FAILED (wrong_result) is
# evaluated again on every submit (agents.md says repeats of a failed text are `pruned`),
# so a kernel that is wrong on a fraction of shapes is resubmitted until a draw misses its
# bad shapes; earlier and later identical texts stay `kept` next to the proof that they are
# wrong (same src_hash, one node rejected with wrong_result). `best` reports them.
# Seen: 9 submissions of cands/sm_edge_blind.c -> 7 kept, 2 rejected (same src_hash).
cd "$(dirname "$0")/../../.."
K=build/kforge; T="--min-runs 5 --max-runs 8 --min-time 0.01"   # default hidden count (4)
R=${R:-/tmp/rt-retry}; rm -rf "$R"
$K run tasks/c/softmax --budget 0 --run "$R"
for i in 1 2 3 4 5 6 7 8; do
  $K submit "$R" --parent 0 --category vectorisation tests/redteam/notes/cands/sm_edge_blind.c $T | cut -c1-90
done
sqlite3 "$R/run.db" "select id, state, reasons, substr(src_hash,1,12) from nodes"
$K best "$R"
