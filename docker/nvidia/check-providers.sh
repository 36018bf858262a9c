#!/bin/sh
# Whether onnxruntime-gpu's provider libraries can load in this image: every library that
# `ldd` reports "not found" for libonnxruntime_providers_{shared,cuda,tensorrt}.so is named,
# and the exit status is 1. The nvidia Dockerfile runs it so that a base image without the
# CUDA, cuDNN or TensorRT libraries the wheel was built against fails the build, not the
# benchmark; scripts/gpu-check.sh runs it again in the built image.
#
#   check-providers.sh [CAPI_DIR]    default: the onnxruntime/capi directory of `python`
set -eu

capi="${1:-}"
if [ -z "$capi" ]; then
  # find_spec locates the package without importing it (an import could fail for other reasons).
  capi="$(python -c 'import importlib.util as u, pathlib as p
print(p.Path(u.find_spec("onnxruntime").origin).parent / "capi")')"
fi
# The driver's libraries are not in any image: the NVIDIA Container Toolkit mounts the host's
# into the container at run time.
from_host="libcuda.so.1 libnvidia-ml.so.1"

status=0
all_missing=""
for name in libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so \
  libonnxruntime_providers_tensorrt.so; do
  lib="$capi/$name"
  if [ ! -f "$lib" ]; then
    echo "$lib: no such file; is onnxruntime-gpu (not onnxruntime) installed?"
    status=1
    continue
  fi
  if ! report="$(ldd "$lib" 2>&1)"; then
    echo "$lib: ldd failed: $report"
    status=1
    continue
  fi
  missing=""
  for dep in $(printf '%s\n' "$report" | awk '/=> not found/ { print $1 }' | sort -u); do
    case " $from_host " in
      *" $dep "*) ;;
      *) missing="$missing $dep" ;;
    esac
  done
  if [ -n "$missing" ]; then
    echo "$name cannot load, not found:$missing"
    all_missing="$all_missing$missing"
    status=1
  else
    echo "$name: every library found"
  fi
done
if [ -n "$all_missing" ]; then
  # shellcheck disable=SC2086  # one library name per word, by construction
  echo "onnxruntime-gpu's providers cannot load here; not found: $(printf '%s\n' $all_missing | sort -u | xargs)"
fi
exit "$status"
