#!/usr/bin/env bash
# Device run (2 x H200) after the review of the shares/plane-copy change (executors share
# their planning, calibrate helper): every GPU test the machine can run, then N = 32768 on
# 2 GPUs, placement (ii), native and 3m at the auto tile and 4096, equal and balanced rows,
# with the timelines (equal and balanced).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 100 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
timeout 300 python3 -m mgemm.cli bench --n 32768 --gpus 2 --placement three --tile auto --tile 4096 \
  --complex-method native --complex-method 3m --repeat 3 --no-xt --no-jax --balance \
  --timeline $OUT/timeline.png --json-out $OUT/gemm.json > $OUT/bench.log 2>&1
grep -v "^N=" $OUT/bench.log | tail -12
