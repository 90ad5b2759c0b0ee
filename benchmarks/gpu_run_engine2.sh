#!/usr/bin/env bash
# Device run (4 x H200) after switching band copies to the sender's streams: GPU tests,
# probe (with tile-shape GEMM rates), tile sweep vs the model, engine benchmark + baselines.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
L=$OUT/run.log
timeout 100 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
timeout 80 python3 -m mgemm.cli probe --out $OUT/profile.json >> $L 2>&1
export MGEMM_PROFILE=$OUT/profile.json
timeout 170 python3 -m mgemm.cli tune --n 16384 --n 32768 --gpus 4 --gpus 2 --repeat 2 --min-tile 1024 \
  --plot $OUT/tune.png --json-out $OUT/tune.json >> $L 2>&1
timeout 220 python3 -m mgemm.cli bench --n 16384 --n 32768 --gpus 2 --gpus 4 --repeat 2 \
  --complex-method native --complex-method 3m --timeline $OUT/timeline.png --json-out $OUT/gemm.json >> $L 2>&1
grep -E "tile rates|under GEMM|model refined|^ *[0-9]+ (mgemm|cublas|cupy)" $L | tail -40
