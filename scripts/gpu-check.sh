#!/usr/bin/env bash
# The GPU-side checks CI cannot run: on a real NVIDIA machine, with Docker and the NVIDIA
# Container Toolkit, after `make wheels HW=nvidia`. Prints what it saw; exits non-zero on any
# failure.
#
#   scripts/gpu-check.sh [SUITE]     SUITE defaults to smoke (the tiny model, seconds per run)
#
# 1. the host's GPUs and driver (nvidia-smi)
# 2. Docker and its NVIDIA container runtime
# 3. the nvidia image for this commit, built if missing, and its labels
# 4. inside it: the GPUs, the CUDA/cuDNN/TensorRT libraries, the providers onnxruntime
#    really gives a session, `harness fingerprint` and `harness doctor`
# 5. the suite on HW=nvidia, and the providers each run recorded
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
SUITE="${1:-smoke}"
results="$(mktemp -d)"

section() { printf '\n== %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

section "1. host GPUs"
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: install the NVIDIA driver"
nvidia-smi
nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv

section "2. Docker and the NVIDIA container runtime"
"$PYTHON" - <<'EOF' || fail "Docker cannot hand GPUs to containers (see above)"
import sys

from harness import container
from harness.errors import HarnessError

try:
    client = container.connect()
    version = client.version()
    runtimes = sorted(client.info().get("Runtimes") or {})
    print(f"Docker {version['Version']} (API {version['ApiVersion']}), runtimes: {', '.join(runtimes)}")
    container.check_nvidia_runtime(client)
except HarnessError as exc:
    sys.exit(f"error: {exc}")
EOF

section "3. the nvidia image"
read -r image_id image_tag < <("$PYTHON" -m harness.container ensure --hw nvidia | tail -n 1) \
  || fail "no nvidia image (run \`make wheels HW=nvidia\` first?)"
echo "image $image_tag ($image_id)"
docker image inspect --format '{{range $k, $v := .Config.Labels}}{{printf "  %s=%s\n" $k $v}}{{end}}' \
  "$image_id"

section "4. inside the image"
in_image() { docker run --rm -i --gpus all --entrypoint "" "$image_id" "$@"; }
in_image nvidia-smi -L || fail "the container sees no GPU"
in_image sh -c 'ldconfig -p | grep -E "libcudart\.so\.|libcublas\.so\.|libcudnn\.so\.|libnvinfer\.so\." | sort' \
  || fail "CUDA/cuDNN/TensorRT libraries missing in the image"
in_image python - <<'EOF' || fail "onnxruntime does not run on the GPU"
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

print("onnxruntime", ort.__version__, "available:", ", ".join(ort.get_available_providers()))
graph = helper.make_graph(
    [helper.make_node("Add", ["x", "x"], ["y"])],
    "gpu-check",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
failed = False
for chain in (["TensorrtExecutionProvider", "CPUExecutionProvider"],
              ["CUDAExecutionProvider", "CPUExecutionProvider"]):
    session = ort.InferenceSession(model, providers=chain)
    used = session.get_providers()
    out = session.run(None, {"x": np.ones((1, 4), np.float32)})[0]
    ok = used[0] == chain[0] and out.tolist() == [[2.0] * 4]
    failed |= not ok
    print(f"{'ok  ' if ok else 'FAIL'} asked {chain[0]}, session uses {', '.join(used)}")
sys.exit(1 if failed else 0)
EOF
in_image harness fingerprint --hw nvidia || fail "harness fingerprint failed"
in_image harness doctor --hw nvidia || fail "harness doctor found a problem"

section "5. the $SUITE suite on HW=nvidia"
status=0
"$PYTHON" -m harness.container bench --hw nvidia --suite "$SUITE" --image "$image_tag" \
  --results "$results" || status=$?
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
    providers = result.get("providers") or []
    image = (result.get("image") or {}).get("id")
    gpu = bool(providers) and providers[0] in ("TensorrtExecutionProvider", "CUDAExecutionProvider")
    print(f"{path.parent.relative_to(runs)}: valid={result.get('valid')} providers={', '.join(providers)} image={image}")
    bad += (not gpu) + (image != image_id)
sys.exit(1 if bad else 0)
EOF
[[ $status -eq 0 ]] || fail "harness bench exited $status"
section "all GPU checks passed; runs in $results"
