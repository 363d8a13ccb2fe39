#!/bin/sh
# bench/honest_repeat.sh [BUILD] [REPS]: false rejections of honest kernels.
# HONEST=tests/honest/cuda EXT=cu LOAD=tasks/cuda/sum:fast.cu runs the CUDA corpus the
# same way (on a machine with a GPU), with a GPU bench as the load.
#
# Checks every C case in tests/honest/ REPS times (default 20) alone, then REPS times
# again under the load `kforge run --jobs 2` creates (another evaluation checking and
# timing beside it: a background loop of `kforge bench` of tasks/c/sum's fast.c), and
# prints accepted/total per case and condition, then the false-rejection count. An
# honest case rejected even once is a defect (docs/checker.md). Reasons of rejections
# are listed under the table (an error verdict's message when there are none). COND=alone
# or COND=loaded runs one condition only (to split the repeats over two calls with a
# time limit). Exit 1 when any rejection was seen, 2 on a usage error.
set -u
B=${1:-build}
REPS=${2:-20}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K="$B/kforge"
[ -x "$K" ] || { echo "honest_repeat: no $K (build first)" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kf-honest-XXXXXX")
LOADPID=
cleanup() {
    [ -n "$LOADPID" ] && kill "$LOADPID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

task_of() { # the task of a corpus file: tasks/c/NAME or a path from the root
    t=$(head -1 "$1" | sed -n 's/.*task=\([^ ]*\).*/\1/p')
    case "$t" in */*) echo "$ROOT/$t" ;; *) echo "$ROOT/tasks/c/$t" ;; esac
}

# one condition: REPS checks of each case; lines "case ok total" into $TMP/$1
run_all() {
    : > "$TMP/$1"
    for f in "$ROOT"/${HONEST:-tests/honest}/*.${EXT:-c}; do
        t=$(task_of "$f")
        ok=0
        i=0
        while [ "$i" -lt "$REPS" ]; do
            i=$((i + 1))
            if "$K" check "$t" "$f" --json > "$TMP/out.json" 2> "$TMP/err.txt"; then
                ok=$((ok + 1))
            else
                python3 - "$TMP/out.json" "$(basename "$f")" "$1" >> "$TMP/why" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    r = "; ".join("%s: %s" % (x["code"], x["message"][:160]) for x in d.get("reasons", []))
    if not r:
        r = "%s: %s" % (d.get("verdict"), str(d.get("error", ""))[:160])
except Exception as e:
    r = "no verdict (%s)" % e
print("%s [%s] %s" % (sys.argv[2], sys.argv[3], r))
PY
            fi
        done
        echo "$(basename "$f") $ok $REPS" >> "$TMP/$1"
    done
}

COND=${COND:-both}
case "$COND" in both | alone | loaded) ;; *) echo "honest_repeat: COND is both, alone or loaded" >&2; exit 2 ;; esac
: > "$TMP/alone"
: > "$TMP/loaded"
[ "$COND" = loaded ] || run_all alone
# the load: another evaluation checking and timing beside these checks, in a loop
LT=${LOAD:-tasks/c/sum:fast.c}
if [ "$COND" != alone ]; then
    ( while :; do "$K" bench "$ROOT/${LT%%:*}" "$ROOT/${LT%%:*}/candidates/${LT#*:}" > /dev/null 2>&1; done ) &
    LOADPID=$!
    run_all loaded
    kill "$LOADPID" 2>/dev/null
    wait "$LOADPID" 2>/dev/null
    LOADPID=
fi

if [ "$COND" = both ]; then
    printf '%-36s %8s %8s\n' "honest case (${EXT:-c})" alone "--jobs 2"
    join "$TMP/alone" "$TMP/loaded" | while read -r name a at l lt; do
        printf '%-36s %8s %8s\n' "$name" "$a/$at" "$l/$lt"
    done
else
    printf '%-36s %8s\n' "honest case (${EXT:-c})" "$([ "$COND" = alone ] && echo alone || echo "--jobs 2")"
    cat "$TMP/alone" "$TMP/loaded" | while read -r name a at; do printf '%-36s %8s\n' "$name" "$a/$at"; done
fi
bad=$(cat "$TMP/alone" "$TMP/loaded" | awk '{r += $3 - $2} END {print r + 0}')
total=$(cat "$TMP/alone" "$TMP/loaded" | awk '{t += $3} END {print t + 0}')
echo "false rejections: $bad of $total checks"
[ -s "$TMP/why" ] && sed 's/^/  /' "$TMP/why"
[ "$bad" -eq 0 ]
