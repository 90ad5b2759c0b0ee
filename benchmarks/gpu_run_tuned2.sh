#!/usr/bin/env bash
# Device run (2 x H200) after run 20: the GPU tests, `mgemm tune --save` for 3m with A, B, C
# on one GPU (tuned tiles are now kept per placement), then `mgemm bench` at tile auto and
# 4096 on both placements with the timelines (cuBLAS-XT and JAX: run 20).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
cp benchmarks/results/profile_h200x2.json $OUT/profile.json
export MGEMM_PROFILE=$OUT/profile.json
timeout 150 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
{
timeout 150 python3 -m mgemm.cli tune --n 32768 --gpus 2 --complex-method 3m --placement one \
  --min-tile 1024 --repeat 2 --save --json-out $OUT/tune_3m_one.json
timeout 330 python3 -m mgemm.cli bench --n 32768 --gpus 2 --placement three --placement one \
  --tile auto --tile 4096 --complex-method native --complex-method 3m --repeat 3 --no-xt --no-jax \
  --timeline $OUT/timeline.png --json-out $OUT/gemm.json
} > $OUT/run.log 2>&1
grep -E "measured best|^ *N |^ *32768" $OUT/run.log | tail -20
