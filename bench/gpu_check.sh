#!/usr/bin/env bash
# One prepared GPU check, for a machine with CUDA and torch installed (no internet needed):
# the CUDA tests, the engine's stream, fault and differential tests, the demo with its trace
# and plot, the layer API and the book's chapters on GPUs, and the quick benchmark. It cannot hang:
# every step runs under `timeout`. tests/test_cuda.py includes the fault tests (a device-side assert
# that must fail the op and the device, not the process) and the no-synchronising-call tests
# (torch.cuda.set_sync_debug_mode("error")). Everything it writes goes under ${OUT:-gpu-check}/;
# summary.txt says which steps passed, failed or timed out. Exit status: 0 when all passed.
#
#     OUT=/tmp/out bash bench/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check}"
mkdir -p "$out"
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 AUTOPAR_EXIT_TIMEOUT=10
summary="$out/summary.txt"
: > "$summary"
failures=0

# step NAME SECONDS COMMAND...: run COMMAND with a time limit, its output in $out/NAME.txt
step() {
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS rc=0
    timeout --kill-after=10 "$limit" "$@" > "$out/$name.txt" 2>&1 || rc=$?
    local took=$((SECONDS - start)) line
    if [ "$rc" -eq 0 ]; then
        line="PASS     $name (${took} s)"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        line="TIMEOUT  $name: stopped after ${limit} s (see $name.txt)"
        failures=$((failures + 1))
    else
        line="FAIL     $name: exit $rc after ${took} s (see $name.txt)"
        failures=$((failures + 1))
    fi
    echo "$line" | tee -a "$summary"
}

step devices 20 python -c 'import torch, autopar, sys
print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())
sys.exit(0 if torch.cuda.is_available() else "no usable CUDA GPU")'
step devices-cli 20 python -m autopar devices
step cuda-tests 130 python -m pytest -q -rA -m cuda -p no:cacheprovider -o timeout=120 tests/test_cuda.py
step engine-tests 60 python -m pytest -q -x -p no:cacheprovider -o timeout=50 tests/test_engine.py \
    tests/test_streams.py tests/test_engine_faults.py tests/test_groups.py
step demo 35 python -m autopar demo --trace "$out/demo.json" --plot "$out/demo.png"
step bench 35 python -m autopar bench --quick --json "$out/bench.json"
step layers-cuda 60 python -m pytest -q -m cuda -p no:cacheprovider -o timeout=50 tests/test_layers_cuda.py
# the book's chapters on the GPUs (try_gpu names them) against plain PyTorch on the CPU: cuDNN's own
# (TF32) arithmetic may exceed the tests' 0.1% bound; the output says by how much
# autopar.capture on cuda:0: replay, and torch.compile with CUDA graphs (reduce-overhead), against eager
step capture-cuda 240 python -m pytest -q -rA -m cuda -p no:cacheprovider -o timeout=230 tests/test_capture.py
step d2l-chapters 90 python -m pytest -q -p no:cacheprovider -o timeout=80 tests/test_d2l_chapters.py

echo "$failures step(s) failed" | tee -a "$summary"
[ "$failures" -eq 0 ]
