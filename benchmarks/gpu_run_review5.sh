#!/usr/bin/env bash
# Device run (2 x H200) after the review of the batched 3m change (one strided_gemm helper
# shared by the executor, the probe and kernels_3m.py; do_tile's two 3m branches merged):
# GPU tests, the probe (its 3m curve goes through the helper), a short kernels_3m.py, and
# mgemm bench at N = 32768, native tile 1024 vs 3m tile 4096, both placements.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
timeout 150 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
{
timeout 200 python3 -m mgemm.cli probe --out $OUT/profile.json
timeout 60 python3 benchmarks/kernels_3m.py --n 32768 --tiles 2048,4096 --rounds 1 --seconds 0.5 \
  --n-full 8192 --out $OUT/kernels.json
timeout 250 python3 -m mgemm.cli bench --n 32768 --gpus 2 --placement three --placement one \
  --tile 1024 --tile 4096 --complex-method native --complex-method 3m --repeat 3 --no-xt --no-jax \
  --json-out $OUT/gemm.json
} > $OUT/run.log 2>&1
grep -E "3m tile rates|^\| (2048|4096)|^ *N |^ *32768" $OUT/run.log | tail -16
