#!/bin/sh
# HOLE 3 (not caught): `kforge submit` ignores the Critic settings and the advisory reviewer
# recorded in the run's config. An operator creates a run with a strict Critic
# (--critic max_speedup=2, --critic-agent ...); `run --resume` honours them (control below:
# the builtin's 6x node is rejected "impossible ... limit 2x"), but a tool-mode agent that
# simply omits --critic / --critic-agent on `submit` is judged with the defaults (7x kept,
# reviewer never called). Conversely `submit --critic suspicious_gain=1000 --critic retimes=1`
# lets the submitter weaken its own judge (submit accepts --critic; docs/cli.md does not list it).
set -e
cd "$(dirname "$0")/../../.."
K=build/kforge; T="--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1"
R=${R:-/tmp/rt-subcrit}; rm -rf "$R" "$R.ctl"; rm -f /tmp/rt-subcrit.review.log
$K run tasks/c/softmax --budget 0 --run "$R" --critic max_speedup=2 --critic retimes=4 \
   --critic-agent "cmd:REVIEW_LOG=/tmp/rt-subcrit.review.log $PWD/tests/redteam/notes/reviewer.sh"
sqlite3 "$R/run.db" 'select config_json from runs'
$K submit "$R" --parent 0 --category vectorisation tests/redteam/notes/cands/sm_fast.c $T   # KEPT at ~7x
sqlite3 "$R/run.db" "select json from events where kind='critic'"                  # 2 re-timings, "under 100x", no advisory
ls /tmp/rt-subcrit.review.log 2>/dev/null || echo "reviewer was never called"
# control: the same recorded settings through run --resume
$K run tasks/c/softmax --budget 0 --run "$R.ctl" --critic max_speedup=2 >/dev/null
$K run --resume "$R.ctl" --budget 1 $T; $K tree "$R.ctl"                              # reverted: "impossible ... limit 2x"
