#!/usr/bin/env bash
# verdict-diff.sh - do two builds of kforge write the same verdict documents?
#
#   scripts/verdict-diff.sh [--text] OLD_BUILD NEW_BUILD [OUT]
#
# OLD_BUILD and NEW_BUILD are build directories (each with kforge and kforge-worker). For
# every bundled C task's candidates, the honest corpus (tests/honest/*.c) and the first
# red-team file of each threat (tests/redteam/NN_*.c), it runs `kforge check --json` and
# `kforge bench --json` with a fixed seed on both builds, one after the other, and compares
# the documents: the same exit status, the same keys in the same order, the same values
# and types. What depends on the clock or the machine's load is masked, its type kept:
# "seconds", "best_ns", "cached" and "race_calls" (how many extra calls a threaded
# candidate got depends on when its threads were seen running) everywhere, and in a bench's timed records, its
# ceilings and its geomean every number and the win/slower flags. Prints one line per
# difference and a summary; exits 1 when any document differs. A difference runs again
# on both sides (three times at most): one that a loaded machine or a racy candidate
# made goes away; a bench still refused for timing_mismatch on a side is "undecided".
# OUT (default a fresh directory under /tmp) keeps both sides' documents.
#
# --text compares the human summaries instead (the same runs without --json, and `kforge
# validate` of every bundled C task): the same exit status and the same text, every time
# and a timed shape's judgement masked, and every run of digits (figures) masked as #, so
# that the lines and their words must match.
set -u
text=0
[[ ${1:-} == --text ]] && text=1 && shift
old=${1:?usage: verdict-diff.sh [--text] OLD_BUILD NEW_BUILD [OUT]}
new=${2:?usage: verdict-diff.sh [--text] OLD_BUILD NEW_BUILD [OUT]}
out=${3:-$(mktemp -d /tmp/verdict-diff.XXXXXX)}
cd "$(dirname "$0")/.."
mkdir -p "$out"
seed=${KF_DIFF_SEED:-20261202}
bench_opts=(--min-time 0.005 --min-runs 3 --max-runs 5)

cases=()
if [[ $text == 1 ]]; then
    for t in tasks/c/*/; do cases+=("${t%/} -"); done # validate
fi
for t in tasks/c/*/; do
    for c in "$t"candidates/*.c; do cases+=("${t%/} $c"); done
done
task_of() { # the corpus file's task (first line: task=NAME or task=PATH)
    local t
    t=$(head -1 "$1" | sed -n 's/.*task=\([^ ]*\).*/\1/p')
    [[ $t == */* ]] && echo "$t" || echo "tasks/c/$t"
}
for f in tests/honest/*.c; do cases+=("$(task_of "$f") $f"); done
last=""
for f in tests/redteam/[0-9]*.c; do
    n=${f##*/}; n=${n%%_*}
    [[ $n == "$last" ]] && continue
    last=$n
    cases+=("$(task_of "$f") $f")
done

mask=$(cat <<'PY'
import json, sys
from collections import OrderedDict
def typ(v):
    return "<bool>" if isinstance(v, bool) else "<int>" if isinstance(v, int) else \
           "<real>" if isinstance(v, float) else v
def deep(v):  # every number and flag, its type kept
    if isinstance(v, dict): return OrderedDict((k, deep(x)) for k, x in v.items())
    if isinstance(v, list): return [deep(x) for x in v]
    return typ(v) if isinstance(v, (int, float)) else v
def walk(v):
    if isinstance(v, dict):
        return OrderedDict((k, typ(x) if k in ("seconds", "best_ns", "cached", "race_calls") else walk(x))
                           for k, x in v.items())
    if isinstance(v, list): return [walk(x) for x in v]
    return v
for line in sys.stdin:
    line = line.strip()
    if not line: continue
    try: d = json.loads(line, object_pairs_hook=OrderedDict)
    except ValueError: print("NOT JSON: " + line); continue
    d = walk(d)
    if isinstance(d, dict) and "check" in d:
        d["shapes"] = deep(d.get("shapes"))
        for k in ("speedup", "wins", "ceilings"):
            if k in d: d[k] = deep(d[k])
        for r in d.get("reasons", []):  # a timing mismatch quotes its figures
            if r.get("code") == "timing_mismatch": r["message"] = "<masked>"
    print(json.dumps(d))
PY
)

ndiff=0 nundecided=0 n=0
json=(--json)
# text: a time with its unit and a timed shape's judgement (win, slower, within noise, not
# fair) vary from run to run as the JSON's timed numbers and flags do; then every number
[[ $text == 1 ]] && json=() && mask='import re, sys
for line in sys.stdin:
    line = re.sub(r"[0-9.]+ (ns|us|ms|s)\b", "<time>", line)
    line = re.sub(r" \((win|slower|within noise|NOT a fair comparison)\)", " (<timing>)", line)
    sys.stdout.write(re.sub(r"[0-9]+", "#", line))'
for c in "${cases[@]}"; do
    task=${c%% *} cand=${c#* }
    [[ -f $task/task.json ]] || continue
    cmds="check bench"
    [[ $cand == - ]] && cmds=validate
    for cmd in $cmds; do
        extra=()
        [[ $cmd == bench ]] && extra=("${bench_opts[@]}")
        args=("$task" "$cand")
        [[ $cmd == validate ]] && args=("$task")
        name=$(echo "$cmd-$task-$cand" | tr '/' '_')
        # A difference of the builds shows every time; one of the machine's (a timing a
        # loaded machine disturbed: timing_mismatch; a candidate's own race) does not.
        # A difference runs again on both sides, in the other order, three times at most.
        for try in 1 2 3; do
            sides="old new"
            [[ $try == 2 ]] && sides="new old"
            for side in $sides; do
                b=$old
                [[ $side == new ]] && b=$new
                "$b/kforge" "$cmd" "${args[@]}" "${json[@]}" --seed "$seed" "${extra[@]}" \
                    >"$out/$name.$side.json" 2>"$out/$name.$side.err"
                echo "exit $?" >>"$out/$name.$side.json"
                grep -v '^exit ' "$out/$name.$side.json" | python3 -c "$mask" >"$out/$name.$side.masked"
                grep '^exit ' "$out/$name.$side.json" >>"$out/$name.$side.masked"
            done
            cmp -s "$out/$name.old.masked" "$out/$name.new.masked" && break
        done
        n=$((n + 1))
        if cmp -s "$out/$name.old.masked" "$out/$name.new.masked"; then
            :
        elif grep -Eq '"timing_mismatch"|^  timing_mismatch:' "$out/$name.old.masked" "$out/$name.new.masked"; then
            nundecided=$((nundecided + 1))
            echo "UNDECIDED (timing_mismatch on a side, three times): kforge $cmd $task $cand ($out/$name.{old,new}.masked)"
        else
            ndiff=$((ndiff + 1))
            echo "DIFFERS: kforge $cmd $task $cand ($out/$name.{old,new}.masked)"
        fi
    done
done
echo "verdict-diff: $n documents compared, $ndiff differ, $nundecided undecided ($out)"
[[ $ndiff -eq 0 ]]
