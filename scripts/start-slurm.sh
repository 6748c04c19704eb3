#!/usr/bin/env bash
# Starts a one-node SLURM cluster on this machine (munged, slurmctld, slurmd) and waits until a job
# runs. Idempotent: safe to rerun, also after the daemons died (stale pid files, sockets, node DOWN).
# Needs root on Debian. Env: SCIFI_SLURM_FORCE_CONF=1 rewrites slurm.conf even when it exists.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
say() { printf 'start-slurm: %s\n' "$*"; }
fail() { printf 'start-slurm: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "must run as root (it installs packages and starts system daemons)"

conf_dir=/etc/slurm
conf="$conf_dir/slurm.conf"
state_dir=/var/lib/slurm/slurmctld
spool_dir=/var/lib/slurm/slurmd
log_dir=/var/log/slurm
run_dir=/run/slurm
marker="# written by scifi scripts/start-slurm.sh"

# A pid file counts only when its process is alive AND is the named daemon (pids get reused).
alive() {
  local pid
  pid="$(cat "$1" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}

install_packages() {
  local missing=()
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "packages present: slurm-wlm munge"
  fi
}

start_munge() {
  if [ ! -s /etc/munge/munge.key ]; then
    say "creating munge key /etc/munge/munge.key"
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  fi
  chown munge:munge /etc/munge /etc/munge/munge.key
  chmod 700 /etc/munge
  chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  chmod 755 /run/munge
  if alive /run/munge/munged.pid munged && munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    say "munged already running"
    return
  fi
  say "starting munged"
  rm -f /run/munge/munged.pid
  # --force: remove a socket left by a munged that died.
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 1 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return
    sleep 0.1
  done
  fail "munged does not answer; see /var/log/munge/munged.log"
}

write_conf() {
  if [ -f "$conf" ] && ! grep -qF "$marker" "$conf" && [ "${SCIFI_SLURM_FORCE_CONF:-0}" != 1 ]; then
    say "keeping existing $conf (not written by scifi; SCIFI_SLURM_FORCE_CONF=1 replaces it)"
    return
  fi
  local host cpus mem
  host="$(hostname -s)"
  cpus="$(nproc)"
  # Leave 512 MiB to the host; slurmd refuses to start when RealMemory exceeds what it finds.
  mem="$(awk '/MemTotal/ {printf "%d", $2 / 1024 - 512}' /proc/meminfo)"
  mkdir -p "$conf_dir"
  local tmp
  tmp="$(mktemp "$conf_dir/slurm.conf.XXXXXX")"
  cat >"$tmp" <<EOF
$marker
ClusterName=scifi
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation=$state_dir
SlurmdSpoolDir=$spool_dir
SlurmctldPidFile=$run_dir/slurmctld.pid
SlurmdPidFile=$run_dir/slurmd.pid
SlurmctldLogFile=$log_dir/slurmctld.log
SlurmdLogFile=$log_dir/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Keep finished jobs visible to scontrol for an hour (no accounting database here).
MinJobAge=3600
InactiveLimit=0
KillWait=5
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=7-00:00:00 DefMemPerCPU=512 State=UP
EOF
  if [ -f "$conf" ] && cmp -s "$tmp" "$conf"; then
    rm -f "$tmp"
    say "slurm.conf unchanged ($host: $cpus CPUs, $mem MiB)"
  else
    mv "$tmp" "$conf"
    chmod 644 "$conf"
    say "wrote $conf ($host: $cpus CPUs, $mem MiB, partition debug)"
    CONF_CHANGED=1
  fi
  # No GPUs on this node: an empty gres.conf keeps slurmd from probing for one.
  [ -f "$conf_dir/gres.conf" ] || : >"$conf_dir/gres.conf"
}

start_daemon() {
  local name=$1 pidfile=$2
  if alive "$pidfile" "$name"; then
    if [ "${CONF_CHANGED:-0}" = 1 ]; then
      say "restarting $name (slurm.conf changed)"
      kill "$(cat "$pidfile")" || true
      for _ in $(seq 1 50); do alive "$pidfile" "$name" || break; sleep 0.1; done
    else
      say "$name already running (pid $(cat "$pidfile"))"
      return
    fi
  fi
  rm -f "$pidfile"
  say "starting $name"
  "/usr/sbin/$name" || fail "$name did not start; see $log_dir/$name.log"
}

wait_idle() {
  local host state
  host="$(hostname -s)"
  for i in $(seq 1 120); do
    state="$(sinfo -h -n "$host" -o '%T' 2>/dev/null | head -1 || true)"
    case "$state" in
      idle | mixed | allocated | completing)
        say "node $host is $state"
        return
        ;;
      down* | drain* | fail*)
        # A node left DOWN by daemons that died: it is back, so return it to service.
        if [ "$i" -gt 5 ]; then scontrol update NodeName="$host" State=RESUME 2>/dev/null || true; fi
        ;;
    esac
    sleep 0.5
  done
  fail "node $host did not become idle (state '${state:-none}'); see $log_dir/slurmctld.log and slurmd.log"
}

smoke_test() {
  local out job
  out="$(timeout 60 srun -N1 -n1 -t 1 echo scifi-srun-ok 2>&1)" || fail "srun failed: $out"
  [ "$out" = scifi-srun-ok ] || fail "srun printed '$out'"
  job="$(sbatch --parsable -t 1 -o /dev/null --wrap true)" || fail "sbatch --wrap failed"
  for _ in $(seq 1 120); do
    if ! squeue -h -j "$job" 2>/dev/null | grep -q .; then
      scontrol show job "$job" 2>/dev/null | grep -q 'JobState=COMPLETED' && {
        say "srun and sbatch work (test job $job COMPLETED)"
        return
      }
    fi
    sleep 0.5
  done
  fail "sbatch test job $job did not complete: $(scontrol show job "$job" 2>&1 | grep -o 'JobState=[A-Z_]*')"
}

started=$(date +%s)
install_packages
start_munge
CONF_CHANGED=0
write_conf
mkdir -p "$state_dir" "$spool_dir" "$log_dir" "$run_dir"
start_daemon slurmctld "$run_dir/slurmctld.pid"
start_daemon slurmd "$run_dir/slurmd.pid"
wait_idle
smoke_test
say "ready in $(($(date +%s) - started)) s"
