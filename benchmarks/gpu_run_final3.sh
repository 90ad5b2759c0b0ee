#!/usr/bin/env bash
# Device run (4 x H200) after storing 3m's B3 band by band (contiguous band sends): every
# GPU test, then N = 32768 on 2 and 4 GPUs, both placements, native and 3m at the auto tile
# and 4096, with the timelines (cuBLAS-XT / JAX: gpu_run_final2.sh, same session).
# GPUS="--gpus 2" runs 2 GPUs only (on a 2-GPU machine).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 100 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
timeout 330 python3 -m mgemm.cli bench --n 32768 ${GPUS:---gpus 2 --gpus 4} --tile auto --tile 4096 \
  --complex-method native --complex-method 3m --repeat 3 --no-xt --no-jax --timeline $OUT/timeline.png \
  --json-out $OUT/gemm.json > $OUT/bench.log 2>&1
grep -v "^N=" $OUT/bench.log | tail -20
