#!/usr/bin/env bash
# One prepared GPU check, for a machine with CUDA and torch already installed
# (no internet needed): the CUDA tests, the demo with its trace and plot, and
# the benchmark suite. Writes everything under ${OUT:-gpu-check}/.
#
#     PYTHONPATH=src bash bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check}"
mkdir -p "$out"
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python - <<'PY' 2>&1 | tee "$out/devices.txt"
import torch, autopar
print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())
PY
python -m autopar devices 2>&1 | tee -a "$out/devices.txt"
python -m pytest -q -m cuda tests/test_cuda.py 2>&1 | tee "$out/cuda-tests.txt"
python -m pytest -q -x tests/test_engine.py tests/test_ops.py tests/test_differential.py 2>&1 | tail -3 | tee "$out/core-tests.txt"
python -m autopar demo --trace "$out/demo.json" --plot "$out/demo.png" 2>&1 | tee "$out/demo.txt"
python -m autopar bench --json "$out/bench.json" 2>&1 | tee "$out/bench.txt"
