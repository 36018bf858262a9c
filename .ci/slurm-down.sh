#!/usr/bin/env bash
# CI: stop the single-node Slurm cluster that .ci/slurm-up.sh started, and nothing else.
#
# Cancels the cluster's jobs while it still answers, then stops slurmd, slurmctld and munged by
# the pid files slurm-up left under $SLURM_STATE (a munged it did not start is left running),
# waits for each to exit, and kills any job step or job process of this cluster left behind.
# Safe when nothing runs. Keeps $SLURM_STATE (logs, job state, jobcomp.txt) and /etc/slurm.
# Options: --quiet (say nothing when there is nothing to stop), --keep-munged.
set -euo pipefail

SLURM_STATE="${SLURM_STATE:-/tmp/beyond-tops-slurm}"
readonly SLURM_STATE
readonly CLUSTER_ENV="SLURM_CLUSTER_NAME=beyondtops"
readonly STOP_WAIT_S=10
quiet=0
keep_munged=0

log() { echo "slurm-down: $*"; }

running() { # running PID: the process exists and is not a zombie (pid 1 may reap slowly)
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat%% *}" != [ZX] ]]
}

pid_of() { # pid_of PIDFILE COMM: the pid the file names if it is a running COMM, else nothing
  local pidfile="$1" comm="$2" pid
  [[ -s "$pidfile" ]] || return 0
  pid="$(<"$pidfile")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$comm" ]] && running "$pid"; then
    echo "$pid"
  fi
}

wait_gone() { # wait_gone TIMEOUT_S PID...: true once none of the pids runs
  local deadline=$((SECONDS + $1)) pid alive
  shift
  while :; do
    alive=0
    for pid in "$@"; do
      if running "$pid"; then
        alive=1
      fi
    done
    ((alive == 0)) && return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

stop_daemon() { # stop_daemon PIDFILE COMM: SIGTERM, wait, SIGKILL if it will not go
  local pidfile="$1" comm="$2" pid
  pid="$(pid_of "$pidfile" "$comm")"
  if [[ -n "$pid" ]]; then
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone "$STOP_WAIT_S" "$pid"; then
      log "$comm ($pid) ignored SIGTERM for $STOP_WAIT_S s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone 5 "$pid" || log "warning: $comm ($pid) still runs"
    fi
    log "stopped $comm ($pid)"
    stopped=$((stopped + 1))
  fi
  rm -f "$pidfile"
}

our_steps() { # pids of slurmstepd processes with a file of this cluster open (its slurmd log)
  local pid fd
  for pid in $(pgrep -x slurmstepd || true); do
    for fd in "/proc/$pid/fd/"*; do
      if [[ "$(readlink "$fd" 2>/dev/null)" == "$SLURM_STATE/"* ]]; then
        echo "$pid"
        break
      fi
    done
  done
}

ancestors() { # this script's pid and those of its ancestors
  local pid=$$
  while ((pid > 1)); do
    echo "$pid"
    pid="$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null || echo 1)"
  done
}

our_job_processes() { # processes whose environment names this cluster, other than our ancestors
  local dir pid own
  own=" $(ancestors | tr '\n' ' ') "
  for dir in /proc/[0-9]*; do
    pid="${dir#/proc/}"
    [[ "$own" != *" $pid "* ]] || continue
    if grep -qzxF "$CLUSTER_ENV" "/proc/$pid/environ" 2>/dev/null; then
      echo "$pid"
    fi
  done
}

cancel_jobs() { # ask slurmctld to end every job while slurmd can still kill them cleanly
  local ctld slurmd steps
  ctld="$(pid_of "$SLURM_STATE/run/slurmctld.pid" slurmctld)"
  slurmd="$(pid_of "$SLURM_STATE/run/slurmd.pid" slurmd)"
  [[ -n "$ctld" && -n "$slurmd" ]] && command -v scancel >/dev/null || return 0
  # Refuse new submissions first, so none slips in between the cancel and the stop (slurm.conf
  # sets the partition UP again when slurmctld next starts).
  timeout 5 scontrol update PartitionName=debug State=DRAIN 2>/dev/null || true
  if [[ -n "$(timeout 5 squeue -h -o %i 2>/dev/null || true)" ]]; then
    timeout 10 scancel --partition=debug 2>/dev/null || true
    log "cancelled the cluster's jobs"
  fi
  steps="$(our_steps)"
  if [[ -n "$steps" ]]; then
    # shellcheck disable=SC2086  # one pid per word
    wait_gone 5 $steps || true
  fi
}

kill_strays() { # job steps and job processes of this cluster that outlived the daemons
  local pids
  pids="$(our_steps) $(our_job_processes)"
  pids="$(tr -s ' \n' ' ' <<<"$pids" | sed 's/^ *//; s/ *$//')"
  [[ -n "$pids" ]] || return 0
  log "killing leftover job processes: $pids"
  # shellcheck disable=SC2086  # one pid per word
  kill -KILL $pids 2>/dev/null || true
  # shellcheck disable=SC2086
  wait_gone 5 $pids || log "warning: some of $pids still run"
}

main() {
  local arg
  for arg in "$@"; do
    case "$arg" in
      --quiet) quiet=1 ;;
      --keep-munged) keep_munged=1 ;;
      *)
        echo "slurm-down: error: unknown option '$arg' (allowed: --quiet, --keep-munged)" >&2
        exit 2
        ;;
    esac
  done
  stopped=0
  cancel_jobs
  stop_daemon "$SLURM_STATE/run/slurmd.pid" slurmd
  stop_daemon "$SLURM_STATE/run/slurmctld.pid" slurmctld
  if ((keep_munged == 0)); then
    stop_daemon "$SLURM_STATE/munge/munged.pid" munged
  fi
  kill_strays
  if ((stopped == 0 && quiet == 0)); then
    log "nothing to stop (no live daemon in the pid files under $SLURM_STATE)"
  fi
}

main "$@"
