#!/usr/bin/env bash
# Device run (4 x H200) after fusing 3m into the schedule and issuing tile by tile:
# the full engine benchmark (1/2/4 GPUs, both placements, native and 3m, cuBLAS-XT and
# JAX baselines, timelines), then a 3m tile sweep and the old issue order at N = 32768.
# Part "tests" runs all GPU tests instead.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
B="python3 -m mgemm.cli bench"
if [ "${1:-bench}" = final ]; then
  timeout 100 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
  tail -1 $OUT/gpu_tests.log
  timeout 380 $B --n 32768 --gpus 2 --gpus 4 --complex-method native --complex-method 3m \
    --repeat 3 --timeline $OUT/timeline.png --json-out $OUT/gemm.json > $OUT/bench.log 2>&1
  grep -v "^N=" $OUT/bench.log | tail -30
  exit 0
fi
if [ "${1:-bench}" = tests ]; then
  timeout 150 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
  tail -1 $OUT/gpu_tests.log
  exit 0
fi
timeout 290 $B --n 16384 --n 32768 --gpus 1 --gpus 2 --gpus 4 --complex-method native --complex-method 3m \
  --repeat 3 --timeline $OUT/timeline.png --json-out $OUT/gemm.json > $OUT/bench.log 2>&1
grep -v "^N=" $OUT/bench.log | tail -40
timeout 110 $B --n 32768 --gpus 4 --gpus 2 --placement three --complex-method 3m --tile 1024 --tile 2048 --tile 4096 \
  --repeat 3 --no-xt --no-jax --json-out $OUT/gemm_3m_tiles.json > $OUT/tiles.log 2>&1
grep -v "^N=" $OUT/tiles.log
timeout 70 $B --n 32768 --gpus 4 --placement three --complex-method native --complex-method 3m \
  --repeat 3 --no-xt --no-jax --interleave band --json-out $OUT/gemm_band.json > $OUT/band.log 2>&1
grep -v "^N=" $OUT/band.log
# (the first bench above hit its 290 s limit during cuBLAS-XT at N = 32768, 4 GPUs; its
#  N = 32768 rows are in the log only.  The "final" part below re-measures N = 32768 on 2
#  and 4 GPUs with every baseline and the timelines, after all GPU tests.)
