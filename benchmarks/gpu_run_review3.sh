#!/usr/bin/env bash
# Device run (4 x H200) after the review of the 3m change: all GPU tests, and a short
# engine benchmark (N = 16384, 4 GPUs, native and 3m) to check nothing slowed down.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 90 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
timeout 70 python3 -m mgemm.cli bench --n 16384 --gpus 4 --placement three --complex-method native --complex-method 3m \
  --repeat 3 --no-xt --no-jax --json-out $OUT/gemm.json > $OUT/bench.log 2>&1
grep -v "^N=" $OUT/bench.log | tail -5
