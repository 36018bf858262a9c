#!/usr/bin/env bash
# The GPU checks for an NVIDIA machine without Docker (RUNNER=local): it needs nvidia-smi,
# Python, and a venv holding this project with nvidia-ml-py and onnxruntime-gpu; TensorRT may
# be absent. Each step's output goes into OUT_DIR, to be committed as fixtures; a failed step is
# recorded and the others still run; the exit status is 1 if any step failed.
#
#   scripts/gpu-local-check.sh OUT_DIR [SUITE...]    SUITEs default to: smoke quick
#
#   status.tsv                      each step, its exit code and its output file
#   nvidia-smi.txt                  the host's GPUs and driver
#   environment.txt                 Python, onnxruntime and NVIDIA packages, providers
#   provider-libraries.txt          ldd of onnxruntime's provider libraries: what cannot load
#   cuda-placement.txt              CUDAExecutionProvider alone owns every node of a test model
#   fingerprint.txt, .json          `harness fingerprint --hw nvidia`
#   doctor.txt                      `harness doctor --hw nvidia`
#   telemetry-gemm/                 scripts/gpu_load_telemetry.py: NVML over a PyTorch GEMM load
#   bench-SUITE.txt, runs/          `harness bench SUITE --hw nvidia` and its run directories
#   llm-*.txt, runs/                generative models on onnxruntime-genai-cuda: llm-tiny Offline
#                                   and Server, then llama3.1-8b's dims at FP16 Offline and Server
#                                   (built here, on the GPU machine: 32 GB of FP32 weights first,
#                                   so it needs about 50 GB of disk and 40 GB of memory);
#                                   LLM=0 leaves them out
#
# The suites run on TensorRT then CUDA where TensorRT's libraries load, else on CUDA alone
# (`--providers CUDAExecutionProvider`); PROVIDERS=... chooses for you. Each run records the
# chain it used in result.json.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
HARNESS="$(dirname "$PYTHON")/harness"

