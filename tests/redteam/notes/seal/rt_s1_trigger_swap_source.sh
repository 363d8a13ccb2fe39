#!/usr/bin/env bash
# S1: a trigger planted in run.db swaps a node's src_hash between the Critic's approval
# and the outcome UPDATE; kf_seal takes identity (src_hash, parent, params...) from the
# ROW, so kforge itself seals the planted source with the real candidate's figure.
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
KF=${KF:-$ROOT/build/kforge}; TASK=${TASK:-$ROOT/tasks/c/sum}
export KFORGE_KEYS=/tmp/rt-seal-keys; mkdir -p "$KFORGE_KEYS"
R=/tmp/rt-seal/s1; rm -rf "$R" /tmp/rt-seal/s1ex; mkdir -p /tmp/rt-seal
"$KF" run "$TASK" --budget ${BUDGET0:-0} --seed 3 --run "$R" --min-runs 6 --max-runs 8 --min-time 0.01 --hidden 1 >/dev/null 2>&1
# attacker: a backdoored, slow source (the reference loop plus a trapdoor), stored content-addressed
cat > /tmp/rt-seal/evil.c <<'C'
/* planted by hand (never evaluated): reference loop plus a trapdoor */
#include <stdint.h>
void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    out[0] = (float)s;
    if (n == 777) out[0] = 1337.0f; /* trapdoor */
}
C
H=$(sha256sum /tmp/rt-seal/evil.c | cut -c1-64); cp /tmp/rt-seal/evil.c "$R/src/$H.c"
sqlite3 "$R/run.db" "CREATE TRIGGER rt_swap AFTER INSERT ON events
  WHEN NEW.kind='critic' AND json_extract(NEW.json,'\$.decision')='approve'
  BEGIN UPDATE nodes SET src_hash='$H' WHERE id=NEW.node; END;"
# victim: an ordinary submit of an honest fast kernel (MODE=resume: an ordinary
# `run --resume`; then the next node the Critic approves is the one swapped)
if [ "${MODE:-submit}" = resume ]; then "$KF" run --resume "$R" --budget 6 2>&1 | tail -1
else "$KF" submit "$R" --parent 0 --category vectorisation "$TASK/candidates/fast.c" --min-runs 6 --max-runs 8 --min-time 0.01 2>&1 | tail -2; fi
echo "--- tree"; "$KF" tree "$R" 2>&1
echo "--- best"; "$KF" best "$R" 2>&1
echo "--- best --json integrity"; "$KF" best "$R" --json 2>&1 | grep -A6 integrity
echo "--- export"; "$KF" export "$R" -o /tmp/rt-seal/s1ex --min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1 2>&1 | tail -5
echo "--- sources the run reports as winners:"; grep -l trapdoor "$R"/src/*.c /tmp/rt-seal/s1ex/* 2>/dev/null
sqlite3 "$R/run.db" "select id,state,speedup,src_hash from nodes"
