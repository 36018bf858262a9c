#!/usr/bin/env bash
# CI: build the CPU image for real and run the quick suite inside it.
#
# No image registry is reachable from CI, so the image is built on a stand-in base: Debian 12
# made with debootstrap and `docker import`. Starts dockerd if none answers and stops what it
# started. The suite runs as `harness bench --runner docker`: this venv is the parent, each worker
# runs in a container of the image. Asserts that every run is VALID, records the ID of the image
# that was built, and that its job file names the run directory by its host path.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
STAND_IN="beyond-tops/base:bookworm-stand-in"
TAG="beyond-tops/cpu:ci"
SUITE="${SUITE:-quick}"
state="$(mktemp -d)"
started_dockerd=""
t0=$SECONDS

step() { # step NAME COMMAND...: run it and say how long it took
  local name="$1" start=$SECONDS
  shift
  echo "== docker-cpu: $name"
  "$@"
  echo "== docker-cpu: $name: $((SECONDS - start)) s (total $((SECONDS - t0)) s)"
}

install_tools() {
  if command -v dockerd >/dev/null && command -v debootstrap >/dev/null; then
    echo "dockerd and debootstrap already installed"
    return
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends docker.io debootstrap
}

daemon_answers() {
  "$PYTHON" -c 'import docker; docker.from_env(timeout=5).ping()' >/dev/null 2>&1
}

start_daemon() {
  if daemon_answers; then
    echo "a Docker daemon already answers; using it"
    return
  fi
  dockerd --pidfile "$state/dockerd.pid" >"$state/dockerd.log" 2>&1 &
  started_dockerd=$!
  for _ in $(seq 60); do
    daemon_answers && return
    sleep 1
  done
  echo "dockerd did not answer within 60 s; its log:" >&2
  tail -n 30 "$state/dockerd.log" >&2
  return 1
}

stop_daemon() {
  if [[ -n "$started_dockerd" ]] && kill -0 "$started_dockerd" 2>/dev/null; then
    kill "$started_dockerd"
    for _ in $(seq 30); do
      kill -0 "$started_dockerd" 2>/dev/null || break
      sleep 1
    done
    echo "== docker-cpu: stopped the dockerd it started (pid $started_dockerd)"
  fi
  rm -rf "$state"
}
trap stop_daemon EXIT

debian_mirror() { # the first Debian mirror apt uses here
  local mirror
  mirror="$(grep -hE '^[[:space:]]*(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' \
    | grep -v security | head -n 1 | tr -d ' ' || true)"
  echo "${mirror:-http://deb.debian.org/debian}"
}

make_stand_in() {
  if docker image inspect "$STAND_IN" >/dev/null 2>&1; then
    echo "$STAND_IN already present"
    return
  fi
  local root="$state/rootfs"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$(debian_mirror)" >"$state/debootstrap.log" 2>&1 \
    || { tail -n 30 "$state/debootstrap.log" >&2; return 1; }
  tar -C "$root" -c . | docker import - "$STAND_IN"
  rm -rf "$root"
}

build_image() {
  "$PYTHON" -m harness.cli image build --hw cpu --base-image "$STAND_IN" --tag "$TAG"
}

bench() {
  mkdir -p "$state/runs"
  "$PYTHON" -m harness.cli bench "$SUITE" --hw cpu --runner docker --image "$TAG" \
    --out "$state/runs"
}

check_results() { # the built image's ID, from Docker itself
  "$PYTHON" - "$state/runs" "$(docker image inspect --format '{{.Id}}' "$TAG")" <<'EOF'
import json
import sys
from pathlib import Path

runs, built = Path(sys.argv[1]), sys.argv[2]
results = sorted(runs.rglob("result.json"))  # a run dir may hold trial dirs
if not results:
    sys.exit(f"FAIL: no result.json under {runs}")
failures = []
for path in results:
    result = json.loads(path.read_text())
    image = result.get("image") or {}
    print(f"{path.parent.relative_to(runs)}: valid={result.get('valid')} image={image.get('id')}")
    if result.get("valid") is not True:
        failures.append(f"{path}: not VALID: {result.get('invalid_reasons')}")
    if image.get("id") != built:
        failures.append(f"{path}: image.id is {image.get('id')!r}, the built image is {built}")
    job = json.loads((path.parent / "job.json").read_text())
    if job["run_dir"] != str(path.parent.resolve()):
        failures.append(f"{path}: job.json's run_dir {job['run_dir']} is not the host path")
if failures:
    sys.exit("FAIL: " + "\n      ".join(failures))
print(f"{len(results)} runs VALID in image {built}")
EOF
}

step "install docker.io and debootstrap" install_tools
step "start dockerd" start_daemon
step "stand-in base $STAND_IN" make_stand_in
step "wheelhouse (make wheels HW=cpu)" bash scripts/wheels.sh cpu
step "build $TAG on $STAND_IN, no network" build_image
step "$SUITE suite in the container" bench
step "check results" check_results
echo "== docker-cpu: passed in $((SECONDS - t0)) s"
