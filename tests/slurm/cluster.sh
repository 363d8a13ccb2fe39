#!/bin/sh
# tests/slurm/cluster.sh - a Slurm cluster on loopback for the scale-out tests
# (docs/scale.md "A cluster on one machine"): munged with a private key and socket,
# slurmctld, and one slurmd per CPU "node" (NodeName=kf1..kfN, all NodeHostname=
# localhost on ports of their own, as Slurm's multiple-slurmd mode allows), everything
# under DIR with ports from PORT (default 17817). Debian's slurmctld, slurmd,
# slurm-client and munge (deps.txt). Needs root (slurmd runs jobs as their user).
#
#   tests/slurm/cluster.sh start DIR [NODES] [PORT]   prints SLURM_CONF=DIR/slurm.conf
#   tests/slurm/cluster.sh stop DIR
#
# start exits 77 with the reason on stderr when Slurm cannot start here (not installed,
# not root, multiple-slurmd missing, a daemon that does not come up), so a test skips.
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR [NODES] [PORT]" >&2; exit 2; }

stop() {
    for f in "$dir"/*.pid; do
        [ -f "$f" ] || continue
        p=$(cat "$f" 2>/dev/null)
        [ -n "$p" ] && kill "$p" 2>/dev/null
    done
    sleep 0.5
    for f in "$dir"/*.pid; do
        [ -f "$f" ] || continue
        p=$(cat "$f" 2>/dev/null)
        [ -n "$p" ] && kill -9 "$p" 2>/dev/null
        rm -f "$f"
    done
    return 0
}

skip() { echo "slurm: $*" >&2; stop; exit 77; }

if [ "$cmd" = stop ]; then
    stop
    exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR [NODES] [PORT]" >&2; exit 2; }
nodes=${3:-3}
port=${4:-17817}
for b in slurmctld slurmd sbatch srun scancel squeue munged; do
    command -v "$b" > /dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || skip "$b is not installed (make deps installs Slurm)"
done
[ "$(id -u)" = 0 ] || skip "not root: slurmd must run as root to start jobs as their user"
PATH=$PATH:/usr/sbin
mkdir -p "$dir/spool" "$dir/state" "$dir/munge" "$dir/log"
chmod 755 "$dir" "$dir/spool" "$dir/state" "$dir/log"
# munge: a key and a socket of our own, so nothing of the machine's is touched
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
chown -R munge:munge "$dir/munge" 2> /dev/null || true
chmod 755 "$dir/munge" # the socket must be reachable by every user
sock="$dir/munge/munge.socket"
su -s /bin/sh munge -c "munged --key-file=$dir/munge/munge.key --socket=$sock --pid-file=$dir/munge/munged.pid \
    --log-file=$dir/munge/munged.log --seed-file=$dir/munge/seed --force" 2> "$dir/log/munged.err" ||
    munged --key-file="$dir/munge/munge.key" --socket="$sock" --pid-file="$dir/munge/munged.pid" \
        --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" --force 2>> "$dir/log/munged.err" ||
    skip "munged did not start: $(tail -1 "$dir/log/munged.err")"
cp "$dir/munge/munged.pid" "$dir/munged.pid" 2> /dev/null || true
cpus=$(nproc)
{
    echo "ClusterName=kforge-test"
    echo "SlurmctldHost=localhost"
    echo "SlurmctldPort=$port"
    echo "SlurmdPort=$((port + 1))"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$sock"
    echo "CredType=cred/munge"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SwitchType=switch/none"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "InactiveLimit=0"
    echo "KillWait=2"
    echo "MinJobAge=5"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    i=1
    while [ "$i" -le "$nodes" ]; do
        echo "NodeName=kf$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((port + 1 + i)) CPUs=$cpus State=UNKNOWN"
        i=$((i + 1))
    done
    echo "PartitionName=cpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
} > "$dir/slurm.conf"
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" > "$dir/log/slurmctld.out" 2>&1 || skip "slurmctld did not start: $(tail -2 "$dir/log/slurmctld.log" 2> /dev/null)"
i=1
while [ "$i" -le "$nodes" ]; do
    slurmd -f "$SLURM_CONF" -N "kf$i" > "$dir/log/slurmd-kf$i.out" 2>&1 ||
        skip "slurmd -N kf$i did not start (a Slurm without multiple-slurmd?): $(tail -2 "$dir/log/slurmd-kf$i.log" 2> /dev/null)"
    i=$((i + 1))
done
# up when every node is idle
t=0
while :; do
    up=$(sinfo -h -N -o '%T' 2> /dev/null | grep -c -E '^(idle|mixed|allocated)')
    [ "$up" -ge "$nodes" ] && break
    t=$((t + 1))
    [ "$t" -gt 60 ] && skip "the nodes did not come up in 30 s: $(sinfo -h -N 2>&1 | head -3 | tr '\n' ' ')"
    sleep 0.5
done
echo "SLURM_CONF=$SLURM_CONF"
