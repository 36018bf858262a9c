#!/usr/bin/env bash
# Fill the wheelhouse an image is built from: `make wheels HW=cpu|nvidia|rocm`.
#
#   build/wheels/<hw>/          every wheel of docker/<hw>/requirements.lock, hash-checked
#   build/wheels/<hw>-harness/  the harness's own wheel and harness.lock (its sha256)
#
# This is the only step that needs the network; `make image` then builds with none.
set -euo pipefail
cd "$(dirname "$0")/.."

hw="${1:?usage: scripts/wheels.sh cpu|nvidia|rocm}"
python="${PYTHON:-.venv/bin/python}"
lock="docker/${hw}/requirements.lock"
SETUPTOOLS_VERSION="84.2.1"  # builds the harness wheel; needs pip >= 25.3 (--build-constraint)
deps="build/wheels/${hw}"
own="build/wheels/${hw}-harness"
[[ -f "$lock" ]] || { echo "error: no $lock (known: cpu, nvidia, rocm)" >&2; exit 2; }

# The wheels are for the image's CPython and glibc, which the lock's header names.
read -r -a target <<<"$(sed -n 's/^# pip-target: //p' "$lock")"
[[ ${#target[@]} -gt 0 ]] || { echo "error: $lock has no '# pip-target:' line" >&2; exit 2; }

# Only the package index: never a local wheel folder that pip may be configured with.
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_EXTRA_INDEX_URL PIP_NO_INDEX

mkdir -p "$deps"
"$python" -m pip download --quiet --no-deps --require-hashes "${target[@]}" \
  --dest "$deps" -r "$lock"

# Drop wheels an earlier lock left behind, so the build context holds the lock and no more.
for wheel in "$deps"/*.whl; do
  grep -qxF "# $(basename "$wheel")" "$lock" || rm -f -- "$wheel"
done

# Digest the sources first: a file changed during the build then marks the wheel stale.
source="$("$python" -m harness.cli image source-digest)"
# setuptools builds in build/lib, where a deleted module would linger and ship: start clean.
rm -rf "$own" build/lib build/bdist.*
mkdir -p "$own"
# The build backend is pinned (within pyproject's build-system range, setuptools>=68): an
# unpinned one would let the same sources give a different wheel, and harness.lock's sha256.
log="$(mktemp)"
constraint="$(mktemp)"
printf 'setuptools==%s\n' "$SETUPTOOLS_VERSION" >"$constraint"
"$python" -m pip wheel --quiet --no-deps --build-constraint "$constraint" \
  --wheel-dir "$own" . >"$log" 2>&1 \
  || { cat "$log" >&2; rm -f "$log" "$constraint"; exit 1; }
rm -f "$log" "$constraint"
wheel="$(ls "$own"/beyond_tops-*.whl)"
version="$(basename "$wheel" | cut -d- -f2)"
sha="$(sha256sum "$wheel" | cut -d' ' -f1)"
printf '# source-sha256: %s\nbeyond-tops==%s \\\n    --hash=sha256:%s\n' \
  "$source" "$version" "$sha" >"$own/harness.lock"

echo "wheelhouse: $deps ($(find "$deps" -name "*.whl" | wc -l) wheels, $(du -sh "$deps" | cut -f1)); $wheel"
