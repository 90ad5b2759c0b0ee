#!/usr/bin/env bash
# Device run (4 x H200): 3m with paced splits -- the 3m/engine GPU tests, then N = 32768 on
# 2 and 4 GPUs, native and 3m, both placements (no baselines: measured in gpu_run_3m.sh final).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 90 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -k "3m or four or two or one_gpu" -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
timeout 200 python3 -m mgemm.cli bench --n 32768 --gpus 2 --gpus 4 --complex-method native --complex-method 3m \
  --repeat 3 --no-xt --no-jax --timeline $OUT/timeline.png --json-out $OUT/gemm.json > $OUT/bench.log 2>&1
grep -v "^N=" $OUT/bench.log | tail -12
