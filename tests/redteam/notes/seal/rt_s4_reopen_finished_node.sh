#!/usr/bin/env bash
# S4: seals cover finished rows only, and "finished" is read from the row's own state.
# Setting a REJECTED node back to 'proposed' (seal NULL) makes it an unfinished node:
# nothing is verified, and `run --resume` evaluates it AGAIN (fresh hidden shapes) and
# seals the new outcome under the same id. Events are not sealed, so the old Critic /
# submit records can go too. This reopens H10 (retry until lucky: a text already judged
# is supposed to be pruned, never evaluated again) with no trace in tree/best/export.
# The candidate is fast.c made WRONG whenever n % 16 == 2 (no visible or edge shape of
# sum has that; a random hidden shape does 1 time in 16; the Critic re-checks too).
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
KF=${KF:-$ROOT/build/kforge}; TASK=${TASK:-$ROOT/tasks/c/sum}
export KFORGE_KEYS=/tmp/rt-seal-keys; mkdir -p "$KFORGE_KEYS"
R=/tmp/rt-seal/s4; rm -rf "$R"; mkdir -p /tmp/rt-seal
C=/tmp/rt-seal/s4_wrong_mod4.c
sed 's|    out\[0\] = s + t;|    out[0] = s + t;\n    if (n % 16 == 2) out[0] = 0.0f; /* wrong */|' "$TASK/candidates/fast.c" > "$C"
T="--min-runs 6 --max-runs 8 --min-time 0.01"
"$KF" run "$TASK" --budget 0 --run "$R" >/dev/null 2>&1          # default hidden count (4)
for i in $(seq 1 30); do   # get it REJECTED once (about 1 submission in 4)
  "$KF" submit "$R" --parent 0 --category vectorisation "$C" $T >/dev/null 2>&1
  [ "$(sqlite3 "$R/run.db" "select state from nodes order by id desc limit 1")" = rejected ] && break
  sqlite3 "$R/run.db" "delete from events where node=(select max(id) from nodes); delete from nodes where id=(select max(id) from nodes)"
done
N=$(sqlite3 "$R/run.db" "select max(id) from nodes")
echo "--- before: node $N $(sqlite3 "$R/run.db" "select state||' '||reasons from nodes where id=$N")"; "$KF" tree "$R" 2>&1
for try in $(seq 1 30); do
  sqlite3 "$R/run.db" "delete from events where node=$N; delete from constraints where node=$N;
    update nodes set state='proposed', reasons=NULL, verdict_json=NULL, shapes_json=NULL, speedup=0, finished=NULL, seal=NULL where id=$N"
  "$KF" run --resume "$R" --budget 1 $T >/dev/null 2>&1
  S=$(sqlite3 "$R/run.db" "select state from nodes where id=$N"); echo "reopen $try: node $N $S"
  [ "$S" = kept ] && break
done
echo "--- after"; "$KF" tree "$R" 2>&1; "$KF" best "$R" 2>&1
echo "--- integrity"; "$KF" best "$R" --json 2>&1 | grep -A5 '"integrity"'
echo "--- the kept source is wrong:"; grep -n "wrong" "$R"/src/*.c
