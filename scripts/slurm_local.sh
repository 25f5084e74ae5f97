#!/usr/bin/env bash
# A one-node SLURM cluster on this machine (Debian's slurm-wlm and munge), to run
# examples/slurm for real: tests/integration/test_slurm.py runs when SLURM_CONF points at it.
#   bash scripts/slurm_local.sh install   # apt-get install slurm-wlm munge (root)
#   bash scripts/slurm_local.sh start     # munged, slurmctld, slurmd; prints `export SLURM_CONF=...`
#   bash scripts/slurm_local.sh stop
# State, logs and the config live in AGENTX_SLURM_DIR (default /tmp/agentx-slurm); nothing in /etc
# is changed (clients and daemons read SLURM_CONF). The node advertises 8 CPUs whatever the
# machine has, so a few array tasks run at once.
set -euo pipefail

dir=${AGENTX_SLURM_DIR:-/tmp/agentx-slurm}
conf=$dir/slurm.conf
host=$(hostname -s)

install() {
    if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge
    fi
}

write_conf() {
    mkdir -p "$dir/spool" "$dir/state"
    cat >"$conf" <<EOF
ClusterName=agentx
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
NodeName=$host CPUs=8 RealMemory=20000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
    install
    write_conf
    if [[ ! -s /etc/munge/munge.key ]]; then
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge
    chown munge:munge /run/munge
    if ! munge -n >/dev/null 2>&1; then
        su -s /bin/sh munge -c /usr/sbin/munged
        touch "$dir/munged.ours" # stop ends it too
    fi
    export SLURM_CONF=$conf
    slurmctld -f "$conf"
    slurmd -f "$conf"
    for _ in $(seq 60); do
        if sinfo -h -o %t 2>/dev/null | grep -qx idle; then
            echo "export SLURM_CONF=$conf"
            return 0
        fi
        sleep 0.5
    done
    echo "slurm_local.sh: the node did not come up; see $dir/slurmctld.log and $dir/slurmd.log" >&2
    return 1
}

stop() {
    for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
        if [[ -s $pid_file ]]; then
            kill "$(cat "$pid_file")" 2>/dev/null || true
            rm -f "$pid_file"
        fi
    done
    if [[ -f $dir/munged.ours && -s /run/munge/munged.pid ]]; then
        kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
        rm -f "$dir/munged.ours"
    fi
}

case ${1:-} in
    install) install ;;
    start) start ;;
    stop) stop ;;
    *)
        echo "usage: slurm_local.sh install|start|stop" >&2
        exit 2
        ;;
esac
