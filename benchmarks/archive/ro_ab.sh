#!/bin/bash
# Needs the base tree unpacked at outputs/base (git archive af89be1 | tar -x -C outputs/base), carried to the GPU machine with this repository (the device tool's carry).
# run-overhead A/B on one GPU: the base tree (af89be1) and this tree, 3-point, interleaved
ROOT=$(pwd)
for round in 1 2; do
  for tree in base new; do
    if [ $tree = base ]; then cd $ROOT/outputs/base; else cd $ROOT; fi
    mkdir -p $OUT/$tree$round
    PYTHONPATH=. timeout 200 python -m benchmarks run-overhead --input inputs/h2plus_moving_large.toml --backend cupy --n 8192 --stencils 3 --steps 40000 --populations-every 50 --repeat 1 --out $OUT/$tree$round > $OUT/$tree$round/log 2>&1
    echo "$tree$round: $(tail -2 $OUT/$tree$round/log | head -1)"
  done
done
