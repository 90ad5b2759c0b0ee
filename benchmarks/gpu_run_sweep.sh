#!/usr/bin/env bash
# Device run (4 x H200): GPU tests of the schedule knobs, then the 3m schedule variants
# (plane copies, taller A bands, balanced rows) at N = 32768 on 4 and 2 GPUs.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 120 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -k "3m or shares or balance" -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
timeout 200 python3 benchmarks/sweep_3m.py --n 32768 --gpus 4 --out $OUT/sweep_g4.json > $OUT/sweep_g4.log 2>&1
timeout 150 python3 benchmarks/sweep_3m.py --n 32768 --gpus 2 --only "native,3m none,3m first,3m rows4096 first" --out $OUT/sweep_g2.json > $OUT/sweep_g2.log 2>&1
tail -9 $OUT/sweep_g4.log; tail -5 $OUT/sweep_g2.log
