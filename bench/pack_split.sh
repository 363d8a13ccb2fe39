#!/bin/sh
# The memory share of the prompt tokens over a run with a scripted cmd agent (BENCHMARKS.md,
# "Lessons and context packs"). The lessons database is the labelled retrieval set
# (bench/data/lessons: 214 lessons, 19 of them in scope for a C softmax); the task is
# tasks/c/softmax; the agent cycles through the bundled faster candidate and three
# red-team candidates that fail (a fast exp, every other row, an input assumption),
# each text made unique by a comment as a model's attempts would be, and reports no
# usage, so every count is kforge's estimate (bytes / 4).
#   sh bench/pack_split.sh [BUILD] [PACK_TOKENS] [EVALUATIONS]
set -eu
B=${1:-build}
PT=${2:-18000}
N=${3:-16}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$B/kforge" lessons import "$ROOT/bench/data/lessons/lessons.jsonl" --lessons "$W/lessons.db" >/dev/null
mkdir "$W/n"
cat > "$W/agent.sh" <<AGENT
n=\$(ls "$W/n" | wc -l); touch "$W/n/\$n"
case \$((n % 4)) in
0) c=$ROOT/tasks/c/softmax/candidates/fast.c ;;
1) c=$ROOT/tests/redteam/11_softmax_fast_exp.c ;;
2) c=$ROOT/tests/redteam/12_softmax_every_other_row.c ;;
*) c=$ROOT/tests/redteam/14_softmax_assume_normal.c ;;
esac
{ cat "\$c"; echo "/* attempt \$n */"; } > "\$KFORGE_OUT"
AGENT
"$B/kforge" run "$ROOT/tasks/c/softmax" --agent "cmd:sh $W/agent.sh" --budget "$N" --seed 1 \
    --lessons "$W/lessons.db" --pack-tokens "$PT" --run "$W/run" \
    --min-runs 5 --max-runs 10 --min-time 0.02 --hidden 2 --json 2>"$W/err" |
    python3 -c '
import json, sys
s = json.load(sys.stdin)
p = s["pack_tokens"]
print("packs %d, prompt tokens %d (%s)" % (p["packs"], p["prompt_tokens"],
      "reported" if p["reported"] == p["packs"] else "estimated"))
for k, v in p["sections"].items():
    print("  %-12s %7d  %5.1f%%" % (k, v, 100.0 * v / p["prompt_tokens"]))
print("  %-12s %7d  %5.1f%%" % ("frame", p["frame"], 100.0 * p["frame"] / p["prompt_tokens"]))
print("memory share (lessons + failures + constraints): %.1f%%, lessons alone %.1f%%" %
      (100 * p["memory_share"], 100 * p["lessons_share"]))
print("evaluations %d, kept %d, breaker trips %d" % (s["evaluations"], s["kept"], s["breaker_trips"]))'
tail -1 "$W/err"
"$B/kforge" tree "$W/run" | grep -E "why:|^  [a-z].*from node|circuit" | head -12
