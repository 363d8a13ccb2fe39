#!/usr/bin/env bash
# S2: the keys directory is writable by the same user, and kforge trusts any 32-hex-named
# key file in it. Without READING any key: write a NEW key file we chose, point
# runs.key_id at it, and re-seal every row (a reverted node made kept at 50x).
# `kforge best --json` even prints where the keys directory is.
# MODE=overwrite: overwrite the run's own key file instead (key_id and key path unchanged).
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
KF=${KF:-$ROOT/build/kforge}; TASK=${TASK:-$ROOT/tasks/c/sum}
export KFORGE_KEYS=/tmp/rt-seal-keys; mkdir -p "$KFORGE_KEYS"
R=/tmp/rt-seal/s2; rm -rf "$R"; mkdir -p /tmp/rt-seal
"$KF" run "$TASK" --budget 3 --seed 3 --run "$R" --min-runs 6 --max-runs 8 --min-time 0.01 --hidden 1 >/dev/null 2>&1
KEYDIR=$(dirname "$("$KF" best "$R" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["integrity"]["key"])')")
python3 - "$R/run.db" "$KEYDIR" <<'PY'
import sqlite3, sys, os, hmac, hashlib, json
db, keydir = sys.argv[1], sys.argv[2]
key = bytes(range(32)); kid = "0123456789abcdef0123456789abcdef"
c = sqlite3.connect(db)
if os.environ.get("MODE") == "overwrite":   # S2b: overwrite the run's OWN key file (still no read): key path unchanged
    kid = c.execute("select key_id from runs").fetchone()[0]
open(os.path.join(keydir, kid + ".key"), "w").write(key.hex() + "\n")   # written, never read
run, fp = c.execute("select id, task_fingerprint from runs order by id limit 1").fetchone()
c.execute("update runs set key_id=?", (kid,))
# the forgery: the highest-numbered node becomes kept at 50x on every shape
nid, shapes = c.execute("select id, shapes_json from nodes order by id desc limit 1").fetchone()
sh = json.loads(shapes)
for s in sh: s["speedup"] = 50.0; s["win"] = True; s["ci95"] = [49.0, 51.0]
c.execute("update nodes set state='kept', reasons=NULL, speedup=50.0, shapes_json=? where id=?", (json.dumps(sh), nid))
c.execute("update events set json=json_set(json,'$.decision','approve','$.why','re-timed: a win each time') where node=? and kind='critic'", (nid,))
def part(p): return b"N;" if p is None else (b"%d:" % len(p.encode())) + p.encode() + b";"
UNF = ("proposed", "built")
for row in c.execute("select id,parent,src_hash,ext,params_json,proposer,category,state,reasons,verdict_json,shapes_json,speedup from nodes").fetchall():
    i, par, h, e, pj, pr, ca, st, rs, vj, sj, sp = row
    if st in UNF: continue
    parts = ["kforge-seal-1", fp, "%d" % run, "%d" % i, "%d" % (par or 0), h, e, pj, pr, ca, st, rs, vj, sj, "%.17g" % sp]
    seal = hmac.new(key, b"".join(part(p) for p in parts), hashlib.sha256).hexdigest()
    c.execute("update nodes set seal=? where id=?", (seal, i))
c.commit()
PY
echo "--- tree"; "$KF" tree "$R" 2>&1
echo "--- best"; "$KF" best "$R" 2>&1
echo "--- integrity"; "$KF" best "$R" --json 2>&1 | grep -A5 '"integrity"'
