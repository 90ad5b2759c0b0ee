#!/usr/bin/env bash
# Device run, part 1: GPU tests + a small benchmark (for the device tool; writes under $OUT).
set -u
export PYTHONPATH=. PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
nvidia-smi topo -m | head -8
python3 -c "import cupy; print('cupy', cupy.__version__, cupy.cuda.runtime.getDeviceCount())"
timeout 300 python3 -m pytest -q -x -m "gpu or multi_gpu" tests/test_gpu.py -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.log | tail -15
timeout 200 python3 -m mgemm.cli bench --n 4096 --n 8192 --gpus 1 --gpus 2 --gpus 4 --repeat 2 --timeline $OUT/timeline_small.png --json-out $OUT/gemm_small.json 2>&1 | tail -30
