#!/usr/bin/env bash
# The GPU-side checks CI cannot run: on a real NVIDIA machine with Docker and the NVIDIA
# Container Toolkit, after `make wheels HW=nvidia`. Prints what it saw; exits non-zero on any
# failure. Without Docker, use scripts/gpu-local-check.sh instead (RUNNER=local sends you there).
#
#   scripts/gpu-check.sh [SUITE]     SUITE defaults to smoke (the tiny model, seconds per run)
#
# 1. the host's GPUs and driver (nvidia-smi)
# 2. Docker, this commit's nvidia image (built if missing), and whether the daemon really starts
#    that image with the bench's own device request (`harness image gpus`: `--gpus all`
#    needs only the toolkit's hook, a CDI spec is the fallback)
# 3. inside the image, through its own entrypoint (NGC's sets up the driver and CUDA forward
#    compatibility): the GPUs, ldd of onnxruntime's provider libraries, where TensorRT and CUDA
#    really place every node (CPU fallback disabled, counted from a profile) and whether the
#    TensorRT engine and timing caches get written, `harness fingerprint` and `harness doctor`
# 4. the suite on HW=nvidia (`harness bench --runner docker`: each worker in the image): each
#    run's providers and image, and the engines it cached
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
SUITE="${1:-smoke}"
CACHE="${BEYOND_TOPS_CACHE:-$HOME/.cache/beyond-tops}"
results="$(mktemp -d)"

section() { printf '\n== %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

if [[ "${RUNNER:-docker}" == local ]]; then
  echo "RUNNER=local: this script checks the Docker path; run scripts/gpu-local-check.sh OUT_DIR" >&2
  exit 2
fi

section "1. host GPUs"
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: install the NVIDIA driver"
nvidia-smi
nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv

section "2. Docker, the nvidia image, and the GPUs through Docker"
"$PYTHON" - <<'EOF' || fail "Docker is not usable (see above)"
import sys

from harness.execution import images
from harness.errors import HarnessError

try:
    client = images.connect()
except HarnessError as exc:
    sys.exit(f"error: {exc}")
version, info = client.version(), client.info()
print(f"Docker {version['Version']} (API {version['ApiVersion']})")
print(f"  runtimes: {', '.join(sorted(info.get('Runtimes') or {}))}")
print(f"  CDI spec dirs: {', '.join(info.get('CDISpecDirs') or []) or 'none'}")
EOF
ensured="$("$PYTHON" -m harness.cli image ensure --hw nvidia)" \
  || fail "no nvidia image (run \`make wheels HW=nvidia\` first?)"
read -r image_id image_tag <<<"$(tail -n 1 <<<"$ensured")"
echo "image $image_tag ($image_id)"
docker image inspect --format '{{range $k, $v := .Config.Labels}}{{printf "  %s=%s\n" $k $v}}{{end}}' \
  "$image_id"
flags="$("$PYTHON" -m harness.cli image gpus --image "$image_tag")" \
  || fail "Docker cannot hand GPUs to containers (see above)"
read -r -a gpu_flags <<<"$flags"
echo "the daemon starts the image with the GPUs: docker run ${gpu_flags[*]}"

section "3. inside the image"
# No --entrypoint: the image's own (NGC's nvidia_entrypoint.sh) must run, as it does for `bench`.
in_image() { docker run --rm -i "${gpu_flags[@]}" "$image_id" "$@"; }
in_image nvidia-smi -L || fail "the container sees no GPU"
in_image sh /usr/local/bin/check-onnxruntime-providers \
  || fail "onnxruntime's provider libraries do not resolve in the image"
in_image python - TensorrtExecutionProvider CUDAExecutionProvider <scripts/gpu_placement.py \
  || fail "onnxruntime does not place every node on the GPU provider asked for"
in_image harness fingerprint --hw nvidia || fail "harness fingerprint failed"
in_image harness doctor --hw nvidia || fail "harness doctor found a problem"

section "4. the $SUITE suite on HW=nvidia"
status=0
"$PYTHON" -m harness.cli bench "$SUITE" --hw nvidia --runner docker --image "$image_tag" \
  --out "$results" --cache "$CACHE" || status=$?
"$PYTHON" - "$results" "$image_id" <<'EOF' || fail "the runs did not use the GPU image as expected"
import json
import sys
from pathlib import Path

runs, image_id = Path(sys.argv[1]), sys.argv[2]
paths = sorted(runs.rglob("result.json"))
if not paths:
    sys.exit("no result.json written")
bad = 0
for path in paths:
    result = json.loads(path.read_text())
    # CPUExecutionProvider is always listed last by onnxruntime; the first one must be a GPU's.
    providers = result.get("providers") or []
    image = (result.get("image") or {}).get("id")
    gpu = bool(providers) and providers[0] in ("TensorrtExecutionProvider", "CUDAExecutionProvider")
    print(f"{path.parent.relative_to(runs)}: valid={result.get('valid')} providers={', '.join(providers)} image={image}")
    bad += (not gpu) + (image != image_id)
sys.exit(1 if bad else 0)
EOF
engines="$(find "$CACHE/engines" -path '*tensorrt*' -type f \( -name '*.engine' -o -name '*.timing' \) 2>/dev/null)" || true
[[ -n "$engines" ]] || fail "no TensorRT engine or timing cache under $CACHE/engines"
echo "TensorRT caches on the host:"
while read -r file; do echo "  $file"; done <<<"$engines"
[[ $status -eq 0 ]] || fail "harness bench exited $status"
section "all GPU checks passed; runs in $results"
