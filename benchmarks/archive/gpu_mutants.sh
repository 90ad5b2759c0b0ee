#!/bin/bash
# #28: mutants scored on a device machine: the GPU-only ones, or a CPU module's on its 16 cores.  A mutants/ tree made here by mutmut
# (its generation step only; `mutmut run` forks after CUDA is initialised, which CUDA does
# not survive), with mutmut's own package copied to mutants/_site (its trampoline needs only
# the standard library) and the mutants' names in mutants/gpu_mutants.txt, is carried to
# the device; each mutant runs the GPU tests of the code it sits in (SEL: a -k expression;
# a fresh process each: MUTANT_UNDER_TEST=<name> pytest -x, at most EACH seconds), JOBS at
# once on the one GPU, until BUDGET seconds; LIST: the file of names (in mutants/).
# Measured (one H200, 2026-11-24): the whole default selection takes 13 s a mutant warm,
# 31 s cold; 12 at once timed out at 150 s (the cooperative kernels of one process wait
# for the others'): use few JOBS and a narrow SEL.
# Writes $OUT/gpu_mutants.txt: "<mutant> <pytest's exit code>" (0: survived; 1: killed;
# 124: timed out).  The unmutated tree runs first and must pass.
set -u
cd mutants
export PYTHONPATH=$PWD:$PWD/_site
export SEL="${SEL-evolve_block_on_gpu or scan_on_gpu_equals_cpu or graph_step_equals_the_launched_step or device_observables_equal or single_run_graph_steps or device_rows_with_populations or chebyshev_on_gpu_equals_cpu or one_kernel_exponential}"
# MARK / TESTS: the tests' marker expression and files (default: the GPU tests); a CPU
# module's mutants run on the device's 16 cores with MARK="not gpu and not multi_gpu and
# not slow and not docs", TESTS="tests/test_x.py ..." and SEL="" (no -k)
export MARK="${MARK:-gpu}" TESTS="${TESTS:-tests/test_gpu.py}"
KOPT=(); [ -n "$SEL" ] && KOPT=(-k "$SEL")
LIST="${LIST:-gpu_mutants.txt}"
TAG="${TAG:-}"
T0=$(date +%s)
python -m pytest -q -p no:cacheprovider -m "$MARK" $TESTS "${KOPT[@]}" > "$OUT/unmutated$TAG.log" 2>&1
rc=$?
tail -3 "$OUT/unmutated$TAG.log"
echo "unmutated: $(( $(date +%s) - T0 )) s, exit code $rc"
if [ "$rc" != 0 ]; then echo "the unmutated tree fails: no mutant run (mutants/_site needs mutmut and its dist-info)"; exit 2; fi
# one BLAS/OpenMP thread a job: each pytest would take all 16 cores (4 jobs timed out)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
one() { if [ -n "$SEL" ]; then k=(-k "$SEL"); else k=(); fi
       MUTANT_UNDER_TEST=$1 timeout "${EACH:-150}" python -m pytest -x -q -p no:cacheprovider -m "$MARK" $TESTS "${k[@]}" >/dev/null 2>&1; echo "$1 $?"; }
export -f one
timeout "${BUDGET:-450}" xargs -a "$LIST" -P "${JOBS:-12}" -I{} bash -c 'one "{}"' > "$OUT/gpu_mutants$TAG.txt"
awk '{print $2}' "$OUT/gpu_mutants$TAG.txt" | sort | uniq -c
echo "total: $(( $(date +%s) - T0 )) s"
