#!/usr/bin/env bash
# CI: bring a single-node Slurm cluster up on this machine (Debian 12, root, no systemd needed).
#
# Installs slurm-wlm and munge with apt-get if missing, writes slurm.conf and cgroup.conf under
# $SLURM_STATE and installs them in /etc/slurm (where the clients read them; an existing file not
# written by this script is kept once as *.beyond-tops-bak), starts munged (as munge, unless a
# munged already answers), slurmctld and slurmd (as root) with their pid files and logs under
# $SLURM_STATE, and waits until slurmd has registered and a canary job (slurm-up-canary) has
# completed. Idempotent: when the daemons it started still run and the node answers, it says so
# and returns. .ci/slurm-down.sh stops what it started.
set -euo pipefail

SLURM_STATE="${SLURM_STATE:-/tmp/beyond-tops-slurm}"
# auto: proctrack/cgroup when cgroup v1 is usable, else proctrack/linuxproc; cgroup or linuxproc
# force one (cgroup fails rather than falls back).
SLURM_UP_PROCTRACK="${SLURM_UP_PROCTRACK:-auto}"
readonly SLURM_STATE SLURM_UP_PROCTRACK
readonly ETC_SLURM=/etc/slurm
readonly MARKER="# written by beyond-tops .ci/slurm-up.sh"
readonly UP_TIMEOUT_S=30
readonly T0=$EPOCHREALTIME
why="" # why the last step failed, for the error message

log() { echo "slurm-up: $*"; }
die() {
  echo "slurm-up: error: $*" >&2
  exit 1
}

elapsed_s() { # seconds since the start, one decimal
  awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

running() { # running PID: the process exists and is not a zombie (pid 1 may reap slowly)
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat%% *}" != [ZX] ]]
}

pid_alive() { # pid_alive PIDFILE COMM: the pid file names a running process called COMM
  local pidfile="$1" comm="$2" pid
  [[ -s "$pidfile" ]] || return 1
  pid="$(<"$pidfile")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$comm" ]] && running "$pid"
}

node_state() { # the node's state as sinfo prints it, empty if slurmctld does not answer
  timeout 5 sinfo -h -o %T 2>/dev/null | head -n 1 || true
}

node_ready() { # the node answers: idle, or running jobs (a trailing * means not responding)
  case "$(node_state)" in
    idle | mixed | allocated | completing) return 0 ;;
    *) return 1 ;;
  esac
}

registered_since() { # registered_since EPOCH_S: the slurmd that registered started at or after it
  local started
  started="$(timeout 5 scontrol -o show node localhost 2>/dev/null |
    sed -n 's/.* SlurmdStartTime=\([^ ]*\).*/\1/p')"
  [[ "$started" == [0-9]* ]] && (($(date -d "$started" +%s) >= $1))
}

already_up() {
  pid_alive "$SLURM_STATE/run/slurmctld.pid" slurmctld || return 1
  pid_alive "$SLURM_STATE/run/slurmd.pid" slurmd || return 1
  munge_answers && node_ready || return 1
  # An interrupted slurm-down leaves the partition draining; a restart sets it UP again.
  [[ "$(timeout 5 sinfo -h -o %a 2>/dev/null | head -n 1)" == up ]]
}

# --- packages ---------------------------------------------------------------------------------

install_packages() {
  local missing=0 cmd
  for cmd in slurmctld slurmd sbatch sinfo munged munge unmunge; do
    command -v "$cmd" >/dev/null || missing=1
  done
  if ((missing == 0)); then
    return
  fi
  log "installing slurm-wlm and munge with apt-get"
  mkdir -p "$SLURM_STATE/log"
  local apt_log="$SLURM_STATE/log/apt.log" no_start=""
  # Keep the packages' init scripts from starting daemons this script would not own.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    no_start=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$no_start"
    chmod 0755 "$no_start"
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } \
    >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    die "apt-get could not install slurm-wlm and munge (log: $apt_log); check the apt sources"
  fi
  if [[ -n "$no_start" ]]; then
    rm -f "$no_start"
    trap - EXIT
  fi
}

