#!/usr/bin/env bash
# S5: what tree/best show that the seal does not cover (no WARNING in any case):
#  a) runs.task_dir: the run claims another task (tree's header; best/tree never check
#     the fingerprint against task_dir). export is caught (fingerprint mismatch).
#  b) state 'built'/'proposed' rows are never verified: a finished node set to 'built'
#     with speedup/shapes raised to ~50x is listed by tree with the fake figures.
#  c) nodes.note is free text shown by tree: a fake "critic: approve" line.
#  d) events are not sealed: a Critic "reject" rewritten to approve disappears from tree.
#  e) deleting rows: a rejected/tampered node (and its events) vanishes without trace,
#     e.g. to hide a failed forgery's "WARNING" or a wrong_result the Critic caught.
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
KF=${KF:-$ROOT/build/kforge}; TASK=${TASK:-$ROOT/tasks/c/sum}
export KFORGE_KEYS=/tmp/rt-seal-keys; mkdir -p "$KFORGE_KEYS"
B=/tmp/rt-seal/s5base; rm -rf "$B"; mkdir -p /tmp/rt-seal
"$KF" run "$TASK" --budget 4 --seed 3 --run "$B" --min-runs 6 --max-runs 8 --min-time 0.01 --hidden 1 >/dev/null 2>&1
echo "=== base"; "$KF" tree "$B"
t() { local name=$1 sql=$2; local R=/tmp/rt-seal/s5$name; rm -rf "$R"; cp -r "$B" "$R"; sqlite3 "$R/run.db" "$sql"
  echo "=== $name: $sql"; "$KF" tree "$R" 2>&1 | sed 's/^/  tree: /'; "$KF" best "$R" 2>&1 | sed 's/^/  best: /'
  echo "  integrity: $("$KF" best "$R" --json 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["integrity"])')"; }
t a "update runs set task_dir='$(dirname "$TASK")/softmax'"
echo "  export: $("$KF" export /tmp/rt-seal/s5a -o /tmp/rt-seal/s5a-ex --min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1 2>&1 | tail -1)"
t b "update nodes set state='built', speedup=50, shapes_json=(select json_group_array(json_set(value,'\$.speedup',50.0,'\$.win',json('true'))) from json_each(shapes_json)) where id=(select max(id) from nodes)"
t c "update nodes set note='critic: approve: re-timed against its parent in fresh workers, 2 times: a win each time' where id=(select max(id) from nodes)"
t d "update events set json=json_set(json,'\$.decision','approve') where kind='critic'"
# e: a failed forgery (WARNING) ... then the row is deleted: clean again
R=/tmp/rt-seal/s5e; rm -rf "$R"; cp -r "$B" "$R"
sqlite3 "$R/run.db" "update nodes set state='kept', speedup=50 where id=(select max(id) from nodes)"
echo "=== e: forged row"; "$KF" best "$R" 2>&1 | sed 's/^/  best: /'
sqlite3 "$R/run.db" "pragma foreign_keys=on; delete from events where node=(select max(id) from nodes); delete from constraints where node=(select max(id) from nodes); delete from nodes where id=(select max(id) from nodes)"
echo "=== e: ... deleted"; "$KF" tree "$R" 2>&1 | sed 's/^/  tree: /'; "$KF" best "$R" 2>&1 | sed 's/^/  best: /'