usage="usage: scripts/gpu-local-check.sh OUT_DIR [SUITE...]"
out="${1:?$usage}"
shift
suites=("$@")
((${#suites[@]})) || suites=(smoke quick)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: install the NVIDIA driver"
[[ -x "$PYTHON" && -x "$HARNESS" ]] \
  || fail "$PYTHON or $HARNESS missing: make venv, then .venv/bin/pip install onnxruntime-gpu nvidia-ml-py"
if [[ -e "$out" && -n "$(ls -A "$out")" ]]; then
  fail "$out is not empty: give a new directory, so that fixtures from two runs never mix"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
printf 'step\texit\toutput\n' >"$out/status.tsv"
failed=()

# step NAME FILE COMMAND...: show and save the command's output; record its exit code.
step() {
  local name="$1" file="$2" code=0
  shift 2
  printf '\n== %s\n' "$name"
  "$@" 2>&1 | tee "$out/$file" || code=${PIPESTATUS[0]}
  printf '%s\t%s\t%s\n' "$name" "$code" "$file" >>"$out/status.tsv"
  ((code == 0)) || failed+=("$name")
}

# stdout_step NAME FILE COMMAND...: the same, for output that must stay clean (JSON).
stdout_step() {
  local name="$1" file="$2" code=0
  shift 2
  printf '\n== %s\n' "$name"
  "$@" >"$out/$file" || code=$?
  printf '%s\t%s\t%s\n' "$name" "$code" "$file" >>"$out/status.tsv"
  ((code == 0)) || failed+=("$name")
}

gpus() {
  nvidia-smi \
    && nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv
}

environment() {
  "$PYTHON" - <<'EOF'
import os
import platform
import sys
from importlib import metadata

import onnxruntime as ort

print(f"python {sys.version.split()[0]} on {platform.platform()}")
names = sorted({
    f"{d.metadata['Name']}=={d.version}"
    for d in metadata.distributions()
    if d.metadata["Name"].lower().startswith(("onnxruntime", "nvidia", "tensorrt", "beyond-tops"))
})
print("packages:", ", ".join(names) or "none")
print("onnxruntime providers:", ", ".join(ort.get_available_providers()))
for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "BEYOND_TOPS_CACHE"):
    print(f"{name}={os.environ.get(name, '')}")
import pynvml  # nvidia-ml-py: the harness's telemetry and fingerprint read the GPU through it

try:
    pynvml.nvmlInit()
except pynvml.NVMLError as exc:
    sys.exit(f"NVML: {exc}")
print("NVML driver", pynvml.nvmlSystemGetDriverVersion(), "GPUs", pynvml.nvmlDeviceGetCount())
EOF
}

provider_libraries() {
  local capi
  capi="$("$PYTHON" -c 'import importlib.util as u, pathlib as p
print(p.Path(u.find_spec("onnxruntime").origin).parent / "capi")')" || return 1
  sh docker/nvidia/check-providers.sh "$capi"
}

step "nvidia-smi" nvidia-smi.txt gpus
step "environment" environment.txt environment
step "provider libraries (ldd)" provider-libraries.txt provider_libraries
step "CUDA alone places every node" cuda-placement.txt \
  "$PYTHON" scripts/gpu_placement.py CUDAExecutionProvider
step "harness fingerprint" fingerprint.txt "$HARNESS" fingerprint --hw nvidia
stdout_step "harness fingerprint --json" fingerprint.json "$HARNESS" fingerprint --hw nvidia --json
step "harness doctor" doctor.txt "$HARNESS" doctor --hw nvidia
if "$PYTHON" -c "import torch" 2>/dev/null; then
  # NVML's energy counter against its integrated power, clocks and throttle reasons, under load.
  step "telemetry under a GEMM load" telemetry-gemm.txt \
    "$PYTHON" scripts/gpu_load_telemetry.py "$out/telemetry-gemm" --hw nvidia --seconds 60
else
  echo "note: PyTorch is not installed: no telemetry-under-load check" >&2
fi
if [[ -z "${PROVIDERS:-}" ]]; then
  PROVIDERS="TensorrtExecutionProvider,CUDAExecutionProvider"
  if grep -q "libonnxruntime_providers_tensorrt.so cannot load" "$out/provider-libraries.txt"; then
    PROVIDERS="CUDAExecutionProvider"
    echo "note: TensorRT's libraries are missing here: the suites run on CUDA alone" >&2
  fi
fi
for suite in "${suites[@]}"; do
  step "harness bench $suite ($PROVIDERS)" "bench-$suite.txt" \
    "$HARNESS" bench "$suite" --hw nvidia --providers "$PROVIDERS" --out "$out/runs"
done

if [[ "${LLM:-1}" != 0 ]]; then
  if "$PYTHON" -c "import onnxruntime_genai as og, sys; sys.exit(not og.is_cuda_available())"; then
    for name in llm-tiny-offline llm-tiny-server; do
      step "harness run $name (genai CUDA)" "$name.txt" \
        "$HARNESS" run "scenarios/$name.yaml" --hw nvidia --profile quick --out "$out/runs"
    done
    for name in llama3.1-8b-offline llama3.1-8b-server; do
      step "harness run $name fp16 (genai CUDA)" "$name-fp16.txt" \
        "$HARNESS" run "scenarios/$name.yaml" --hw nvidia --profile quick --precision fp16 \
        --out "$out/runs"
    done
  else
    step "onnxruntime-genai-cuda" llm-genai-cuda.txt \
      sh -c 'echo "onnxruntime-genai-cuda is not installed or finds no CUDA: pip install onnxruntime-genai-cuda==0.18.0" >&2; exit 1'
  fi
fi

printf '\n== summary (%s)\n' "$out/status.tsv"
column -t -s $'\t' "$out/status.tsv" 2>/dev/null || cat "$out/status.tsv"
if ((${#failed[@]})); then
  fail "${#failed[@]} step(s) failed: ${failed[*]}"
fi
echo "all local GPU checks passed; outputs in $out"
