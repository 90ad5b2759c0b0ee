#!/usr/bin/env bash
# Device run (4 x H200): all GPU tests (engine, expm, TDSE, operator/Floquet), the matrix
# exponent benchmark against torch/jax/cupyx, and the tile sweep against the model.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
L=$OUT/run.log
timeout 120 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
timeout 290 python3 -m mgemm.cli bench-expm --n 8192 --n 16384 --gpus 1 --gpus 2 --gpus 4 --repeat 2 \
  --json-out $OUT/expm_gpu.json >> $L 2>&1
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 160 python3 -m mgemm.cli tune --n 16384 --n 32768 --gpus 4 --gpus 2 --repeat 2 --min-tile 1024 \
  --plot $OUT/tune.png --json-out $OUT/tune.json >> $L 2>&1
grep -E "^ *(8192|16384) |model refined|failed" $L
