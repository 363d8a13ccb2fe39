#!/bin/sh
# HOLE 1 (not caught): laundering a domain-narrowing candidate through a specialisation parent.
# The Critic's integrity check rejects a non-specialisation node whose kforge:when skips a
# visible shape its PARENT timed. Make the parent a (slow, merely reverted) specialisation that
# already skips the shape; its child, submitted as `tiling`, then passes integrity and is KEPT
# as a general node: tree shows no domain (`when: null`, safe_for "all shapes in its domain"),
# and `run --resume` counts its one-shape geomean as the run's best (8.4x).
set -e
cd "$(dirname "$0")/../../.."
K=build/kforge; T="--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1"
R=${R:-/tmp/rt-launder}; rm -rf "$R"
$K run tasks/c/softmax --budget 0 --run "$R"
$K submit "$R" --parent 0 --category specialisation tests/redteam/notes/cands/sm_ref_when.c $T   # #1 reverted (ref + when cols != 777)
$K submit "$R" --parent 1 --category tiling tests/redteam/notes/cands/sm_when_visible.c $T        # #2 KEPT, tiling
$K tree "$R"
$K tree "$R" --json | python3 -c 'import json,sys; [print(n["id"],n["state"],n["category"],"when=",n.get("when"),"safe_for=",n.get("safe_for")) for n in json.load(sys.stdin)["nodes"]]'
$K run --resume "$R" --budget 2 $T      # "best 8.4x geomean (node 2)": a one-shape figure
# Direct control (same file, parent 0, tiling): reverted, "critic: reject: task integrity".
