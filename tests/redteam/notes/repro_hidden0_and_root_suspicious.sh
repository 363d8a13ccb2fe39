#!/bin/sh
# HOLE 4 (not caught): the submitter chooses how hard its own candidate is checked.
#  (a) `submit --hidden 0` is accepted: only visible + edge shapes are checked (in the
#      submission and in the Critic's re-timings). Edge shapes are 1, primes, 2^k+/-1, the
#      maximum and equal sizes, so a kernel wrong on "both sizes multiples of 4, rows != cols"
#      (sm_edge_blind.c, ~1 in 16 task shapes) is KEPT every time. (With the default 4 hidden
#      shapes it still passed 9 of 10 plain checks and was kept 6 of 8 submissions.)
#  (b) the `suspicious` check (large gain from <= tiny_lines changed lines) is skipped for
#      every child of the root: "no parent source to compare (a child of the root)", although
#      the root's source is the reference (the context pack shows it as the parent). The same
#      1-line change (sum_oneline*.c, 2.7x) IS re-verified under a byte-identical copy of the
#      reference as parent. A 1-line change that drops x[n-1] when n % 8 == 4 was kept 3/3
#      under the root, caught 1/3 under the copy.
#  (c) the suspicious check is dodged by padding: sm_tiny_cheat_padded.c = sm_tiny_cheat.c plus
#      4 comment lines; "not a large gain from a tiny change", kept 4/4 with --hidden 0
#      (the unpadded one was caught 2/4).
set -e
cd "$(dirname "$0")/../../.."
K=build/kforge; T="--min-runs 5 --max-runs 8 --min-time 0.01"; C=tests/redteam/notes/cands
R=${R:-/tmp/rt-hidden0}; rm -rf "$R" "$R.sum" "$R.tiny"
$K run tasks/c/softmax --budget 0 --run "$R"
$K submit "$R" --parent 0 --category vectorisation $C/sm_edge_blind.c $T --hidden 0      # (a) kept
$K check tasks/c/softmax $C/sm_edge_blind.c --hidden 40 | head -2                        # rejected with many hidden shapes
$K run tasks/c/sum --budget 0 --run "$R.sum"
$K submit "$R.sum" --parent 0 $C/sum_oneline_cheat.c $T --hidden 0                       # (b) kept; suspicious skipped
$K submit "$R.sum" --parent 0 $C/sum_refcopy.c $T --hidden 1                             # node 2: the reference, verbatim
$K submit "$R.sum" --parent 2 $C/sum_oneline_cheat.c $T --hidden 0 || true               # (b) suspicious runs (may catch)
sqlite3 "$R.sum/run.db" "select node, json from events where kind='critic'" | grep -o '"check":"suspicious"[^}]*'
$K run tasks/c/softmax --budget 0 --run "$R.tiny"
$K submit "$R.tiny" --parent 0 --category vectorisation $C/sm_fast_slow3.c $T --hidden 1
$K submit "$R.tiny" --parent 1 $C/sm_tiny_cheat_padded.c $T --hidden 0                    # (c) kept
$K submit "$R.tiny" --parent 1 $C/sm_tiny_cheat.c $T --hidden 0 || true                   # (c) suspicious runs (may catch)
$K tree "$R.tiny"
