#!/bin/bash
export PYTHONPATH=.
mkdir -p $OUT/r
timeout 590 python -m benchmarks run-overhead --input inputs/h2plus_moving_large.toml --n 8192 --stencils ${ST:-3} --backend cupy --steps 150000 --populations-every 50 250 --repeat 2 --no-companion --out $OUT/r 2>&1 | tail -3
cd $OUT/r && tar czf ../all.tgz . && cd .. && rm -rf r
