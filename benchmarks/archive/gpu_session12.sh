export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
python -m pytest -q -m gpu tests/test_gpu.py -k "populations_every or device_observables or single_run_graph" 2>&1 | tail -3
python -m benchmarks run-overhead --backend cupy --input inputs/h2plus_moving_large.toml --n 8192 --stencils 3 5 dvr --steps 500 --populations-every 0 50 --out $OUT 2>&1 | tail -9
mkdir -p $OUT/ir
sed 's/^method = "chebyshev".*/method = "auto"/' inputs/h2plus_ir_large.toml > $OUT/ir/h2plus_ir_large_auto.toml
sed -i 's/^name = "h2plus_ir_large"/name = "h2plus_ir_large_auto"/' $OUT/ir/h2plus_ir_large_auto.toml
( time python -m tdse run inputs/h2plus_ir_large.toml --backend cupy --out $OUT/ir ) > $OUT/ir/run.log 2>&1
( time timeout 120 python -m tdse run $OUT/ir/h2plus_ir_large_auto.toml --backend cupy --no-plots --out $OUT/ir ) > $OUT/ir/auto.log 2>&1
tr '\r' '\n' < $OUT/ir/run.log | grep -v "it/s\]$\|step/s\]$" | tail -12
tr '\r' '\n' < $OUT/ir/auto.log | grep -v "step/s\]$" | grep -i "auto\|wrote\|real\|note" | tail -8
rm -f $OUT/ir/*.h5