# --- configuration ----------------------------------------------------------------------------

cgroup_v1_usable() { # proctrack/cgroup on cgroup v1 needs writable freezer and memory hierarchies
  local ctl probe
  [[ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]] || return 1
  for ctl in freezer memory; do
    [[ "$(stat -f -c %T "/sys/fs/cgroup/$ctl" 2>/dev/null)" == cgroupfs ]] || return 1
    probe="/sys/fs/cgroup/$ctl/beyond-tops-probe.$$"
    mkdir "$probe" 2>/dev/null || return 1
    rmdir "$probe"
  done
}

node_line() { # NodeName line: nproc CPUs, slurmd's topology when it agrees, memory a bit under
  local cpus hw mem_mib topology=""
  cpus="$(nproc)"
  hw="$(slurmd -C | head -n 1)"
  mem_mib="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")"
  [[ -n "$mem_mib" ]] || die "slurmd -C printed no RealMemory: '$hw'"
  if [[ "$hw" == *" CPUs=$cpus "* ]]; then
    topology="$(grep -o 'Boards=.* ThreadsPerCore=[0-9]*' <<<"$hw")"
  fi
  echo "NodeName=localhost CPUs=$cpus $topology RealMemory=$((mem_mib * 95 / 100)) State=UNKNOWN"
}

write_slurm_conf() { # write_slurm_conf PROCTRACK TASK
  local proctrack="$1" task="$2" node cpus mem_mib
  node="$(node_line)"
  cpus="$(nproc)"
  mem_mib="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")"
  cat >"$SLURM_STATE/etc/slurm.conf.tmp" <<EOF
$MARKER (state: $SLURM_STATE)
ClusterName=beyondtops
SlurmctldHost=localhost
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SLURM_STATE/ctld
SlurmdSpoolDir=$SLURM_STATE/spool
SlurmctldPidFile=$SLURM_STATE/run/slurmctld.pid
SlurmdPidFile=$SLURM_STATE/run/slurmd.pid
SlurmctldLogFile=$SLURM_STATE/log/slurmctld.log
SlurmdLogFile=$SLURM_STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=$proctrack
TaskPlugin=$task
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
# Without it each submission waits up to 3 s for the scheduler.
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a default each job takes all the memory and jobs run one at a time.
DefMemPerCPU=$((mem_mib / cpus))
# scontrol show job remembers finished jobs this long (s).
MinJobAge=300
KillWait=2
OverTimeLimit=0
InactiveLimit=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_STATE/jobcomp.txt
$node
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$SLURM_STATE/etc/slurm.conf.tmp" "$SLURM_STATE/etc/slurm.conf"
}

write_cgroup_conf() {
  cat >"$SLURM_STATE/etc/cgroup.conf.tmp" <<EOF
$MARKER (state: $SLURM_STATE)
CgroupPlugin=cgroup/v1
CgroupAutomount=yes
# Memory limits enforced, so a job over its --mem ends OUT_OF_MEMORY.
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
ConstrainCores=no
ConstrainDevices=no
EOF
  mv "$SLURM_STATE/etc/cgroup.conf.tmp" "$SLURM_STATE/etc/cgroup.conf"
}

install_conf() { # install_conf NAME: copy it from the state dir to /etc/slurm, keeping a foreign one
  local name="$1" dest="$ETC_SLURM/$1"
  if [[ -e "$dest" ]] && ! grep -qF "$MARKER" "$dest" && [[ ! -e "$dest.beyond-tops-bak" ]]; then
    cp -p "$dest" "$dest.beyond-tops-bak"
    log "kept the existing $dest as $dest.beyond-tops-bak"
  fi
  cp "$SLURM_STATE/etc/$name" "$dest.beyond-tops-tmp"
  chmod 0644 "$dest.beyond-tops-tmp"
  mv "$dest.beyond-tops-tmp" "$dest"
}

