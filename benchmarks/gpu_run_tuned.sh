#!/usr/bin/env bash
# Device run (2 x H200): a fresh profile (tile rates at K = 32768 and 3m's batched plane
# curve), `mgemm tune --save` for native and 3m at N = 32768, then `mgemm bench` at
# tile auto (now the tuned tiles) with cuBLAS-XT, JAX and the timelines, both placements.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
export MGEMM_PROFILE=$OUT/profile.json
G=${G:-2}
{
timeout 200 python3 -m mgemm.cli probe --out $MGEMM_PROFILE
for cm in native 3m; do
  timeout 150 python3 -m mgemm.cli tune --n 32768 --gpus $G --complex-method $cm --min-tile 1024 \
    --repeat 2 --save --json-out $OUT/tune_$cm.json
done
timeout 400 python3 -m mgemm.cli bench --n 32768 --gpus $G --placement three --placement one \
  --tile auto --complex-method native --complex-method 3m --repeat 3 \
  --timeline $OUT/timeline.png --json-out $OUT/gemm.json
} > $OUT/run.log 2>&1
grep -E "tile rates|measured best|written|^ *N |^ *32768" $OUT/run.log | tail -30
