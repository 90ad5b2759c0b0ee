#!/bin/bash
# Needs the base tree unpacked at outputs/base (git archive af89be1 | tar -x -C outputs/base), carried to the GPU machine with this repository (the device tool's carry).
# A/B on one GPU: the same runs from the base tree (af89be1) and this tree, files compared
# bit for bit; then the GPU test suite on this tree.
ROOT=$(pwd)
run_all() {  # $1 tree, $2 out
  cd "$1"
  export PYTHONPATH=.
  F="field.E0=0.05"
  python -m tdse run $ROOT/inputs/tiny.toml --backend cupy --out $2/t3 -q --no-plots --force --set propagator.method=chebyshev > $2/log_t3 2>&1
  python -m tdse run $ROOT/inputs/tiny.toml --backend cupy --out $2/tdvr -q --no-plots --force --set propagator.method=chebyshev --set grid.stencil=dvr --set output.observables_every=1 > $2/log_tdvr 2>&1
  python -m tdse run $ROOT/inputs/tiny.toml --backend cupy --out $2/tdense -q --no-plots --force --set propagator.method=dense --set grid.stencil=dvr --set output.observables_every=1 > $2/log_tdense 2>&1
  python -m tdse run $ROOT/inputs/h2plus_moving_large.toml --backend cupy --out $2/large -q --no-plots --force --set time.t_end=0.2 --set propagator.method=chebyshev --set output.observables_every=1 > $2/log_large 2>&1
  python -m tdse run $ROOT/inputs/atom_hhg.toml --backend cupy --out $2/hhg -q --no-plots --force --set time.t_end=5 > $2/log_hhg 2>&1
  python -m tdse scan $ROOT/inputs/tiny.toml --backend cupy --out $2/scan -q --force --set potential.a=0.2:0.6:40 > $2/log_scan 2>&1
  python -m tdse scan $ROOT/inputs/tiny.toml --backend cupy --out $2/scan2 -q --force --set potential.a=0.2:0.6:3 > $2/log_scan2 2>&1
  cd $ROOT
}
mkdir -p $OUT/base $OUT/new
t0=$(date +%s)
run_all $ROOT/outputs/base $OUT/base
t1=$(date +%s)
run_all $ROOT $OUT/new
t2=$(date +%s)
echo "base $((t1-t0)) s, new $((t2-t1)) s"
python benchmarks/archive/ab_compare.py $OUT/base $OUT/new | tee $OUT/compare.txt
PYTHONPATH=. timeout 300 python -m benchmarks gpu-tests --files tests/test_gpu.py --out $OUT > $OUT/gpu_tests.log 2>&1
tail -5 $OUT/gpu_tests.log