configure() { # configure PROCTRACK TASK
  mkdir -p "$ETC_SLURM" "$SLURM_STATE"/{etc,ctld,spool,run,log}
  write_slurm_conf "$1" "$2"
  write_cgroup_conf
  install_conf slurm.conf
  install_conf cgroup.conf
}

# --- daemons ----------------------------------------------------------------------------------

munge_answers() {
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1
}

start_munged() {
  if munge_answers; then
    if pid_alive "$SLURM_STATE/munge/munged.pid" munged; then
      log "munged already runs (started earlier by slurm-up)"
    else
      log "a munged not started by slurm-up already answers; using it (slurm-down leaves it)"
    fi
    return
  fi
  local key=/etc/munge/munge.key
  install -d -o munge -g munge -m 0700 /etc/munge "$SLURM_STATE/munge"
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  if [[ ! -s "$key" ]]; then
    dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
  fi
  chown munge:munge "$key"
  chmod 0400 "$key"
  runuser -u munge -- /usr/sbin/munged --pid-file="$SLURM_STATE/munge/munged.pid" \
    </dev/null >>"$SLURM_STATE/log/munged.start.log" 2>&1 ||
    die_with_logs "munged did not start"
  local _
  for _ in $(seq 50); do
    munge_answers && return
    sleep 0.1
  done
  die_with_logs "munged does not answer after 5 s"
}

start_slurm_daemons() {
  # -i: ignore job state saved by an incompatible configuration instead of refusing to start.
  if ! slurmctld -i </dev/null >>"$SLURM_STATE/log/slurmctld.start.log" 2>&1; then
    why="slurmctld did not start"
    return 1
  fi
  if ! slurmd </dev/null >>"$SLURM_STATE/log/slurmd.start.log" 2>&1; then
    why="slurmd did not start"
    return 1
  fi
}

daemons_run() { # both daemons run (they write their pid files just after they fork)
  if ! pid_alive "$SLURM_STATE/run/slurmctld.pid" slurmctld; then
    why="slurmctld exited"
    return 1
  fi
  if ! pid_alive "$SLURM_STATE/run/slurmd.pid" slurmd; then
    why="slurmd exited"
    return 1
  fi
}

wait_registered() { # wait_registered SINCE_S: until a slurmd started since SINCE_S registered
  local since_s="$1" deadline=$((SECONDS + UP_TIMEOUT_S)) grace=$((SECONDS + 2)) state
  while ((SECONDS < deadline)); do
    node_ready && registered_since "$since_s" && return 0
    state="$(node_state)"
    if [[ "$state" == inval* || "$state" == drain* ]]; then
      why="the node is $state"
      return 1
    fi
    if ((SECONDS >= grace)); then
      daemons_run || return 1
    fi
    sleep 0.2
  done
  why="slurmd did not register within $UP_TIMEOUT_S s"
  return 1
}

canary_state() { # canary_state JOB_ID: the job's state as scontrol prints it
  timeout 5 scontrol -o show job "$1" 2>/dev/null | sed -n 's/.* JobState=\([A-Z_]*\).*/\1/p'
}

run_canary() { # a trivial batch job must complete: proves munge, slurmd and the plugins
  local job state deadline=$((SECONDS + UP_TIMEOUT_S))
  if [[ "$(node_state)" != idle ]]; then
    log "the node runs jobs recovered from $SLURM_STATE/ctld; no canary job"
    return 0
  fi
  if ! job="$(cd / && timeout 10 sbatch --parsable --job-name=slurm-up-canary --time=1 \
    --output=/dev/null --wrap true 2>&1)"; then
    why="sbatch of the canary job failed: $job"
    return 1
  fi
  while ((SECONDS < deadline)); do
    state="$(canary_state "$job")"
    case "$state" in
      COMPLETED) return 0 ;;
      PENDING | CONFIGURING | RUNNING | COMPLETING | "") sleep 0.2 ;;
      *)
        why="the canary job $job ended $state"
        return 1
        ;;
    esac
  done
  why="the canary job $job did not complete within $UP_TIMEOUT_S s (state: $state)"
  return 1
}

