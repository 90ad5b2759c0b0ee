#!/bin/bash
# The atom_hhg E0 scan on one GPU in process, then through a running Dask cluster on 2 and on
# 4 GPUs of this machine (a scheduler and one single-threaded worker per GPU, each seeing its
# own GPU by CUDA_VISIBLE_DEVICES: what dask-cuda's LocalCUDACluster does, without its
# install), every row on this one machine, members per task the same in every row.
# Device probe:  [GPUS="2 4"] [BATCH=1000] [LIMIT=300] bash benchmarks/archive/dask_gpus.sh OUT [members...]
#   members: the scan sizes (default 4000 8000), each on 1 GPU and on every count in GPUS
#   LIMIT:   seconds after which no new measurement starts (the rows done are kept)
#   KINDS:   the workers' start: "tdse" (default; DASK_CONFIG = tdse.studies.scan.worker_yaml(),
#            what docs/SCANS.md tells a user), "nanny" (the calm loop by environment variables,
#            the nanny's pre-spawn environment as Dask sets it: MALLOC_TRIM_THRESHOLD_=65536
#            and one BLAS thread), "plain" (the same, --no-nanny: no such environment)
#   BACKEND, EXTRA: for a dry run of this script on a CPU (BACKEND=numpy EXTRA="--t-end 5")
# Dask's wheels travel in the ignored .wheels/ (DEVELOPERS: Machines), made here by
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     --platform manylinux1_x86_64 -d .wheels dask distributed cloudpickle toolz partd locket fsspec \
#     msgpack sortedcontainers tblib zict tornado psutil PyYAML Jinja2 MarkupSafe
# (dask and distributed at this venv's version: 2026.8.0 on 2026-11-26); the "tdse" workers
# run with tdse.studies.scan.WORKER_CONFIG (no statistical profiler, a calm event loop, no
# heap trimming), as the clusters `tdse scan` starts do.
set -u
OUT=$1; shift
MEMBERS=${*:-4000 8000}
BATCH=${BATCH:-1000}
LIMIT=${LIMIT:-300}
SITE=/tmp/site
pip install -q --no-index --no-deps --target $SITE .wheels/*.whl 2>&1 | tail -1
export PYTHONPATH=$PWD:$SITE
NGPU=$(nvidia-smi -L | wc -l)
nvidia-smi -L > $OUT/gpus.txt
T0=$SECONDS
KINDS=${KINDS:-tdse}
port_of() { case $2 in nanny) echo $((8780 + $1));; plain) echo $((8790 + $1));; *) echo $((8770 + $1));; esac; }
python -c "from tdse.studies.scan import worker_yaml; print(worker_yaml())" > $OUT/tdse-workers.yaml
for K in $KINDS; do
for G in ${GPUS:-2 4}; do          # one cluster per GPU count, started at once, idle until used
  [ "$G" -le "$NGPU" ] || continue
  port=$(port_of $G $K)
  python -m distributed.cli.dask_scheduler --port $port --no-dashboard > $OUT/scheduler$G$K.log 2>&1 &
  sleep 2
  for g in $(seq 0 $((G - 1))); do
    if [ $K = tdse ]; then export DASK_CONFIG=$OUT/tdse-workers.yaml; else unset DASK_CONFIG
      export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL=1s \
        DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL=5s DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL=1s; fi
    CUDA_VISIBLE_DEVICES=$g \
      python -m distributed.cli.dask_worker tcp://127.0.0.1:$port --nworkers 1 --nthreads 1 \
      $([ $K = plain ] && echo --no-nanny) --memory-limit 0 --no-dashboard >> $OUT/workers$G$K.log 2>&1 &
    unset DASK_CONFIG DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL \
      DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL
  done
done
done
for K in $KINDS; do
for G in ${GPUS:-2 4}; do
  [ "$G" -le "$NGPU" ] || continue
  python -c "from dask.distributed import Client; c = Client('tcp://127.0.0.1:$(port_of $G $K)', timeout=60); c.wait_for_workers($G, timeout=90); print('$G workers up ($K)')"
done
done
for m in $MEMBERS; do
  [ $((SECONDS - T0)) -lt "$LIMIT" ] || { echo "LIMIT: $m members not run"; break; }
  CUDA_VISIBLE_DEVICES=0 timeout 200 python -m benchmarks scan --backend ${BACKEND:-cupy} --members $m \
      --batch $BATCH --out $OUT ${EXTRA:-} 2>&1 | tail -1                 # one GPU, in process
  for G in ${GPUS:-2 4}; do
    [ "$G" -le "$NGPU" ] || continue
    for K in $KINDS; do
      [ $((SECONDS - T0)) -lt "$LIMIT" ] || { echo "LIMIT: $m members on $G GPUs ($K) not run"; break 2; }
      timeout 200 python -m benchmarks scan --backend ${BACKEND:-cupy} --members $m --batch $BATCH ${EXTRA:-} \
          --scheduler tcp://127.0.0.1:$(port_of $G $K) --gpus $G --label $K --out $OUT 2>&1 | tail -1
    done
  done
done
kill $(jobs -p) 2>/dev/null; wait   # the schedulers and workers started here
python - "$OUT" <<'PY'
import glob, json, sys
rows = [json.load(open(f))["rows"][0] for f in sorted(glob.glob(sys.argv[1] + "/scan_*.json"))]
one = {r["members"]: r["scan_seconds"] for r in rows if not r.get("gpus")}
print("members gpus workers batches   scan_s  vs_1gpu  serial_s  max_rel_diff  batches' own seconds")
for r in sorted(rows, key=lambda r: (r["members"], r.get("gpus") or 1, r.get("label") or "")):
    ratio = one.get(r["members"], float("nan")) / r["scan_seconds"]
    print(f"{r['members']:7d} {r.get('gpus') or 1:4d} {r.get('label') or '-':>7s} {r['batches']:7d} {r['scan_seconds']:8.2f} "
          f"{ratio:8.2f} {r['serial_seconds_each']:9.2f} {r['max_rel_diff_acceleration']:12.1e}  "
          f"{[round(b, 2) for b in (r.get('batch_seconds') or [])]}")
PY
