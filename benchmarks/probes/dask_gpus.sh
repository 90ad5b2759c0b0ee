#!/bin/bash
# The scan on one GPU in process, then on every GPU of this machine through a running Dask
# cluster (a scheduler and one single-threaded worker per GPU, each seeing its own GPU by
# CUDA_VISIBLE_DEVICES: what dask-cuda's LocalCUDACluster does, without its install).
# Device probe: [BATCH=b] bash benchmarks/probes/dask_gpus.sh OUT [members...]
# BATCH: members per Dask task (default: the members split evenly over the GPUs, one task each;
# a smaller batch gives a worker several tasks, so one batch's result travels while the next runs)
# PROFILE: the workers' statistical profiler (Dask's distributed.worker.profile.enabled;
# default True, Dask's own default: a thread sampling the task's stack every 10 ms)
set -u
OUT=$1; shift
MEMBERS=${*:-1000}
SITE=/tmp/site
pip install -q --no-index --no-deps --target $SITE .wheels/*.whl 2>&1 | tail -1
export PYTHONPATH=$PWD:$SITE
NGPU=$(nvidia-smi -L | wc -l)
python -m distributed.cli.dask_scheduler --port 8786 --no-dashboard > $OUT/scheduler.log 2>&1 &
sleep 4
for g in $(seq 0 $((NGPU - 1))); do
  DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=${PROFILE:-True} \
  CUDA_VISIBLE_DEVICES=$g python -m distributed.cli.dask_worker tcp://127.0.0.1:8786 \
      --nworkers 1 --nthreads 1 --memory-limit 0 --no-dashboard > $OUT/worker$g.log 2>&1 &
done
sleep 8
for m in $MEMBERS; do
  CUDA_VISIBLE_DEVICES=0 python -m benchmarks scan --backend cupy --members $m --out $OUT 2>&1 | tail -1   # one GPU, in process
  python -m benchmarks scan --backend cupy --members $m --batch ${BATCH:-$(( (m + NGPU - 1) / NGPU ))} \
      --scheduler tcp://127.0.0.1:8786 --gpus $NGPU --out $OUT 2>&1 | tail -1
done
python - "$OUT" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/scan_*.json")):
    r = json.load(open(f))["rows"][0]
    print(f"{r['members']:6d} members  gpus {r.get('gpus') or 1}  batches {r['batches']}  "
          f"scan {r['scan_seconds']:.2f} s  serial {r['serial_seconds_each']:.2f} s  "
          f"max rel diff {r['max_rel_diff_acceleration']:.1e}  "
          f"batches' own seconds {[round(b, 2) for b in (r.get('batch_seconds') or [])]}")
PY
kill $(jobs -p) 2>/dev/null; wait   # the scheduler and workers started here
