#!/usr/bin/env bash
# Device run (2 x H200) for 3m's batched plane GEMMs (one strided-batched DGEMM per tile):
# every GPU test that fits the machine, then N = 32768 on 2 GPUs, both placements: native at
# tiles 1024 / 2048 against 3m at 2048 / 4096 with and without batching, and taller A bands.
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export MGEMM_PROFILE=benchmarks/results/profile_h200x4.json
timeout 150 python3 -m pytest -q -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
tail -1 $OUT/gpu_tests.log
V="native,native t2048,3m all,3m all single,3m t4096 all,3m t4096 all single,3m t4096 rows8192"
for pl in three one; do
  timeout 200 python3 benchmarks/sweep_3m.py --n 32768 --gpus ${G:-2} --placement $pl --repeat 3 \
    --only "$V" --out $OUT/sweep_$pl.json > $OUT/sweep_$pl.log 2>&1
  tail -9 $OUT/sweep_$pl.log
done