die_with_logs() {
  local f
  for f in "$SLURM_STATE"/log/*.log "$SLURM_STATE/munge/munged.log" /var/log/munge/munged.log; do
    [[ -s "$f" && "$f" != */apt.log ]] || continue
    echo "--- tail of $f" >&2
    tail -n 10 "$f" >&2
  done
  if command -v sinfo >/dev/null; then
    echo "--- sinfo -N -o '%N %T %E'" >&2
    timeout 5 sinfo -N -o '%N %T %E' >&2 || true
  fi
  die "$1 (state and logs: $SLURM_STATE; stop with .ci/slurm-down.sh)"
}

start_with() { # start_with PROCTRACK TASK: configure, start, wait; on failure sets why
  local since_s
  configure "$1" "$2"
  since_s="$(date +%s)"
  start_slurm_daemons && wait_registered "$since_s" && run_canary
}

foreign_daemons() { # running slurmctld and slurmd processes (after slurm-down: not ours)
  local comm pid
  for comm in slurmctld slurmd; do
    for pid in $(pgrep -x "$comm" || true); do
      if running "$pid"; then
        echo -n "$comm ($pid) "
      fi
    done
  done
}

# --- main -------------------------------------------------------------------------------------

main() {
  [[ "$(id -u)" == 0 ]] || die "run as root (it installs packages and starts daemons)"
  case "$SLURM_UP_PROCTRACK" in
    auto | cgroup | linuxproc) ;;
    *) die "SLURM_UP_PROCTRACK='$SLURM_UP_PROCTRACK' is not one of auto, cgroup, linuxproc" ;;
  esac
  unset SLURM_CONF
  if command -v sinfo >/dev/null && already_up; then
    log "already up ($(elapsed_s) s; state $SLURM_STATE)"
    return
  fi
  "$(dirname "$0")/slurm-down.sh" --quiet
  local others
  others="$(foreign_daemons)"
  if [[ -n "$others" ]]; then
    die "found ${others}not started with SLURM_STATE=$SLURM_STATE;" \
      "stop them (.ci/slurm-down.sh with their SLURM_STATE) before slurm-up"
  fi
  install_packages
  mkdir -p "$SLURM_STATE/log"
  start_munged
  local proctrack=proctrack/linuxproc task=task/none
  if [[ "$SLURM_UP_PROCTRACK" == linuxproc ]]; then
    log "SLURM_UP_PROCTRACK=linuxproc: not trying proctrack/cgroup"
  fi
  if [[ "$SLURM_UP_PROCTRACK" != linuxproc ]] && cgroup_v1_usable; then
    proctrack=proctrack/cgroup
    task=task/cgroup
  elif [[ "$SLURM_UP_PROCTRACK" == cgroup ]]; then
    die "SLURM_UP_PROCTRACK=cgroup but no writable cgroup v1 freezer and memory hierarchies" \
      "under /sys/fs/cgroup; unset it to fall back to proctrack/linuxproc"
  fi
  if ! start_with "$proctrack" "$task"; then
    if [[ "$proctrack" != proctrack/cgroup || "$SLURM_UP_PROCTRACK" == cgroup ]]; then
      die_with_logs "not up with $proctrack: $why"
    fi
    log "not up with proctrack/cgroup ($why); falling back to proctrack/linuxproc"
    "$(dirname "$0")/slurm-down.sh" --quiet --keep-munged
    proctrack=proctrack/linuxproc
    task=task/none
    start_with "$proctrack" "$task" || die_with_logs "not up with $proctrack: $why"
  fi
  log "up in $(elapsed_s) s: node localhost, $(nproc) CPUs, partition debug," \
    "$proctrack + $task, state $SLURM_STATE"
}

main "$@"
