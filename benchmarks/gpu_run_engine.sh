#!/usr/bin/env bash
# Device run (4 x H200): all GPU tests, the hardware probe, the tile sweep against the
# model, and the 4-GPU engine with band copies pushed by the sender.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false
L=$OUT/run.log
timeout 200 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -3 $OUT/gpu_tests.log
timeout 90 python3 -m mgemm.cli probe --out $OUT/profile.json >> $L 2>&1
timeout 220 python3 -m mgemm.cli tune --n 16384 --n 32768 --gpus 4 --gpus 2 --repeat 2 \
  --profile $OUT/profile.json --plot $OUT/tune.png --json-out $OUT/tune.json >> $L 2>&1
timeout 80 python3 -m mgemm.cli bench --n 32768 --gpus 4 --placement three --tile 2048 --tile 8192 \
  --complex-method native --no-xt --copy-side src --repeat 2 --json-out $OUT/bench_src.json >> $L 2>&1
grep -v "^N=.*tile=.*TFLOP/s (model" $L | tail -30
grep "model refined" $L
