#!/usr/bin/env bash
# Device run (4 x H200): the sources split before they compute (start pacing), tile 4096
# against 2048 and taller A bands for 3m, and the B source moved to another GPU (is the
# late lane the role or the chip?), N = 32768 on 4 and 2 GPUs.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
S="python3 benchmarks/sweep_3m.py --n 32768"
timeout 100 $S --gpus 4 --only "native,3m first,3m t4096 first,3m t4096 all,3m rows4096 first" --out $OUT/sweep_g4.json > $OUT/sweep_g4.log 2>&1
timeout 60 $S --gpus 4 --roles 0,3,2 --only "native,3m t4096 first" --out $OUT/sweep_g4_b3.json > $OUT/sweep_g4_b3.log 2>&1
timeout 100 $S --gpus 2 --only "native,3m first,3m t4096 first,3m rows4096 first" --out $OUT/sweep_g2.json > $OUT/sweep_g2.log 2>&1
timeout 70 $S --gpus 2 --roles 1,0,1 --only "native,3m t4096 first" --out $OUT/sweep_g2_swap.json > $OUT/sweep_g2_swap.log 2>&1
timeout 100 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -k "3m or shares or balance" -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
for f in g4 g4_b3 g2 g2_swap; do echo "== $f"; grep -v "^variant\|^native  \|^3m  " $OUT/sweep_$f.log | grep TFLOP | cut -c1-200; done
tail -1 $OUT/gpu_tests.log
