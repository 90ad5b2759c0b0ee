#!/usr/bin/env bash
# Device run (4 x H200): rows per GPU balanced from a traced run (mgemm.balance) -- the
# GPU tests of unequal shares, then N = 32768 on 4 and 2 GPUs, native and 3m, both
# placements, each with equal rows and balanced rows (no XT/JAX baselines: they do not use mgemm).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 100 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -k "shares or balance" -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
for g in 4 2; do
  timeout 260 python3 -m mgemm.cli bench --n 32768 --gpus $g --complex-method native --complex-method 3m \
    --repeat 3 --no-xt --no-jax --balance $( [ $g = 4 ] && echo --timeline $OUT/timeline.png ) \
    --json-out $OUT/gemm_g$g.json > $OUT/bench_g$g.log 2>&1
  grep -v "^N=" $OUT/bench_g$g.log | tail -10
done
