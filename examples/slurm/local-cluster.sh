#!/usr/bin/env bash
# A one-machine SLURM cluster for testing examples/slurm/ablate.sbatch (tests/sweep/test_slurm.py; CI runs it
# from .ci/run, developers with `make slurm-up`). Debian/Ubuntu only, as root: installs Debian's `slurm-wlm`
# and `munge`, writes a one-node /etc/slurm/slurm.conf for this machine, starts munged, slurmctld and slurmd
# as plain daemons (no systemd: this also runs in containers), and waits until the node is idle.
#
# Idempotent: it starts only the daemons that are not running, and when a SLURM it did not set up already
# answers (a site's), it does nothing. It never overwrites a slurm.conf it did not write. Daemon pids: /run/ablate-slurm/*.pid; logs:
# /var/log/slurm/. `examples/slurm/local-cluster.sh down` stops the daemons this script started (by pid).
#
# Not for a real cluster: no accounting, no cgroups (proctrack/linuxproc, task/none), the node's memory is
# not a consumable resource, and jobs run as whoever submits them.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# written by ablate examples/slurm/local-cluster.sh"
PIDS=/run/ablate-slurm
LOGS=/var/log/slurm
WAIT_S=${SLURM_UP_WAIT_S:-60}
export PATH=$PATH:/usr/sbin:/sbin  # slurmctld, slurmd, munged

die() { echo "local-cluster.sh: $*" >&2; exit 1; }

stop_daemons() {
    local name pid
    for name in slurmd slurmctld munged; do
        [[ -f $PIDS/$name.pid ]] || continue
        pid=$(cat "$PIDS/$name.pid")
        if kill -0 "$pid" 2>/dev/null; then kill "$pid" && echo "stopped $name (pid $pid)"; fi
        rm -f "$PIDS/$name.pid"
    done
}

if [[ ${1:-up} == down ]]; then stop_daemons; exit 0; fi
[[ ${1:-up} == up ]] || die "usage: $0 [up|down]"

ours() { [[ -f $CONF ]] && grep -qF "$MARK" "$CONF"; }
# A SLURM that is not this script's (a site's, or a developer's own) already answers: use it as it is.
if ! ours && command -v sinfo >/dev/null 2>&1 && timeout 10 sinfo -h >/dev/null 2>&1; then
    echo "a SLURM already answers (not set up by this script; left as it is):"; sinfo
    exit 0
fi
[[ -f $CONF ]] && ! ours && die "$CONF exists and was not written by this script; not touching it (start your SLURM, or move it away)"

[[ $(id -u) == 0 ]] || die "needs root (it installs packages and starts daemons); run it with sudo"

# 1. Packages.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
    || ! command -v sbatch >/dev/null; then
    command -v apt-get >/dev/null || die "apt-get not found: install SLURM (slurmctld, slurmd, sbatch) and munge yourself"
    echo "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null || die "apt-get update failed (no package mirror reachable?)"
    apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null \
        || die "apt-get install slurm-wlm munge failed"
fi

# 2. Config: one node, this machine, as slurmd sees it (`slurmd -C`), less a memory margin.
host=$(hostname -s)
getent hosts "$host" >/dev/null || die "hostname $host does not resolve (add it to /etc/hosts)"
mkdir -p /etc/slurm "$PIDS" "$LOGS" /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
node=$(slurmd -C | head -1)  # NodeName=<host> CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=.. RealMemory=..
[[ $node == NodeName=* ]] || die "slurmd -C printed no node line: $node"
mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
margin=$((mem / 10 > 1024 ? mem / 10 : 1024))
node=${node/RealMemory=$mem/RealMemory=$((mem - margin))}
cat >"$CONF" <<EOF
$MARK
# One node: this machine. Regenerated at each start of that script; edit the script, not this file.
ClusterName=ablate-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=$PIDS/slurmctld.pid
SlurmdPidFile=$PIDS/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
KillWait=10
$node State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# 3. munge: a key if there is none, then the daemon (as root: --force, no munge user needed).
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
if [[ ! -s /etc/munge/munge.key ]]; then
    if command -v mungekey >/dev/null; then mungekey --create --keyfile=/etc/munge/munge.key --force
    else dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none; fi
fi
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge
chmod 0400 /etc/munge/munge.key
chown root:root /etc/munge /etc/munge/munge.key /var/lib/munge /var/log/munge /run/munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    munged --force --pid-file="$PIDS/munged.pid" || die "munged did not start (see /var/log/munge/munged.log)"
    for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
    munge -n </dev/null | unmunge >/dev/null || die "munge does not answer (see /var/log/munge/munged.log)"
fi

# 4. slurmctld and slurmd (they daemonize and write their pid files).
alive() { [[ -f $PIDS/$1.pid ]] && kill -0 "$(cat "$PIDS/$1.pid")" 2>/dev/null; }
alive slurmctld || slurmctld || die "slurmctld did not start (see $LOGS/slurmctld.log)"
alive slurmd || slurmd || die "slurmd did not start (see $LOGS/slurmd.log)"

# 5. Wait until the node takes jobs (idle, or already running some; a trailing * = not responding).
deadline=$((SECONDS + WAIT_S))
until [[ $(sinfo -h -N -n "$host" -o %t 2>/dev/null) =~ ^(idle|mix|alloc)$ ]]; do
    if ((SECONDS > deadline)); then
        sinfo -N -l >&2 || true
        tail -n 20 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" >&2 || true
        die "node $host not idle after ${WAIT_S}s"
    fi
    sleep 0.5
done
echo "SLURM up: node $host idle ($(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$node") CPUs), pids in $PIDS"
sinfo
