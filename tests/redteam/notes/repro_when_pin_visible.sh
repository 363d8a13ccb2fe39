#!/bin/sh
# HOLE 2b (not caught, the strongest): a kforge:when that pins exactly the visible shapes,
# on a candidate that writes zeros for every other shape, submitted as `tiling` (not
# `specialisation`), parent 0. Integrity passes (every visible shape the parent timed is
# timed); hidden shapes are drawn inside the domain, i.e. none; edge shapes none: the
# verdict holds the two visible shapes only. KEPT; tree --json: when=null, safe_for "all
# shapes in its domain"; export: "node 1, 6.8x over all shapes (the fallback)" and a
# dispatcher "accepted by the checker" that is wrong for every non-visible shape.
set -e
cd "$(dirname "$0")/../../.."
K=build/kforge; T="--min-runs 5 --max-runs 8 --min-time 0.01"
R=${R:-/tmp/rt-pin}; rm -rf "$R" "$R.out"
$K run tasks/c/softmax --budget 0 --run "$R"
$K submit "$R" --parent 0 --category tiling tests/redteam/notes/cands/sm_when_pin_visible.c $T
sqlite3 "$R/run.db" "select verdict_json from nodes" | python3 -c 'import json,sys; d=json.load(sys.stdin); print([(s["kind"],s["sizes"],s["status"]) for s in d["check"]["shapes"]])'
$K tree "$R" --json | python3 -c 'import json,sys; [print(n["id"],n["state"],n["category"],"when=",n.get("when"),"safe_for=",n.get("safe_for")) for n in json.load(sys.stdin)["nodes"]]'
$K export "$R" -o "$R.out" $T
# The exported dispatcher outside its (comment-only) domain:
sed '/kforge:when/d' "$R.out/softmax_dispatch.c" > /tmp/rt-pin-nowhen.c
$K check tasks/c/softmax /tmp/rt-pin-nowhen.c | head -2 || true        # REJECTED
