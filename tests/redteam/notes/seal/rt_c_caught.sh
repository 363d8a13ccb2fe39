#!/usr/bin/env bash
# C: edits the seals catch (or make visible). Each case starts from a copy of one run.
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
KF=${KF:-$ROOT/build/kforge}; TASK=${TASK:-$ROOT/tasks/c/sum}
export KFORGE_KEYS=/tmp/rt-seal-keys; mkdir -p "$KFORGE_KEYS"
B=/tmp/rt-seal/cbase; B2=/tmp/rt-seal/cbase2; rm -rf "$B" "$B2"; mkdir -p /tmp/rt-seal
"$KF" run "$TASK" --budget 4 --seed 3 --run "$B" --min-runs 6 --max-runs 8 --min-time 0.01 --hidden 1 >/dev/null 2>&1
"$KF" run "$TASK" --budget 4 --seed 5 --run "$B2" --min-runs 6 --max-runs 8 --min-time 0.01 --hidden 1 >/dev/null 2>&1
t() { local name=$1 sql=$2; local R=/tmp/rt-seal/c$name; rm -rf "$R"; cp -r "$B" "$R"; sqlite3 "$R/run.db" "$sql"
  echo "=== $name: $sql" | cut -c1-220; "$KF" best "$R" 2>&1 | sed 's/^/  best: /' | head -3
  echo "  tree: $("$KF" tree "$R" 2>&1 | grep -m1 -i 'warning\|note:\|error\|tampered' | cut -c1-200)"; }
t c1 "update nodes set state='kept', speedup=50 where id=(select max(id) from nodes)"
t c2 "update nodes set shapes_json=replace(shapes_json,'\"speedup\":','\"speedup\":4') where id=1"
t c3 "update nodes set seal=(select seal from nodes where id=1) where id=(select max(id) from nodes)"
t c4 "create temp table x as select * from nodes where id=(select max(id) from nodes);
      update nodes set (state,reasons,verdict_json,shapes_json,speedup,seal)=(select state,reasons,verdict_json,shapes_json,speedup,seal from nodes n where n.id=1) where id=(select id from x)"
t c5 "attach '$B2/run.db' as o; update nodes set (state,reasons,verdict_json,shapes_json,speedup,seal)=(select state,reasons,verdict_json,shapes_json,speedup,seal from o.nodes n where n.id=nodes.id) where id=1"
t c6 "pragma foreign_keys=off; update nodes set id=id+100"
t c7 "update nodes set src_hash=(select src_hash from nodes where id=1) where id=(select max(id) from nodes)"
t c8 "update runs set key_id=NULL; update nodes set state='kept', speedup=50, shapes_json=(select json_group_array(json_set(value,'\$.speedup',50.0,'\$.win',json('true'))) from json_each(shapes_json)) where id=(select max(id) from nodes)"
t c9 "update runs set key_id='ffffffffffffffffffffffffffffffff'"
t c10 "update runs set key_id='../../../../tmp/x'"
t c11 "update runs set task_fingerprint=substr(task_fingerprint,1,63)||'0'"
t c12 "create trigger f after update on nodes begin update nodes set seal=kf_seal(NEW.id,NEW.parent,NEW.src_hash,NEW.ext,NEW.params_json,NEW.proposer,NEW.category,'kept',NULL,NEW.verdict_json,NEW.shapes_json,50) where id=NEW.id and NEW.state='reverted'; end"
echo "  c12 resume with a trigger calling kf_seal: $("$KF" run --resume /tmp/rt-seal/cc12 --budget 6 2>&1 | tail -1 | cut -c1-200)"
# c13: a source file edited in place
R=/tmp/rt-seal/cc13; rm -rf "$R"; cp -r "$B" "$R"
W=$("$KF" best "$R" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["best"][0]["source"])')
echo '/* edited */' >> "$W"; echo "=== c13: the winner's RUN/src/<hash>.c edited"; "$KF" best "$R" 2>&1 | sed 's/^/  best: /' | head -2; echo
# c14: resume without the key
R=/tmp/rt-seal/cc14; rm -rf "$R"; cp -r "$B" "$R"
echo "=== c14: resume with KFORGE_KEYS elsewhere: $(KFORGE_KEYS=/tmp/rt-seal-nokeys "$KF" run --resume "$R" --budget 6 2>&1 | tail -1 | cut -c1-200)"
