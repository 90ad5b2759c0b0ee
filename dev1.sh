#!/bin/bash
export PYTHONPATH=.
mkdir -p $OUT/r
timeout 120 python -m benchmarks gpu-tests --files tests/test_gpu.py --out $OUT/r 2>&1 | tail -2
timeout 220 python -m benchmarks run-overhead --input inputs/h2plus_moving_large.toml --n 8192 --stencils 3 --backend cupy --steps 60000 --populations-every 50 250 --repeat 2 --no-companion --out $OUT/r 2>&1 | tail -3
TDSE_CONTEXT_SWITCH=0 timeout 200 python -m benchmarks run-overhead --input inputs/h2plus_moving_large.toml --n 8192 --stencils 3 --backend cupy --steps 60000 --populations-every 50 --repeat 2 --no-companion --out $OUT/r 2>&1 | tail -1
cd $OUT/r && for f in run-overhead*.json; do :; done; tar czf ../all.tgz . && cd .. && rm -rf r
