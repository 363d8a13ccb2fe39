#!/bin/sh
# HOLE 2 (not caught): a kforge:when that keeps every visible shape but drops task-legal
# hidden/edge shapes (rows=1, cols<64), on a candidate that is WRONG there (zeros), submitted
# as `vectorisation`: KEPT. tree/tree --json show `when: null`, safe_for "all shapes in its
# domain"; best lists it; export says "node 2, 7x over all shapes (the fallback)" and the
# dispatcher inherits the narrowed domain (only visible in a comment of the file).
set -e
cd "$(dirname "$0")/../../.."
K=build/kforge; T="--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1"
R=${R:-/tmp/rt-whendodge}; rm -rf "$R" "$R.out"
$K run tasks/c/softmax --budget 0 --run "$R"
$K submit "$R" --parent 0 --category vectorisation tests/redteam/notes/cands/sm_when_dodge.c $T
$K tree "$R"; $K tree "$R" --json | python3 -c 'import json,sys; [print(n["id"],n["state"],"when=",n.get("when"),"safe_for=",n.get("safe_for")) for n in json.load(sys.stdin)["nodes"]]'
$K best "$R"
$K export "$R" -o "$R.out" $T
# The same file is rejected by a plain check without its when (hidden/edge shapes with cols < 64).
