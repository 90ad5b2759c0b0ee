#!/usr/bin/env bash
# Device run: GPU tests on 1/2/4 GPUs, then the engine benchmark with baselines and a timeline.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
timeout 240 python3 -m pytest -q -x -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -3 $OUT/gpu_tests.log
timeout 330 python3 -m mgemm.cli bench --n 16384 --n 32768 --gpus 2 --gpus 4 --repeat 2 --no-xt --complex-method native --complex-method 3m \
  --timeline $OUT/timeline_32768_4gpu.png --json-out $OUT/gemm_h200x4.json 2> $OUT/bench.log
tail -4 $OUT/bench.log
