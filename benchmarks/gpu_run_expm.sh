#!/usr/bin/env bash
# Device run (4 x H200): the matrix exponent against torch/jax/cupyx, the TDSE step time
# on 1/2/4 GPUs and the large input on 4 GPUs.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
L=$OUT/run.log
timeout 300 python3 -m mgemm.cli bench-expm --n 8192 --n 16384 --gpus 1 --gpus 2 --gpus 4 --repeat 2 \
  --json-out $OUT/expm_gpu.json >> $L 2>&1
timeout 80 python3 benchmarks/bench_tdse_gpu.py --gpus 1 2 4 --steps 5 --out $OUT >> $L 2>&1
timeout 190 python3 -m tdse.cli run inputs/h2plus_moving_large.toml --backend cupy --devices 0,1,2,3 \
  --out $OUT/large --no-plots > $OUT/large_run.log 2>&1
tail -c 600 $OUT/large_run.log
grep -E "^ *(8192|16384) |s/step|saved|failed" $L
