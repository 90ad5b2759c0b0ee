#!/usr/bin/env bash
# Device run (4 x H200), quick: the fused-3m GPU tests and a small bench with the JAX baseline.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 150 python3 -m pytest -q -x -m "gpu or multi_gpu" tests/test_gpu.py -k "3m or complex_methods or trace" -p no:cacheprovider > $OUT/gpu_tests_3m.log 2>&1
tail -25 $OUT/gpu_tests_3m.log
timeout 200 python3 -m mgemm.cli bench --n 8192 --gpus 1 --gpus 2 --gpus 4 --placement three \
  --complex-method native --complex-method 3m --repeat 2 --json-out $OUT/smoke.json \
  --timeline $OUT/tl8192.png > $OUT/smoke.log 2>&1
tail -30 $OUT/smoke.log
