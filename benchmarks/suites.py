"""The benchmark suites of ``python -m benchmarks``: each adds its options and returns
(rows, extra) for the runner to save.  Rates count 2N^3 real / 8N^3 complex flops; every
comparison (against cupy.matmul, cuBLAS-XT, JAX, torch, SciPy) is measured in the same
run; inputs are random (never zeros) and every result is checked against a reference.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Suite:
    help: str
    gpu: bool
    add_args: Callable
    run: Callable


def _gpus_present():
    from mgemm.arrays import gpu_count
    return gpu_count()


def _gpu_list(values):
    """The requested GPU counts that this machine has (all of 1, 2, 4 by default)."""
    have = _gpus_present()
    got = [g for g in (values or [1, 2, 4]) if g <= have]
    return got or [have]


def _say(msg):
    print(msg, file=sys.stderr, flush=True)


def _blas_threads(n):
    """A context limiting BLAS to n threads (threadpoolctl), or nothing where it is absent."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(n)


# ---------------------------------------------------------------- engine: mgemm bench
def _engine_args(p):
    p.add_argument("--n", type=int, nargs="+", default=[32768])
    p.add_argument("--gpus", type=int, nargs="+", default=None, help="GPU counts (default 1 2 4 where present)")
    p.add_argument("--placement", nargs="+", default=["three", "one"], choices=["one", "three"])
    p.add_argument("--tile", nargs="+", default=["auto"], help="tiles, or auto")
    p.add_argument("--complex-method", nargs="+", default=["native", "3m"], choices=["native", "4m", "3m", "auto"])
    p.add_argument("--dtype", default="complex128")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-xt", action="store_true", help="skip cuBLAS-XT")
    p.add_argument("--no-jax", action="store_true", help="skip JAX's sharded matmul")
    p.add_argument("--balance", action="store_true", help="also time rows balanced from a trace")
    p.add_argument("--timeline", default=None, help="PNG of the last N on the most GPUs")
    p.add_argument("--copy-side", default="src", choices=["src", "dst"])
    p.add_argument("--plane-copies", default="all", choices=["all", "first", "none"])
    p.add_argument("--row-tile", type=int, default=None)


def _engine(a):
    from mgemm import executors
    from mgemm.tools.bench import run_bench
    ex = executors.get("cupy")
    ex.copy_side, ex.plane_copies, ex.row_tile = a.copy_side, a.plane_copies, a.row_tile
    rows = run_bench(a.n, a.dtype, _gpu_list(a.gpus), a.placement, a.tile, a.complex_method,
                     a.repeat, () if a.no_xt else (2048, 4096, 8192), a.timeline,
                     progress=_say, use_jax=not a.no_jax, balance=a.balance)
    return rows, {}


# ---------------------------------------------------------------- expm: mgemm bench-expm
def _expm_args(p):
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384])
    p.add_argument("--gpus", type=int, nargs="+", default=None)
    p.add_argument("--method", nargs="+", default=["auto"], choices=["auto", "taylor"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-baselines", action="store_true", help="skip torch / jax / cupyx")


def _expm(a):
    from mgemm.tools.bench_expm import run_bench_expm
    rows = run_bench_expm(a.n, _gpu_list(a.gpus), a.method, a.repeat, not a.no_baselines,
                          progress=_say)
    return rows, {}


# ---------------------------------------------------------------- expm-cpu: vs SciPy
def _expm_cpu_args(p):
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--repeat", type=int, default=50)


def _median_time(f, repeat):
    f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), float(np.std(ts))


def _expm_cpu(a):
    """mgemm.expm vs scipy.linalg.expm on A = -i dt H (the moving case's 3-point H, Z = 30,
    a = 0.1, dx = 0.1, dt = 0.002), against U = V exp(-i Lambda dt) V^T; each mgemm plan's
    seconds over its products at one same-size GEMM's rate, timed in the same call (the
    library bound: 1.0 is all the time in its products)."""
    import scipy.linalg

    import mgemm
    from tdse.model import hamiltonian
    from tdse.model import states as model_states
    from tdse.studies.validate import make_config
    cfg = make_config(n=a.n, dx=0.1, a=0.1, Z=30.0, dt=0.002)
    H = hamiltonian.dense(cfg, 0.0)
    A = -1j * 0.002 * H
    w, V = np.linalg.eigh(H)
    ref = (V * np.exp(-1j * 0.002 * w)) @ V.T
    rel = lambda U: float(np.linalg.norm(U - ref) / np.linalg.norm(ref))  # noqa: E731
    rows = []
    # the library bound (#59 item 6): a plan's products at the rate of one GEMM of this size
    # and type, timed here (ZGEMM for the complex path, DGEMM for the split one)
    Ar = np.ascontiguousarray(A.imag)
    gemm = {"complex": _median_time(lambda: A @ A, a.repeat)[0],
            "split": _median_time(lambda: Ar @ Ar, a.repeat)[0]}
    for name, kw in (("scipy.linalg.expm", None), ("mgemm auto", {}),
                     ("mgemm auto (complex path)", {"split": False}),
                     ("mgemm taylor k=10", {"method": "taylor", "terms": 10})):
        f = (lambda: scipy.linalg.expm(A)) if kw is None else (lambda kw=kw: mgemm.expm(A, **kw))
        t, sd = _median_time(f, a.repeat)
        row = {"name": name, "seconds": t, "std": sd, "rel_error": rel(f())}
        if kw is not None:
            plan = mgemm.expm(A, return_plan=True, **kw)[1]
            bound = plan.products * gemm[plan.path]
            row.update(path=plan.path, products=plan.products, gemm_bound_seconds=bound,
                       over_gemm_bound=t / bound)
        rows.append(row)
    for r in rows:
        r["speedup_vs_scipy"] = rows[0]["seconds"] / r["seconds"]
    _, plan = mgemm.expm(A, return_plan=True)
    return rows, {"n": a.n, "dtype": "complex128", "auto_plan": plan.as_dict(),
                  "theta_onenorm": float(np.abs(A).sum(axis=0).max()),
                  "gemm_seconds": gemm}


# ---------------------------------------------------------------- tdse: step time on GPUs
def _tdse_args(p):
    p.add_argument("--input", default="inputs/h2plus_moving_large.toml")
    p.add_argument("--gpus", type=int, nargs="+", default=None)
    p.add_argument("--steps", type=int, default=5, help="timed steps after 2 warm-up steps")


def _tdse(a):
    """Step time of the TDSE propagator: build H(t), U = exp(-i H dt) (column bands over
    the GPUs when G > 1), psi <- U psi; median over timed steps, each ending with a
    synchronisation; psi checked against the one-GPU result."""
    import cupy as cp

    from tdse import config as cfgmod
    from tdse.numerics.precheck import precheck
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.run.backend import Backend
    from mgemm.tools.common import rand_matrix, time_call
    cfg = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    pc = precheck(cfg)
    n = cfg.grid.n
    with cp.cuda.Device(0):  # the bound: G x one GPU's DGEMM at this N, in the same run
        R = rand_matrix(cp, 0, n, np.float64, 3)
        dgemm = 2.0 * n ** 3 / time_call(cp, lambda: cp.matmul(R, R), 5, [0])
        del R
    rows, first = [], None
    for g in _gpu_list(a.gpus):
        with cp.cuda.Device(0):
            prop = Propagator(cfg, pc.plan, cp, Backend("cupy", None, tuple(list(range(g)))).gemm_opts)
            rng = np.random.default_rng(0)
            psi = cp.asarray(rng.standard_normal(cfg.grid.n) + 1j * rng.standard_normal(cfg.grid.n))
            ts = []
            for j in range(2 + a.steps):
                t0 = time.perf_counter()
                psi = prop.step(psi, j)
                for d in range(g):
                    cp.cuda.Device(d).synchronize()
                ts.append(time.perf_counter() - t0)
            out = cp.asnumpy(psi)
        first = out if first is None else first
        step = float(np.median(ts[2:]))
        products = len(prop.scheme.factors) * pc.plan.products
        rows.append({"input": a.input, "n": cfg.grid.n, "gpus": g, "plan": pc.plan.as_dict(),
                     "step_seconds": step, "all_step_seconds": ts,
                     "real_products_per_step": products, "dgemm_1gpu_tflops": dgemm / 1e12,
                     "fraction_of_G_dgemm": products * 2.0 * n ** 3 / step / (g * dgemm),
                     "rel_diff_vs_first": float(np.linalg.norm(out - first) / np.linalg.norm(first))})
        _say(f"N={cfg.grid.n} G={g}: {step:.3f} s/step = "
             f"{rows[-1]['fraction_of_G_dgemm']:.2f} of G x DGEMM ({products} real products)")
        cp.get_default_memory_pool().free_all_blocks()
    for r in rows:
        r["speedup_vs_first"] = rows[0]["step_seconds"] / r["step_seconds"]
    return rows, {}


# ---------------------------------------------------------------- tune: probe + tile sweep
def _tune_args(p):
    p.add_argument("--n", type=int, nargs="+", default=[32768])
    p.add_argument("--gpus", type=int, nargs="+", default=None)
    p.add_argument("--complex-method", nargs="+", default=["native", "3m"], choices=["native", "3m"])
    p.add_argument("--placement", nargs="+", default=["three"], choices=["one", "three"])
    p.add_argument("--min-tile", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--profile", default=None,
                   help="an existing profile to tune into (default: probe this machine first)")


def _tune(a):
    """``mgemm probe`` (unless --profile), then ``mgemm tune --save`` per complex method and
    placement; the profile with the tuned tiles is stored in the result file."""
    from mgemm.profile import load_profile, tuned_entries
    from mgemm.tools.probe import run_probe
    from mgemm.tools.tune import run_tune
    prof = load_profile(a.profile) if a.profile else None
    if prof is None:
        prof = run_probe(progress=_say)
    rows, summary = [], []
    for g in _gpu_list(a.gpus):
        if g < 2:
            continue  # one GPU holding A, B, C is one cuBLAS call: nothing to tune
        for cm in a.complex_method:
            for pl in a.placement:
                r, s = run_tune(a.n, g, prof, "complex128", pl, a.repeat, a.min_tile,
                                progress=_say, complex_method=cm)
                rows += r
                summary += s
    prof["tuned"] = tuned_entries(prof, summary)
    return rows, {"summary": summary, "profile": prof}


# ---------------------------------------------------------------- gpu-tests
def _gpu_tests_args(p):
    p.add_argument("-k", dest="select", default=None, help="pytest -k expression")
    p.add_argument("--files", nargs="+", default=["tests"], help="test files or folders")


def _gpu_tests(a):
    """The tests marked gpu / multi_gpu, in a subprocess; one row per test (outcome, s)."""
    import subprocess
    import tempfile
    import xml.etree.ElementTree as ET
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "junit.xml")
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu or multi_gpu", "-p",
               "no:cacheprovider", f"--junitxml={xml}", *a.files] + (["-k", a.select] if a.select else [])
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        rows = []
        if os.path.exists(xml):
            for case in ET.parse(xml).getroot().iter("testcase"):
                outcome, why = "passed", None
                for tag in ("failure", "error", "skipped"):
                    if case.find(tag) is not None:
                        outcome = {"failure": "failed", "error": "error"}.get(tag, tag)
                        if tag != "skipped":           # the traceback's end: why it failed
                            why = (case.find(tag).text or case.find(tag).get("message") or "")[-1500:]
                if case.get("name") is None:      # (the entry junit adds for a stopped session)
                    continue
                rows.append({"test": f"{case.get('classname')}::{case.get('name')}",
                             "outcome": outcome, "seconds": float(case.get("time", 0)),
                             **({"why": why} if why is not None else {})})
    counts = {k: sum(r["outcome"] == k for r in rows) for k in ("passed", "failed", "error", "skipped")}
    _say(proc.stdout[-3000:])
    if proc.returncode not in (0, 1):   # pytest stopped (2: interrupted) or could not run
        counts["stopped"] = True        # the tests after the last row did not run
        _say(f"INCOMPLETE: pytest exited {proc.returncode}; the tests after "
             f"{rows[-1]['test'] if rows else 'the start'} did not run")
    return rows, {"counts": counts, "returncode": proc.returncode, "wall_seconds": wall,
                  "pytest_tail": (proc.stdout + proc.stderr)[-2000:]}


# ---------------------------------------------------------------- accuracy: time to accuracy (CPU)
def _accuracy_args(p):
    p.add_argument("--input", default="inputs/h2plus_moving.toml")
    p.add_argument("--t-end", type=float, default=1.0, help="propagate to this time (a.u.)")
    p.add_argument("--target", type=float, default=1e-6, help="error of the final psi")
    p.add_argument("--methods", nargs="+", default=["auto", "taylor", "chebyshev"])
    p.add_argument("--schemes", nargs="+", default=["midpoint", "cfm4"])
    p.add_argument("--threads", type=int, default=None, help="BLAS threads (default: CPUs usable)")


def _accuracy(a):
    """For each scheme x method: the largest dt = t_end / 2^k whose final psi is within
    --target of a reference (cfm4, Chebyshev at 1e-14, dt/64 of the finest tried), the
    wall time of that run, and its exponentials; the error is the L2 distance up to a
    global phase.  Same grid for all (the input's), psi only, one process, in turn.  Beside
    each its products' floor (#59 item 6): Chebyshev, its terms x one application of H to
    psi (:func:`_step_floor`'s operator); dense and Taylor, its exponentials x the plan's
    products x one N x N GEMM of the plan's path (ZGEMM, or DGEMM for the split one), each
    timed here -- the run at 1.0 would be all products."""
    import dataclasses

    from tdse import config as cfgmod
    from tdse.model import hamiltonian
    from tdse.model import states as model_states
    from tdse.model.grid import points
    from tdse.numerics.precheck import precheck
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.model.initial import initial_state
    from tdse.run.timeerror import phase_blind_distance
    threads = a.threads or len(os.sched_getaffinity(0))
    base = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    x = points(base.grid)
    _, phi = model_states.eigenstates(base, 0.0, 1)

    def config(scheme, method, dt, tol):
        return dataclasses.replace(
            base, time=dataclasses.replace(base.time, dt=dt, t_end=a.t_end),
            propagator=dataclasses.replace(base.propagator, scheme=scheme, method=method,
                                           tolerance=tol, error_window=0, terms=10))

    def final(cfg):
        pc = precheck(cfg, check_resolution=False)
        if not pc.ok:
            return None, 0.0, 0, None
        prop = Propagator(cfg, pc.plan)
        psi = initial_state(cfg, x, phi)
        t0 = time.perf_counter()
        for j in range(cfg.time.steps):
            psi = prop.step(psi, j)
        return psi, time.perf_counter() - t0, prop.exponentials, (prop, pc.plan)

    gemm = {}

    def floor(prop, plan, psi):
        """Seconds of the run's products alone (the docstring's floor)."""
        from tdse.model.hamiltonian import Operator
        if prop.method.matrix_free:
            s, v, A_ = prop.generators(0)[0]
            op = Operator(prop.config, s, v, np, a=A_)
            return prop.cheb_terms * _median_time(lambda: op(psi), 7)[0]
        if plan.path not in gemm:
            n = base.grid.n
            M = np.random.default_rng(0).standard_normal((n, n))
            M = M if plan.path == "split" else M + 1j * M
            gemm[plan.path] = _median_time(lambda: M @ M, 5)[0]
        return prop.exponentials * plan.products * gemm[plan.path]

    rows = []
    with _blas_threads(threads):
        ladder = [a.t_end / 2 ** k for k in range(3, 17)]
        ref = final(config("cfm4", "chebyshev", ladder[-1] / 4, 1e-14))[0]
        for scheme in a.schemes:
            for method in a.methods:
                tol = 1e-12 if method != "taylor" else 1e-10
                found = None
                for dt in ladder:
                    psi, sec, exps, made = final(config(scheme, method, dt, tol))
                    if psi is None:
                        continue  # the Taylor series refuses this dt (precheck)
                    err = phase_blind_distance(psi, ref, base.grid.dx)
                    _say(f"{scheme} {method} dt={dt:.3g}: error {err:.2e}, {sec:.2f} s")
                    if err <= a.target:
                        fl = floor(*made, psi)
                        found = {"scheme": scheme, "method": method, "dt": dt,
                                 "steps": round(a.t_end / dt), "error": err, "seconds": sec,
                                 "exponentials": exps, "seconds_per_step": sec / round(a.t_end / dt),
                                 "products_floor_seconds": fl, "over_products_floor": sec / fl}
                        _say(f"  -> x{sec / fl:.2f} its products' floor ({fl:.3g} s)")
                        break
                rows.append(found or {"scheme": scheme, "method": method, "error": "not reached"})
    best = min((r["seconds"] for r in rows if "seconds" in r), default=None)
    for r in rows:
        if "seconds" in r and best:
            r["vs_fastest"] = r["seconds"] / best
    return rows, {"input": a.input, "t_end": a.t_end, "target": a.target, "threads": threads,
                  "n": base.grid.n, "stencil": str(base.grid.stencil)}


# ---------------------------------------------------------------- step-cost: which method when
def _step_cost_args(p):
    p.add_argument("--input", default="inputs/h2plus_moving.toml")
    p.add_argument("--n", type=int, nargs="+", default=[256, 512], help="grid points (same box)")
    p.add_argument("--stencils", nargs="+", default=["3", "dvr"])
    p.add_argument("--methods", nargs="+", default=["dense", "chebyshev"])
    p.add_argument("--modes", nargs="+", default=["psi", "U"], choices=["psi", "U"])
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--gpus", type=int, default=1, help="GPUs for the dense exponent (cupy)")
    p.add_argument("--steps", type=int, default=5, help="timed steps after one warm-up")
    p.add_argument("--threads", type=int, default=None, help="BLAS threads (numpy)")


def _step_floor(prop, X, terms, xp, sync):
    """Seconds of a Chebyshev step of psi in its operator products alone (#59 item 6: the
    bound step-cost names): the step's terms x one application of the operator its series
    applies (:class:`tdse.model.hamiltonian.Operator` at the step's first generator) to the
    vector, timed here (:func:`_median_time`); the recurrence's other passes and the set-up
    left out.  (A dense step's products are mgemm's, complex or split by its choice: the
    expm-cpu suite states their bound.  For U(t) the DVR's block products timed alone were
    slower than inside the series, the step x0.74 / 0.97 of them at N = 256 / 512 on 2 cores
    -- ``step-cost_cpu2_20261129T153946.json``, a first version that gave every row a
    floor, the dense ones at a complex GEMM's rate --: no floor for U(t).)"""
    from tdse.model.hamiltonian import Operator
    s, v, a = prop.generators(0)[0]
    op = Operator(prop.config, s, v, xp, a=a)
    return terms * _median_time(lambda: (op(X), sync()), 7)[0]


def _step_cost(a):
    """Seconds per cfm4 step (the input's dt) for psi alone or the whole U(t), per stencil,
    N and exponential method, on this machine: where each method wins -- and what
    ``method = "auto"`` predicted for each (tdse.numerics.cost, its kernels timed in the same run)
    and chose; a Chebyshev step of psi over its operator products alone (:func:`_step_floor`,
    timed in the same run)."""
    import dataclasses

    from tdse import config as cfgmod
    from tdse.numerics import cost, exponentials
    from tdse.numerics.precheck import precheck
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.run.backend import Backend
    base = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    xp = np
    if a.backend == "cupy":
        import cupy as xp
    threads = a.threads or len(os.sched_getaffinity(0))
    rows = []
    width = base.grid.x_max - base.grid.x_min

    def sync():
        if xp is not np:
            for d in range(a.gpus):
                xp.cuda.Device(d).synchronize()
    with _blas_threads(threads):
        for n in a.n:
            for st in a.stencils:
                stencil = int(st) if st in ("3", "5") else st
                grid = dataclasses.replace(base.grid, dx=width / n, stencil=stencil)
                auto = dataclasses.replace(base, grid=grid, propagator=dataclasses.replace(
                    base.propagator, method="auto", scheme="cfm4", error_window=0))
                pc_auto = precheck(auto, check_resolution=False)
                devs = list(range(a.gpus)) if a.backend == "cupy" else None
                predicted = {mode: cost.choose(auto, pc_auto, a.backend, devs, xp=xp,
                                               operator=mode == "U")[1] for mode in a.modes}
                for method in a.methods:
                    cfg = dataclasses.replace(base, grid=grid, propagator=dataclasses.replace(
                        base.propagator, method=method, scheme="cfm4", error_window=0))
                    pc = precheck(cfg, check_resolution=False)
                    free = exponentials.get(method).matrix_free
                    opts = {} if free else Backend(a.backend, None, tuple(range(a.gpus))).gemm_opts
                    prop = Propagator(cfg, pc.plan, xp, opts)
                    rng = np.random.default_rng(1)
                    for mode in a.modes:
                        if mode == "psi":
                            X = xp.asarray(rng.standard_normal(n) + 1j * rng.standard_normal(n))
                            f = prop.step
                        else:
                            X = xp.eye(n, dtype=np.complex128)
                            f = prop.step_operator
                        ts, k0 = [], prop.cheb_terms
                        for j in range(a.steps + 1):
                            t0 = time.perf_counter()
                            X = f(X, j)
                            sync()
                            ts.append(time.perf_counter() - t0)
                        floor = None if not free or mode == "U" else _step_floor(
                            prop, X, (prop.cheb_terms - k0) / (a.steps + 1), xp, sync)
                        row = {"n": n, "stencil": st, "method": method, "mode": mode,
                               "backend": a.backend, "gpus": a.gpus if a.backend == "cupy" else 0,
                               "threads": threads if a.backend == "numpy" else None,
                               "step_seconds": float(np.median(ts[1:])), "dt": cfg.time.dt,
                               "theta": pc.theta, "products": None if free else pc.plan.products,
                               "chebyshev_terms": pc.chebyshev_terms if free else None,
                               "predicted_seconds": predicted[mode]["seconds_per_step"].get(method),
                               "auto_chooses": predicted[mode]["chosen"],
                               "floor_seconds": floor,
                               "over_floor": None if floor is None else float(np.median(ts[1:])) / floor}
                        rows.append(row)
                        _say(f"N={n} {st} {method} {mode}: {row['step_seconds'] * 1e3:.2f} ms/step" + (
                            "" if floor is None else f", x{row['over_floor']:.2f} its products"))
                        del X
    return rows, {"input": a.input, "scheme": "cfm4"}


# ---------------------------------------------------------------- expm-profile: rate and timeline
def _expm_profile_args(p):
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384])
    p.add_argument("--gpus", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeline", default=None, help="PNG stem: one traced expm per N")


def _expm_profile(a):
    """The split-path exponent of A = -i dt H (||A||_1 = 20) on G GPUs: seconds, real
    products, the fraction of G x the one-GPU DGEMM rate measured in the same run
    (N x N x N cupy.matmul) and each GPU's peak memory, for three ways in: the matrix on
    GPU 0 with the left operand replicated (``array/replica``, the old layout) or streamed
    (``array/stream``), and A built in bands on the GPUs with U returned in bands
    (``banded/stream``: nothing whole anywhere).  One traced call of the banded way per N
    for the timeline (GEMMs and copies per GPU: where the GPUs wait)."""
    import cupy as cp

    from mgemm.dist import Layout, trace_rows
    from mgemm.expm import expm, expm_plan_for
    from mgemm.tools.bench_expm import h2plus_columns, h2plus_matrix
    from mgemm.tools.common import PeakMemory, free_gpu_memory, rand_matrix, time_call
    from mgemm.tools.timeline import plot_timeline
    devs = list(range(a.gpus))
    rows = []
    for n in a.n:
        with cp.cuda.Device(0):
            R = rand_matrix(cp, 0, n, np.float64, 3)
            t_d = time_call(cp, lambda: cp.matmul(R, R), a.repeat, [0])
            del R
            dgemm = 2.0 * n ** 3 / t_d
            H, dt = h2plus_matrix(n)
            A = (-1j * dt) * cp.asarray(H).astype(cp.complex128)
            del H
        plan = expm_plan_for(A)[0]
        make, dt_b, _, _ = h2plus_columns(n)
        assert abs(dt_b - dt) <= 1e-12 * dt
        lay_b = Layout(n, devs)
        Ab = lay_b.from_columns(make)
        ways = {"array/replica": lambda: expm(A, plan=plan, layout=Layout(n, devs, left="replica")),
                "array/stream": lambda: expm(A, plan=plan, devices=devs),
                "banded/stream": lambda: expm(Ab, plan=plan)}
        ref = None
        for way, f in ways.items():
            free_gpu_memory(cp)
            with PeakMemory(cp) as peak:
                t = time_call(cp, f, a.repeat, devs)
            U = f()
            U = U.to_array(0) if hasattr(U, "to_array") else U
            with cp.cuda.Device(0):
                if ref is None:
                    ref, diff = U, 0.0
                else:
                    diff = float(cp.abs(U - ref).max())
            del U
            rate = plan.products * 2.0 * n ** 3 / t
            row = {"n": n, "gpus": a.gpus, "way": way, "seconds": t, "products": plan.products,
                   "path": plan.path, "dgemm_1gpu_tflops": dgemm / 1e12, "tflops": rate / 1e12,
                   "fraction_of_G_dgemm": rate / (a.gpus * dgemm), "max_diff_vs_first": diff,
                   "peak_gib": {d: peak.bytes.get(d, 0) / 2 ** 30 for d in devs}}
            rows.append(row)
            _say(f"N={n} G={a.gpus} {way}: {t:.3f} s, {plan.products} products, "
                 f"{rate / 1e12:.1f} TFLOP/s = {row['fraction_of_G_dgemm']:.2f} of {a.gpus} x "
                 f"{dgemm / 1e12:.1f}; peak GiB {[round(v, 1) for v in row['peak_gib'].values()]}")
        if a.timeline:
            ev = []
            with cp.cuda.Device(0):
                expm(Ab, plan=plan, trace=ev)
            for d in devs:
                cp.cuda.Device(d).synchronize()
            tr = trace_rows(ev, cp)
            row = rows[-1]
            row["gemm_busy_ms"] = {d: sum(r["end_ms"] - r["start_ms"] for r in tr
                                          if r["dev"] == d and r["kind"] == "gemm") for d in devs}
            row["span_ms"] = {d: max(r["end_ms"] for r in tr if r["dev"] == d) for d in devs}
            path = f"{a.timeline}_{n}.png"
            plot_timeline(tr, path, title=f"mgemm.expm N={n} on {a.gpus} GPUs, banded in/out: "
                                          f"{plan.products} real products, GEMMs and band copies")
            row["timeline"] = path
        del A, Ab, ref
        free_gpu_memory(cp)
    return rows, {}


# ---------------------------------------------------------------- scale: sizes one GPU cannot hold
def _scale_args(p):
    p.add_argument("--cases", nargs="+", default=["65536:4", "32768:2"],
                   help="N:G pairs, run in order (an out-of-memory is recorded, not fatal); "
                        "max:G runs the largest N that mgemm.expm names for G GPUs")
    p.add_argument("--vectors", type=int, default=4)
    p.add_argument("--generator", choices=["tridiagonal", "dvr"], default="tridiagonal",
                   help="-i dt H with the 3-point H (banded, ||A||_1 = 20) or the sinc-DVR H "
                        "(dense, dx = 0.1, dt = 0.02)")


class _ScaledOperator:
    """s H as a scipy LinearOperator (H real symmetric, applied by ``apply``): what
    expm_multiply needs, its transpose (itself) and adjoint (conj(s) H) included."""

    def __new__(cls, n, s, apply):
        from scipy.sparse.linalg import LinearOperator

        class Op(LinearOperator):
            def __init__(self, s):
                super().__init__(np.complex128, (n, n))
                self.s = s

            def _matvec(self, v):
                return self.s * apply(v).ravel()

            def _matmat(self, V):
                return self.s * apply(V)

            def _transpose(self):
                return self

            def _adjoint(self):
                return Op(np.conj(self.s))
        return Op(s)


def _dvr_generator(n, dx=0.1, dt=0.02):
    """The sinc-DVR soft-core H (V = -1/sqrt(x^2 + 2)) as (make, theta, dt, apply, trace):
    the columns of -i dt H built on the current GPU (for Layout.from_columns), a bound on
    ||dt H||_1, dt, tr H, and H v on the host by the circulant embedding of its Toeplitz
    kinetic part (FFT: an independent route to the same matrix, for scipy's
    expm_multiply)."""
    import cupy as cp

    from tdse.model.hamiltonian import dvr_column
    c = dvr_column(n, dx)
    x = (np.arange(n) - n / 2) * dx
    v = -1.0 / np.sqrt(x * x + 2.0)
    col = cp.asarray(c)

    def make(c0, c1):
        i = cp.arange(n)[:, None]
        j = cp.arange(c0, c1)[None, :]
        T = col[cp.abs(i - j)].astype(cp.complex128)
        T[cp.arange(c0, c1), cp.arange(c1 - c0)] += cp.asarray(v[c0:c1])
        return (-1j * dt) * T
    sym = np.fft.fft(np.concatenate([c, [0.0], c[:0:-1]]))

    def apply(V):
        V = np.asarray(V).reshape(n, -1)
        W = np.fft.ifft(sym[:, None] * np.fft.fft(V, n=2 * n, axis=0), axis=0)[:n]
        return W + v[:, None] * V
    theta = dt * (np.pi ** 2 / (2 * dx * dx) + 1.0)
    return make, theta, dt, apply, float(n * c[0] + v.sum())


def _scale(a):
    """The split-path exponent of A = -i dt H (3-point H of the soft-core double well,
    ||A||_1 = 20) at sizes beyond one GPU: A built in column bands on the GPUs (never
    whole), U returned in bands.  Seconds, rate against G x one GPU's DGEMM (measured in
    the same run at N = 16384), each GPU's peak memory, and accuracy: U v for random v
    against scipy's expm_multiply of the sparse -i dt H (an independent reference), and
    | ||U v|| - ||v|| |."""
    import cupy as cp
    import scipy.sparse
    from scipy.sparse.linalg import expm_multiply

    import re

    import mgemm
    from mgemm.dist import Layout
    from mgemm.expm import ExpmMemoryError, fitting_plan, free_bytes, usable
    from mgemm.plan import plan_expm
    from mgemm.tools.bench_expm import h2plus_columns
    from mgemm.tools.common import PeakMemory, free_gpu_memory, rand_matrix, time_call
    with cp.cuda.Device(0):
        R = rand_matrix(cp, 0, 16384, np.float64, 3)
        dgemm = 2.0 * 16384 ** 3 / time_call(cp, lambda: cp.matmul(R, R), 3, [0])
        del R
    free_gpu_memory(cp)
    rows = []
    rng = np.random.default_rng(7)
    for case in a.cases:
        want, g = case.split(":")
        g = int(g)
        theta = 20.0 if a.generator == "tridiagonal" else _dvr_generator(2)[1]
        plan = plan_expm(theta, tolerance=2.0 ** -53, split=True, unitary=True,
                         unit_roundoff=2.0 ** -53)
        named = None
        if want == "max":             # the largest N mgemm.expm names for these GPUs
            free = min(free_bytes(cp, d) for d in range(g))
            try:
                fitting_plan(plan, 10 ** 6, np.complex128, g, usable(free))
            except ExpmMemoryError as e:
                named = int(re.search(r"is (\d+)$", str(e)).group(1))
            n = named - named % (2 * g)
        else:
            n = int(want)
        if a.generator == "tridiagonal":
            make, dt, d, off = h2plus_columns(n)
            Hs = scipy.sparse.diags([np.full(n - 1, off), d, np.full(n - 1, off)], [-1, 0, 1],
                                    format="csr")
            A_ref = -1j * dt * Hs
        else:
            make, _, dt, apply, trace = _dvr_generator(n)
            A_ref = _ScaledOperator(n, -1j * dt, apply)
        row = {"n": n, "gpus": g, "generator": a.generator, "largest_named": named,
               "products": plan.products, "path": plan.path,
               "dgemm_1gpu_tflops": dgemm / 1e12}
        try:
            with PeakMemory(cp) as peak:
                lay = Layout(n, list(range(g)))
                t0 = time.perf_counter()  # the input built in place is part of the call
                U, used = mgemm.expm(lay.from_columns(make), tolerance=2.0 ** -53,
                                     devices=list(range(g)), return_plan=True, output="banded")
                for dev in range(g):
                    cp.cuda.Device(dev).synchronize()
                t = time.perf_counter() - t0
        except cp.cuda.memory.OutOfMemoryError as e:
            row.update(status="out of memory", error=str(e)[:300],
                       peak_gib={k: v / 2 ** 30 for k, v in peak.bytes.items() if k < g})
            rows.append(row)
            _say(f"N={n} G={g}: out of memory")
            U = None
            free_gpu_memory(cp)
            continue
        V = rng.standard_normal((n, a.vectors)) + 1j * rng.standard_normal((n, a.vectors))
        with cp.cuda.Device(0):
            UV = U.matvec(cp.asarray(V)).get()
        ref = expm_multiply(A_ref, V, traceA=-1j * dt * trace if a.generator == "dvr" else None)
        err = float(np.linalg.norm(UV - ref, axis=0).max() / np.linalg.norm(V, axis=0).min())
        norm = float(np.abs(np.linalg.norm(UV, axis=0) - np.linalg.norm(V, axis=0)).max()
                     / np.linalg.norm(V, axis=0).min())
        rate = used.products * 2.0 * n ** 3 / t
        row.update(status="ok", seconds=t, products=used.products, ps_block=used.ps_block, tflops=rate / 1e12,
                   fraction_of_G_dgemm=rate / (g * dgemm), error_vs_expm_multiply=err,
                   norm_error=norm, peak_gib={k: v / 2 ** 30 for k, v in peak.bytes.items()
                                              if k < g},
                   gpu_memory_gib=cp.cuda.runtime.memGetInfo()[1] / 2 ** 30)
        rows.append(row)
        _say(f"N={n} G={g}: {t:.1f} s, {rate / 1e12:.1f} TFLOP/s = {row['fraction_of_G_dgemm']:.2f} "
             f"of G x DGEMM; error {err:.1e}, norm {norm:.1e}; peak GiB "
             f"{[round(v, 1) for v in row['peak_gib'].values()]}")
        del U
        free_gpu_memory(cp)
    return rows, {}


# ---------------------------------------------------------------- formulas: fewer products
def _formulas_args(p):
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--theta", type=float, nargs="+", default=[5.0, 20.0, 50.0])
    p.add_argument("--tolerance", type=float, default=1e-14)
    p.add_argument("--threads", type=int, default=1)


def _formulas(a):
    """Products per exponent before (Paterson-Stockmeyer only) and after (the cheapest of
    PS and the Bader-Blanes-Casas / Sastre formulas, mgemm.formulas) at ||A|| = theta, on
    both paths, each result against an eigendecomposition: complex path A = Q diag(i l) Q^H
    (complex entries), split path A = iB with B real symmetric; plus every scheme's cost
    (formula_table).  CPU, --threads BLAS threads."""
    import mgemm
    from mgemm.plan import formula_table, plan_expm
    u = 2.0 ** -53
    rng = np.random.default_rng(20261122)
    n = a.n
    rows = []
    with _blas_threads(a.threads):
        Q, _ = np.linalg.qr(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
        lam0 = rng.uniform(-1, 1, n)
        S = rng.standard_normal((n, n))
        S = S + S.T
        mu, V = np.linalg.eigh(S)
        for theta in a.theta:
            cases = {}
            sc = theta / np.abs((Q * lam0) @ Q.conj().T).sum(axis=0).max()
            A = (Q * (1j * lam0 * sc)) @ Q.conj().T
            cases["complex"] = (A, (Q * np.exp(1j * lam0 * sc)) @ Q.conj().T)
            sc = theta / np.abs(S).sum(axis=0).max()
            cases["split"] = (1j * S * sc, (V * np.exp(1j * mu * sc)) @ V.T)
            for path, (A, ref) in cases.items():
                split = path == "split"
                th = float(np.abs(A.imag if split else A).sum(axis=0).max())
                out = {"theta": theta, "path": path, "n": n, "tolerance": a.tolerance}
                for tag, use in (("before", False), ("after", True)):
                    plan = plan_expm(th, tolerance=a.tolerance, split=split, unitary=True,
                                     unit_roundoff=u, use_formulas=use)
                    t0 = time.perf_counter()
                    E = mgemm.expm(A, plan=plan)
                    out[f"seconds_{tag}"] = time.perf_counter() - t0
                    out[f"products_{tag}"] = plan.products
                    out[f"scheme_{tag}"] = f"{plan.formula} m={plan.degree} s={plan.squarings}"
                    out[f"bound_{tag}"] = plan.truncation_bound
                    out[f"error_{tag}"] = float(np.linalg.norm(E - ref, 2))
                rows.append(out)
                _say(f"theta={theta:g} {path}: {out['products_before']} -> {out['products_after']} "
                     f"products ({out['scheme_after']}), error {out['error_before']:.1e} -> "
                     f"{out['error_after']:.1e}")
    table = {str(t): formula_table(t, tolerance=a.tolerance) for t in a.theta}
    return rows, {"schemes": table}


# ---------------------------------------------------------------- propagator: U(T) at scale
def _propagator_args(p):
    p.add_argument("--input", default="inputs/h2plus_moving.toml")
    p.add_argument("--n", type=int, nargs="+", default=[8192])
    p.add_argument("--gpus", type=int, default=4)
    p.add_argument("--steps", type=int, default=20, help="timed cfm4 steps (of one period)")
    p.add_argument("--engines", nargs="+", default=["mgemm", "chebyshev", "torch"],
                   choices=["mgemm", "chebyshev", "torch"])
    p.add_argument("--tolerance", type=float, default=None,
                   help="per-exponential tolerance (default: the input's)")


def _propagator(a):
    """The whole propagator U after --steps cfm4 steps of one drive period (the input's dx
    and physics in a box of N points): mgemm's dense exponent in column bands on G GPUs,
    the Chebyshev block on G GPUs (each GPU its columns), and the same loop with
    torch.linalg.matrix_exp (complex128) on one GPU.  Seconds per step and per period (M
    steps, extrapolated), ||U^H U - I||_max, each U against mgemm's, and what ``method =
    "auto"`` predicted per step for each and would choose (tdse.numerics.cost, timed in this run).
    Each row's bound (#59 item 6), timed in the same call: mgemm's against G x one GPU's
    DGEMM rate, its work per step the scheme's factors x (the plan's real products x 2 N^3
    + one complex N x N product, 8 N^3); the Chebyshev block's against G x one GPU's
    memory bandwidth (a device copy), its traffic per step counted as factors x terms x 3
    N x N complex arrays (two read, one written; the kinetic product's own passes, by FFT or
    GEMM, not counted: a lower bound of the traffic, so its fraction is one too);
    torch's is the baseline the others' speed-up is against."""
    import dataclasses

    import cupy as cp

    from tdse import config as cfgmod
    from tdse.numerics import cost, schemes
    from tdse.model import hamiltonian
    from tdse.model import states as model_states
    from tdse.studies.floquet import floquet_config
    from tdse.numerics.precheck import precheck
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.run.backend import Backend
    base = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    rows = []
    with cp.cuda.Device(0):
        dgemm, bandwidth = _dgemm_peak(cp), _hbm_rate(cp)
        cp.get_default_memory_pool().free_all_blocks()     # (their 3 GiB back before the engines)
    _say(f"one GPU: DGEMM {dgemm / 1e12:.1f} TFLOP/s, device copy {bandwidth / 1e9:.0f} GB/s")
    for n in a.n:
        dx = base.grid.dx
        grid = dataclasses.replace(base.grid, x_min=-0.5 * n * dx, x_max=0.5 * n * dx)
        cfg, T, M, _ = floquet_config(dataclasses.replace(base, grid=grid))
        cfg = dataclasses.replace(cfg, propagator=dataclasses.replace(
            cfg.propagator, scheme="cfm4", tolerance=a.tolerance or cfg.propagator.tolerance))
        steps = min(a.steps, M)
        devs = list(range(a.gpus))
        results = {}
        auto = dataclasses.replace(cfg, propagator=dataclasses.replace(cfg.propagator, method="auto"))
        with cp.cuda.Device(0):
            _, choice = cost.choose(auto, precheck(auto, check_resolution=False), "cupy", devs,
                                    xp=cp, operator=True, steps=M)
        _say(f"N={n}: {choice['why']}")
        for eng in a.engines:
            c = dataclasses.replace(cfg, propagator=dataclasses.replace(
                cfg.propagator, method="chebyshev" if eng == "chebyshev" else "dense"))
            pc = precheck(c, check_resolution=False)

            def sync():
                for d in devs:
                    cp.cuda.Device(d).synchronize()
            with cp.cuda.Device(0):
                if eng == "torch":
                    import torch
                    prop = Propagator(c, pc.plan)          # for its generators only
                    Tk = torch.as_tensor(hamiltonian.kinetic_dense(c.grid), device="cuda:0")
                    U = torch.eye(n, dtype=torch.complex128, device="cuda:0")

                    def one(j, U):
                        for s_, v, _ in prop.generators(j):
                            G = Tk * s_ + torch.diag(torch.as_tensor(v, device="cuda:0"))
                            U = torch.linalg.matrix_exp(G.to(torch.complex128) * (-1j * c.time.dt)) @ U
                        return U
                    one(0, U.clone())
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for j in range(steps):
                        U = one(j, U)
                    torch.cuda.synchronize()
                    sec = time.perf_counter() - t0
                    Ud = cp.asarray(U)
                    unit = float(cp.abs(Ud.conj().T @ Ud - cp.eye(n)).max())
                    Uh = Ud.get()
                    del U, Ud, Tk
                    torch.cuda.empty_cache()
                else:
                    prop = Propagator(c, pc.plan, cp, Backend("cupy", cp, tuple(devs)).gemm_opts)
                    U = cp.eye(n, dtype=np.complex128)
                    prop.step_operator(cp.eye(n, dtype=np.complex128), 0)   # warm-up
                    sync()
                    t0 = time.perf_counter()
                    for j in range(steps):
                        U = prop.step_operator(U, j)
                    sync()
                    sec = time.perf_counter() - t0
                    Ud = U.to_array(0) if hasattr(U, "to_array") else U
                    unit = float(cp.abs(Ud.conj().T @ Ud - cp.eye(n)).max())
                    Uh = Ud.get()
                    del U, Ud, prop
            results[eng] = Uh
            row = {"n": n, "engine": eng, "gpus": 1 if eng == "torch" else a.gpus, "steps": steps,
                   "steps_per_period": M, "period": T, "dt": c.time.dt,
                   "seconds": sec, "seconds_per_step": sec / steps,
                   "seconds_per_period": sec / steps * M, "unitarity_max": unit,
                   "products_or_terms": pc.plan.products if eng != "chebyshev" else pc.chebyshev_terms,
                   "tolerance": c.propagator.tolerance, "auto_chooses": choice["chosen"],
                   "predicted_seconds_per_step": choice["seconds_per_step"].get(
                       {"mgemm": "dense"}.get(eng, eng))}
            factors = len(schemes.get(c.propagator.scheme).factors)
            if eng == "mgemm":
                work = factors * (pc.plan.products * 2.0 + 8.0) * n ** 3 / row["seconds_per_step"]
                row.update(bound="G x DGEMM", dgemm_1gpu_tflops=dgemm / 1e12,
                           fraction_of_bound=work / (a.gpus * dgemm))
            elif eng == "chebyshev":
                moved = factors * pc.chebyshev_terms * 3 * 16.0 * n * n / row["seconds_per_step"]
                row.update(bound="G x copy bandwidth", bandwidth_1gpu_gbs=bandwidth / 1e9,
                           fraction_of_bound=moved / (a.gpus * bandwidth))
            if "mgemm" in results and eng != "mgemm":
                row["max_diff_vs_mgemm"] = float(np.abs(Uh - results["mgemm"]).max())
            rows.append(row)
            _say(f"N={n} {eng}: {row['seconds_per_step']:.3f} s/step, {row['seconds_per_period']:.1f} "
                 f"s/period ({M} steps), unitarity {row['unitarity_max']:.1e}"
                 + (f", {row['fraction_of_bound']:.2f} of {row['bound']}" if "bound" in row else ""))
            cp.get_default_memory_pool().free_all_blocks()
        t_ref = {r["engine"]: r["seconds_per_step"] for r in rows if r["n"] == n}
        for r in rows:
            if r["n"] == n and "torch" in t_ref:
                r["speedup_vs_torch"] = t_ref["torch"] / r["seconds_per_step"]
    return rows, {"input": a.input, "scheme": "cfm4"}


# ---------------------------------------------------------------- inputs: the CPU inputs as run
def _inputs_args(p):
    p.add_argument("--inputs", nargs="+", default=["h2plus_moving", "h2plus_moving_ramped",
                   "thesis_fig6", "h2plus_static", "atom_hhg", "tiny"])
    p.add_argument("--threads", type=int, nargs="+", default=[None],
                   help="BLAS threads to time each with (default: the run's own choice)")


def _inputs(a):
    """Each input as `tdse run` runs it (no plots): wall seconds, BLAS threads, the in-run
    time-error estimate, and what README quotes of the results: the excitation out of the
    instantaneous ground state (mean over t >= 2 and final), max <H>(t) - <H>(0), the yield.
    Its bound (#59 item 6): the run's steps alone -- the prepared plan's stepper over
    ``time.steps`` from psi(0), no estimate, observables or file, timed after the run in
    the same process -- and the run's wall over them."""
    import tempfile

    import tdse
    from tdse import config as cfgmod
    from tdse.run.driver import run
    from tdse.run.loop import advance
    from tdse.run.snapshots import read
    rows = []
    for name in a.inputs:
        cfg = cfgmod.load(os.path.join(ROOT, "inputs", f"{name}.toml"))
        for th in a.threads:
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                res = run(cfg, tmp, backend="numpy", threads=th)
                wall = time.perf_counter() - t0
                d = read(res.path)
            t, P = d["observables/t"], d["observables/populations_ht"]
            exc = 1.0 - P[:, 0]
            late = t >= min(2.0, t[-1])
            E = d["observables/energy"]
            rows.append({"input": name, "threads": int(d["attrs"]["blas_threads"]), "seconds": wall,
                         "steps": cfg.time.steps, "n": cfg.grid.n,
                         "time_error": res.time_error,
                         "excitation_mean_t_ge_2": float(exc[late].mean()),
                         "excitation_final": float(exc[-1]),
                         "energy_rise_max": float((E - E[0]).max()),
                         "yield_final": float(d["observables/yield"][-1]),
                         "yield_flux_final": float(d["observables/yield_flux"][-1])})
            plan = tdse.prepare(cfg, backend="numpy", threads=th)
            with plan.backend.limit():
                t0 = time.perf_counter()
                advance(plan.stepper(), np.asarray(plan.psi0, dtype=complex), 0, cfg.time.steps)
                bare = time.perf_counter() - t0
            rows[-1].update(bare_steps_seconds=bare, over_bare_steps=wall / bare)
            _say(f"{name} threads={rows[-1]['threads']}: {wall:.1f} s, x{wall / bare:.2f} its "
                 f"steps alone ({bare:.1f} s)")
    return rows, {}


# ---------------------------------------------------------------- absorber: reflection
def _absorber_args(p):
    p.add_argument("--widths", type=float, nargs="+", default=[15.0, 20.0, 25.0])
    p.add_argument("--k0", type=float, nargs="+", default=[1.0, 2.0, 3.0, 4.0])
    p.add_argument("--method", default="auto", choices=["auto", "chebyshev"])


def _absorber(a):
    """Reflection of the default absorber: a free Gaussian packet (sigma = 4, momentum k0,
    energy k0^2/2) leaves the interior of [-60, 60) (DVR, dx = 0.2, dt = 0.05) towards
    the layer; after it has had time to reach the wall and come back, the norm inside the
    interior is what reflected."""
    from tdse import config as cfgmod
    from tdse.model.grid import points
    from tdse.numerics.precheck import precheck
    from tdse.model.initial import initial_state
    from tdse.numerics.stepper import Stepper as Propagator
    L, dx, dt = 60.0, 0.2, 0.05
    rows = []
    for w in a.widths:
        for k0 in a.k0:
            cfg = cfgmod.parse({
                "name": "cap", "grid": {"x_min": -L, "x_max": L, "dx": dx, "stencil": "dvr"},
                "potential": {"a": 1.0, "centres": [{"x0": 0.0, "Z": 0.0}]},
                "absorber": {"width": w},
                "initial": {"state": "gaussian", "x0": 0.0, "sigma": 4.0, "k0": k0},
                "time": {"dt": dt, "t_end": dt * round((L + w) * 1.6 / k0 / dt)},
                "propagator": {"method": a.method, "tolerance": 1e-12}})
            prop = Propagator(cfg, precheck(cfg, check_resolution=False).plan)
            x = points(cfg.grid)
            psi = initial_state(cfg, x, None)
            for j in range(cfg.time.steps):
                psi = prop.step(psi, j)
            refl = float(np.sum(np.abs(psi[np.abs(x) < L - w]) ** 2) * dx)
            rows.append({"width": w, "strength": cfg.absorber.strength, "power": cfg.absorber.power,
                         "k0": k0, "energy": 0.5 * k0 ** 2, "reflected": refl, "method": a.method})
            _say(f"width {w} k0 {k0}: reflected {refl:.2e}")
    return rows, {}


# ---------------------------------------------------------------- kernels-3m, sweep-3m
def _kernels_args(p):
    p.add_argument("--n", type=int, default=32768)
    p.add_argument("--tiles", default="1024,2048,4096,8192")
    p.add_argument("--n-full", type=int, default=16384)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--smi", default=None, help="log nvidia-smi clocks/power to this file")


def _kernels(a):
    from . import kernels_3m
    return kernels_3m.run(a)


def _sweep_args(p):
    from .sweep_3m import VARIANTS
    p.add_argument("--n", type=int, default=32768)
    p.add_argument("--gpus", type=int, default=4)
    p.add_argument("--placement", default="three", choices=["one", "three"])
    p.add_argument("--roles", default=None, help="a,b,c: the GPUs holding A, B, C")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default=None, help="comma-separated labels of: " +
                   ", ".join(v[0] for v in VARIANTS))


def _sweep(a):
    from . import sweep_3m
    return sweep_3m.run(a)


# ---------------------------------------------------------------- scan: many runs at once
def _scan_args(p):
    p.add_argument("--input", default="inputs/atom_hhg.toml")
    p.add_argument("--members", type=int, default=16, help="E0 values in the scan")
    p.add_argument("--serial", type=int, default=None,
                   help="serial runs timed for the comparison (default: all members on the "
                        "CPU, 1 on a GPU; the rest extrapolated, said in the row)")
    p.add_argument("--t-end", type=float, default=None, help="shorten the input (a.u.)")
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--workers", type=int, default=None, help="Dask LocalCluster workers")
    p.add_argument("--scheduler", default=None,
                   help="a running Dask scheduler's address (e.g. one worker per GPU)")
    p.add_argument("--gpus", type=int, default=None,
                   help="GPUs the scan's workers use (said in the row)")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--label", default=None, help="a note kept in the row (which cluster)")
    p.add_argument("--parts", default=None,
                   help="the scan's parts folder's parent (default: a new temporary folder, "
                        "removed after; `tdse scan` always writes its parts)")
    p.add_argument("--save", default="series",
                   help="what the scan keeps (tdse scan --save: final, series, series:NAMES); the "
                        "row also times writing its file (tdse.run.scanfile.write) and its size")
    p.add_argument("--cli", action="store_true",
                   help="also the same scan by `tdse scan` as a user starts it (a new process: "
                        "imports, the device's start, the file and its map PNG), its wall over "
                        "the in-process scan's seconds (#59 item 1: <= 1.3)")
    p.add_argument("--cli-repeat", type=int, default=3,
                   help="`tdse scan` processes timed for --cli (the median taken; one process's "
                        "wall moves by a second between processes on a GPU machine's host)")


def _warm_worker(toml):
    """On a Dask worker: a 2-member batch of a few steps (the device, its libraries and the
    kernels set up once, as the in-process scan is warmed); returns what the worker's
    settings are (Dask's profiler, tick, heap trimming)."""
    import dask
    from tdse import config as cfgmod
    from tdse.studies.scan import run_batch
    cfg = cfgmod.loads(toml)
    run_batch([cfg, cfg.with_value("field.E0", 0.03)], "cupy")
    return {"profile": dask.config.get("distributed.worker.profile.enabled"),
            "tick": dask.config.get("distributed.admin.tick.interval"),
            "MALLOC_TRIM_THRESHOLD_": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}


def _operator_floor(cfg, members, terms, backend, repeat=15):
    """Seconds of a scan's operator products alone (#59 item 6: its compute bound): each
    batch's block Chebyshev terms x one application of the operator the batch steps with
    (:func:`tdse.model.hamiltonian.block_operator`: the DVR's T by GEMM -- on the CPU its
    two half-size GEMMs in the folded basis -- or the stencils' bands, then the diagonal)
    to the batch's N x B block, timed here on ``backend`` (:func:`_median_time`); the
    recurrence's other passes are left out.  On a GPU where the batch's series runs folded
    (:data:`tdse.numerics.graphs.FOLD_HALVES`: the DVR, N even, B > 1, the length gauge) the
    product timed is the folded one, the halves' strided-batched DGEMM
    (:func:`tdse.backends.cupy.blas.dgemm_halves_into`) and one element-wise pass, by its
    device time (:func:`_graph_seconds`; the unfolded product from Python had read x0.65-0.74
    of the scan: its host launches).  None where a batch's terms are not known."""
    if not terms or any(t is None for t in terms):
        return None
    from tdse.model.field import velocity_gauge
    from tdse.model.hamiltonian import block_operator
    from tdse.numerics import graphs
    xp = np
    if backend == "cupy":
        import cupy as xp
    rng = np.random.default_rng(0)
    per = {}
    for B in sorted(set(members)):
        X = xp.asarray(rng.standard_normal((cfg.grid.n, B)) + 1j * rng.standard_normal((cfg.grid.n, B)))
        V = xp.asarray(rng.standard_normal((cfg.grid.n, B)))
        sync = xp.cuda.Device().synchronize if xp is not np else (lambda: None)
        if xp is not np and graphs.folded(xp, cfg.grid, B, velocity_gauge(cfg.potential.field)):
            from tdse.backends.cupy import stencil
            from tdse.backends.cupy.blas import dgemm_halves_into
            from tdse.model.hamiltonian import kinetic_halves
            K2 = xp.ascontiguousarray(2.0 * xp.stack(kinetic_halves(cfg.grid, xp)))
            kin, out = xp.empty_like(X), xp.empty_like(X)

            def twenty():
                for _ in range(20):
                    dgemm_halves_into(xp, K2, X, kin)
                    stencil.fused_kernel(xp)(kin, V, X, 1.0, out)
            # device time: 20 products captured as one graph, replayed (a product timed
            # from Python reads as the host's ~25 us a launch)
            twenty()                  # (the kernel compiled and loaded before the capture)
            graph = graphs.capture(xp, twenty)
            per[B] = float(np.median([_graph_seconds(xp, graph) for _ in range(repeat + 1)][1:])) / 20
            continue
        op = block_operator(cfg.grid, 1.0, V, xp)
        X = op.into(X) if hasattr(op, "into") else X
        per[B] = _median_time(lambda: (op(X), sync()), repeat)[0]
    return float(sum(t * per[B] for t, B in zip(terms, members)))


def _graph_seconds(cp, graph, launches=1):
    """Device seconds of one launch of a CUDA ``graph``, ``launches`` of them back to back
    on a stream of its own with no host work between (CUDA events)."""
    s = cp.cuda.Stream(non_blocking=True)
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record(s)
    for _ in range(launches):
        graph.launch(s)
    b.record(s)
    b.synchronize()
    return cp.cuda.get_elapsed_time(a, b) / 1e3 / launches


def _scan(a):
    """An E0 scan of an input: the batched scan's wall time against the same members run one
    by one (`tdse.simulate`, the same numerics: Chebyshev, no time-error companion), both in
    this process; members per second, the largest difference of any member's acceleration
    from its serial run (at t_end where ``--save`` keeps no series of it), the scan's
    seconds over its operator products alone (:func:`_operator_floor`, timed in the same
    call; divided among ``--workers``), and the seconds and bytes of its file."""
    from tdse import config as cfgmod
    from tdse.studies.scan import scan
    import tdse
    cfg = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    cfg = cfg.with_value("propagator.time_error", "none").with_value("propagator.method", "chebyshev")
    if a.t_end:
        cfg = cfg.with_value("time.t_end", a.t_end)
    E0 = list(np.linspace(0.02, 0.08, a.members))
    workers_settings = None
    if a.backend == "cupy":   # warm the device and its kernels once (each worker's too)
        short = cfg.with_value("time.t_end", 10 * cfg.time.dt)
        scan(short, {"field.E0": E0[:2]}, backend="cupy")
        if a.scheduler:
            from dask.distributed import Client
            with Client(a.scheduler) as c:
                workers_settings = sorted(c.run(_warm_worker, cfgmod.to_toml(short)).values(),
                                          key=str)
    import shutil
    import tempfile
    out = a.parts or tempfile.mkdtemp(prefix="scan-bench-")
    t0 = time.perf_counter()
    try:
        res = scan(cfg, {"field.E0": E0}, backend=a.backend, workers=a.workers, batch=a.batch,
                   scheduler=a.scheduler, out=out, save=a.save)
        wall = time.perf_counter() - t0
        from tdse.run.scanfile import write
        from tdse.studies.scan import spectra
        w0 = time.perf_counter()
        write(os.path.join(out, "scan.h5"), res, spectra(res))
        write_s, file_bytes = time.perf_counter() - w0, os.path.getsize(os.path.join(out, "scan.h5"))
    finally:
        if a.parts is None:
            shutil.rmtree(out, ignore_errors=True)
    n_serial = a.serial if a.serial is not None else (a.members if a.backend == "numpy" else 1)
    picks = sorted(set(np.linspace(0, a.members - 1, max(1, n_serial)).astype(int)))
    serial, worst = [], 0.0
    for i in picks:
        s0 = time.perf_counter()
        r = tdse.simulate(cfg.with_value("field.E0", E0[i]), backend=a.backend)
        serial.append(time.perf_counter() - s0)
        whole = r.observables["acceleration"]
        got = res["acceleration"][i]
        ref = whole if got.ndim else whole[-1:]      # (--save final: the value at t_end)
        # over the member's largest |a(t)| either way (a(t_end), after the pulse, is small
        # beside it: a difference over it alone read 6e-9 where the series read 4e-11)
        worst = max(worst, float(np.abs(got - ref).max() / np.abs(whole).max()))
    per_serial = float(np.mean(serial))
    row = {"input": os.path.basename(a.input), "members": a.members, "backend": a.backend,
           "workers": a.workers, "scheduler": bool(a.scheduler), "gpus": a.gpus,
           "label": a.label, "workers_settings": workers_settings,
           "batches": res["batches"], "steps": cfg.time.steps,
           "n": cfg.grid.n, "scan_seconds": wall, "seconds_per_member": wall / a.members,
           "serial_runs_timed": len(serial), "serial_seconds_each": per_serial,
           "serial_seconds_all": per_serial * a.members,
           "serial_extrapolated": len(serial) < a.members,
           "batch_seconds": res.get("batch_seconds"),
           "batch_blas_threads": res.get("batch_blas_threads"),
           "phases": res.get("phases"),
           "speedup": per_serial * a.members / wall,
           "max_rel_diff_acceleration": worst,
           "batch_members": res.get("batch_members"),
           "batch_chebyshev_terms": res.get("batch_chebyshev_terms"),
           "save": a.save, "file_write_seconds": write_s, "file_bytes": file_bytes,
           "scan_and_file_seconds": wall + write_s}
    if a.cli:
        row.update(_scan_cli(a, cfg, E0, wall))
    floor = _operator_floor(cfg, res.get("batch_members"), res.get("batch_chebyshev_terms"), a.backend)
    if floor is not None:
        floor /= max(1, a.workers or 1)
        row.update(operator_floor_seconds=floor, scan_over_operator_floor=wall / floor)
    _say(f"{a.members} members: scan {wall:.1f} s vs serial {per_serial:.2f} s each "
         f"({'extrapolated from ' + str(len(serial)) if len(serial) < a.members else 'all run'}): "
         f"{row['speedup']:.1f}x; max rel diff {worst:.1e}"
         + (f"; x{wall / floor:.2f} its operator products alone ({floor:.2f} s)" if floor else ""))
    return [row], {}


def _scan_cli(a, cfg, E0, scan_seconds) -> dict:
    """The in-process scan's members by `tdse scan` in a new process (the same input as a
    file: Chebyshev, no time error; E0 by a:b:n), its wall and that wall over the
    in-process scan's seconds."""
    import shutil
    import tempfile

    from tdse import config as cfgmod
    d = tempfile.mkdtemp(prefix="scan-cli-")
    try:
        path = os.path.join(d, "scan.toml")
        with open(path, "w") as f:
            f.write(cfgmod.to_toml(cfg))
        args = ["scan", path, "--set", f"field.E0={float(E0[0])!r}:{float(E0[-1])!r}:{len(E0)}", "--backend",
                a.backend, "--save", a.save, "--out", os.path.join(d, "out"), "-q", "--force"]
        args += ["--batch", str(a.batch)] if a.batch else []
        args += ["--workers", str(a.workers)] if a.workers else []
        args += ["--scheduler", a.scheduler] if a.scheduler else []
        walls = [_timed_cli(args) for _ in range(max(1, a.cli_repeat))]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    cli = float(np.median(walls))
    _say(f"tdse scan as a new process: {cli:.2f} s (median of {len(walls)}: "
         f"{', '.join(f'{w:.2f}' for w in walls)}), x{cli / scan_seconds:.2f} the scan in process")
    return {"cli_wall_seconds": cli, "cli_walls_each": walls, "cli_over_scan": cli / scan_seconds}


# ---------------------------------------------------------------- formula: a potential as a formula
def _formula_args(p):
    p.add_argument("--input", default="inputs/h2plus_moving_large.toml")
    p.add_argument("--backend", default=None, help="numpy or cupy (default: cupy with GPUs)")
    p.add_argument("--method", default="chebyshev")
    p.add_argument("--steps", type=int, default=1000, help="timed steps after 50 warm-up steps")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--callable", action="store_true",
                   help="also the molecule as a Python function (tdse.with_potential)")


def _as_function(data):
    """The input's soft-core centres as a Python function V(x, t) (numpy)."""
    p = data["potential"]
    cs = [(c["Z"], c["x0"], c.get("amplitude", 0.0), c.get("frequency", 0.0), c.get("phase", 0.0))
          for c in p["centres"]]

    def V(x, t):
        return -sum(Z / np.sqrt((x - x0 - A * np.sin(w * t + f)) ** 2 + p["a"]) for Z, x0, A, w, f in cs)
    return V


def _as_formula(data):
    """The input's soft-core centres written as one [potential] formula (#55 item 3): the
    same molecule, V = -sum_c Z_c / sqrt((x - x0_c - A_c sin(w_c t + phi_c))**2 + a)."""
    p = data["potential"]
    terms, params = [], {"a": p["a"]}
    for i, c in enumerate(p["centres"]):
        params.update({f"Z{i}": c["Z"], f"x{i}": c["x0"], f"A{i}": c.get("amplitude", 0.0),
                       f"w{i}": c.get("frequency", 0.0), f"f{i}": c.get("phase", 0.0)})
        if c.get("ramp", 0.0):
            raise SystemExit("formula suite: a ramped centre has no formula here")
        terms.append(f"Z{i} / sqrt((x - x{i} - A{i} * sin(w{i} * t + f{i}))**2 + a)")
    data = dict(data)
    data["potential"] = {"kind": "expression", "V": "-(" + " + ".join(terms) + ")",
                         "parameters": params}
    return data


def _formula(a):
    """A step of the input's molecule written as a formula against the built-in soft-core
    centres (the same run otherwise), timed alternately in one process: the step loop alone
    (the stepper's graph path on a GPU), median of ``--repeat`` runs of ``--steps`` steps;
    the final psi of both compared."""
    import tomllib

    import tdse
    from tdse.config import parse
    from mgemm.arrays import to_host
    path = os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    data.setdefault("propagator", {})["method"] = a.method
    data["time"]["t_end"] = data["time"]["dt"] * (50 + a.steps)
    configs = {"soft_core": parse(data), "formula": parse(_as_formula(data))}
    if a.callable:
        configs["callable"] = tdse.with_potential(configs["soft_core"], _as_function(data), name="soft_core")
    backend = a.backend or ("cupy" if _gpus_present() else "numpy")
    plans = {k: tdse.prepare(c, backend=backend, check_resolution=False) for k, c in configs.items()}
    xp = plans["soft_core"].backend.xp
    sync = (lambda: xp.cuda.Device().synchronize()) if xp is not np else (lambda: None)
    times = {k: [] for k in plans}
    finals = {}
    for r in range(a.repeat):
        for k, plan in plans.items():
            st = plan.stepper()
            psi = xp.asarray(plan.psi0)
            for j in range(50):
                psi = st.step(psi, j)
            sync()
            t0 = time.perf_counter()
            for j in range(50, 50 + a.steps):
                psi = st.step(psi, j)
            sync()
            times[k].append((time.perf_counter() - t0) / a.steps)
            finals[k] = to_host(psi)
    step = {k: float(np.median(v)) for k, v in times.items()}
    diff = float(np.abs(finals["formula"] - finals["soft_core"]).max())
    row = {"input": a.input, "backend": backend, "method": a.method, "n": configs["formula"].grid.n,
           "formula": configs["formula"].potential.V, "steps": a.steps,
           "step_seconds": step, "all_step_seconds": times,
           "ratio_formula_over_soft_core": step["formula"] / step["soft_core"],
           "final_psi_max_abs_diff": diff}
    if a.callable:
        row["ratio_callable_over_soft_core"] = step["callable"] / step["soft_core"]
        row["callable_final_psi_max_abs_diff"] = float(np.abs(finals["callable"] - finals["soft_core"]).max())
        _say(f"callable {step['callable'] * 1e6:.1f} us/step: x{row['ratio_callable_over_soft_core']:.3f}")
    _say(f"{backend} N={row['n']}: soft-core {step['soft_core'] * 1e6:.1f} us/step, formula "
         f"{step['formula'] * 1e6:.1f} us/step: x{row['ratio_formula_over_soft_core']:.3f} "
         f"(final psi {diff:.1e} apart)")
    return [row], {}


# ---------------------------------------------------------------- tsurff: the flux observer's cost
def _tsurff_args(p):
    p.add_argument("--input", default="inputs/atom_hhg.toml")
    p.add_argument("--radius", type=float, default=60.0)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--backend", default="numpy")
    p.add_argument("--gauges", nargs="+", default=["length"], help="length and/or velocity")
    p.add_argument("--cli", action="store_true", help="also `tdse run INPUT --no-plots` (a new "
                   "process, the whole input) with and without --set output.tsurff_radius=R, alternately")


def _tsurff(a):
    """The run's loop with t-SURFF's observer (tdse.run.tsurff.TSurff, its 401 momenta)
    against the same loop without it, alternately in one process (#55 item 1: the sink's
    cost, target <= 5 % of the run), in each of ``--gauges`` on ``--backend``: median seconds
    of ``--steps`` steps each (and, with both gauges, the velocity gauge's bare loop against
    the length gauge's: on a GPU it leaves the graphs for the launched path)."""
    import tdse
    from tdse.studies.photoelectrons import TSurff
    path = os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input
    rows = []
    for gauge in a.gauges:
        cfg = tdse.load_config(path)
        cfg = cfg.with_value("time.t_end", cfg.time.dt * a.steps).with_value(
            "propagator.time_error", "none").with_value("field.gauge", gauge)
        plan = tdse.prepare(cfg, backend=a.backend)
        xp = plan.backend.xp
        times = {"bare": [], "tsurff": []}
        for _ in range(a.repeat):
            for kind in times:
                sinks = [TSurff(cfg, a.radius)] if kind == "tsurff" else []
                t0 = time.perf_counter()
                tdse.evolve(plan, plan.psi0, sinks)
                if xp is not np:
                    xp.cuda.Device().synchronize()
                times[kind].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) for k, v in times.items()}
        rows.append({"input": a.input, "gauge": gauge, "backend": a.backend, "n": cfg.grid.n,
                     "steps": a.steps, "radius": a.radius, "seconds": med, "all_seconds": times,
                     "ratio": med["tsurff"] / med["bare"],
                     "us_per_step": (med["tsurff"] - med["bare"]) / a.steps * 1e6})
        _say(f"{gauge} N={cfg.grid.n} ({a.backend}): {med['bare']:.2f} s bare, {med['tsurff']:.2f} s with "
             f"t-SURFF: x{rows[-1]['ratio']:.3f} ({rows[-1]['us_per_step']:.1f} us a step)")
    if a.cli:                                 # the whole run's wall, in new processes
        import subprocess
        import tempfile
        walls = {"bare": [], "tsurff": []}
        with tempfile.TemporaryDirectory() as out:
            for _ in range(a.repeat):
                for kind in walls:
                    cmd = [sys.executable, "-m", "tdse", "run", path, "--out", out, "--force",
                           "--no-plots", "--backend", a.backend]
                    cmd += ["--set", f"output.tsurff_radius={a.radius}"] if kind == "tsurff" else []
                    t0 = time.perf_counter()
                    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
                    walls[kind].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) for k, v in walls.items()}
        rows.append({"input": a.input, "part": "cli", "backend": a.backend, "wall": med,
                     "all_walls": walls, "ratio": med["tsurff"] / med["bare"]})
        _say(f"tdse run {a.input} ({a.backend}): {med['bare']:.2f} s, with t-SURFF {med['tsurff']:.2f} s: "
             f"x{rows[-1]['ratio']:.3f} of the run's wall")
    by = {r["gauge"]: r for r in rows if "gauge" in r}
    extra = {}
    if "length" in by and "velocity" in by:
        extra["velocity_over_length_bare"] = by["velocity"]["seconds"]["bare"] / by["length"]["seconds"]["bare"]
        _say(f"velocity gauge / length gauge, bare loop: x{extra['velocity_over_length_bare']:.2f}")
    return rows, extra


# ---------------------------------------------------------------- nuclei: the 1D + 1D model's step
def _nuclei_args(p):
    p.add_argument("--input", default="inputs/h2plus_nuclei.toml")
    p.add_argument("--grids", nargs="+", default=["256x128"], help="N_x x N_R (the input's box, dx and dR set)")
    p.add_argument("--backend", default="numpy")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=None, help="host BLAS threads (default: all)")
    p.add_argument("--devices", type=int, nargs="+", default=None,
                   help="GPU ids: each grid on the first, then with Psi's columns split over all")
    p.add_argument("--converge", nargs="*", default=None, metavar="KEY=VALUE",
                   help="instead: `tdse run INPUT` as given and with each variant (\"KEY=VALUE [KEY=VALUE ...]\", "
                   "all at once, one process each), their fractions and KER peaks side by side")


def _nuclei_converge(a, path):
    """The input's run and its variants (``--converge``), each `tdse run` in its own process,
    concurrently: the fractions at t_end (dissociated and ionised with what their absorbers
    took) and the KER spectrum's peaks, each variant against the input's."""
    import subprocess
    import tempfile

    import h5py
    variants = [None] + list(a.converge)
    rows = []
    with tempfile.TemporaryDirectory() as out:
        procs = []
        for i, v in enumerate(variants):
            cmd = [sys.executable, "-m", "tdse", "run", path, "--out", os.path.join(out, str(i)), "--no-plots",
                   "-q", "--backend", a.backend] + [w for kv in (v or "").split() for w in ("--set", kv)]
            procs.append((v, time.perf_counter(), subprocess.Popen(cmd, cwd=ROOT)))
        for i, (v, t0, p) in enumerate(procs):
            if p.wait() != 0:
                _say(f"tdse run with {v} failed (exit {p.returncode})")
                continue
            wall = time.perf_counter() - t0
            name = os.listdir(os.path.join(out, str(i)))[0]
            with h5py.File(os.path.join(out, str(i), name)) as f:
                o = {k: float(f[f"observables/{k}"][-1]) for k in
                     ("bound", "dissociated", "ionised", "absorbed_x", "absorbed_R", "norm", "energy")}
                E, P = f["ker/energy_eV"][:], f["ker/probability"][:]
                loop = float(f.attrs["loop_seconds"])
            peaks = [float(E[j]) for j in range(1, len(E) - 1)
                     if E[j] > 0.05 and P[j] >= P[j - 1] and P[j] > P[j + 1] and P[j] > 0.05 * P[E > 0.05].max()]
            rows.append({"set": v, "wall_s": wall, "loop_s": loop, "dissociated": o["dissociated"] + o["absorbed_R"],
                         "ionised": o["ionised"] + o["absorbed_x"], "bound": o["bound"], "energy": o["energy"],
                         "ker_peaks_eV": peaks, "ker_mean_eV": float((E * P).sum() / P.sum())})
    base = rows[0]
    for r in rows:
        r["delta"] = {k: r[k] - base[k] for k in ("dissociated", "ionised", "bound", "ker_mean_eV")}
        _say(f"{r['set'] or 'as given':>24}: dissociated {r['dissociated']:.5f}, ionised {r['ionised']:.5f}, "
             f"bound {r['bound']:.5f}, KER peaks {', '.join(f'{p:.3f}' for p in r['ker_peaks_eV'])} eV "
             f"(mean {r['ker_mean_eV']:.4f}); loop {r['loop_s']:.0f} s")
    return rows, {"input": a.input, "backend": a.backend}


def _nuclei(a):
    """Seconds per step of the 1D + 1D H2+ model (tdse.model.nuclei; the input's box and
    pulse, dx and dR set for each N_x x N_R of ``--grids``) on ``--backend``, per Chebyshev
    term, and against the same device's GEMM rate in this run: a term applies T_x (one real
    GEMM, N_x x N_x by N_x x 2 N_R: 4 N_x^2 N_R flops) and T_R (one complex GEMM, 8 N_x N_R^2),
    timed alone here; ``gemm_share`` = those two GEMMs' time over a term's (the rest: the
    potential, the recurrence's axpys)."""
    import tdse
    from tdse.model import nuclei as nm
    from tdse.numerics.stepper import NucleiStepper
    path = os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input
    if a.converge is not None:
        return _nuclei_converge(a, path)
    if a.threads:
        with _blas_threads(a.threads):
            rows, extra = _nuclei_steps(a, path)
        return [dict(r, threads=a.threads) for r in rows], extra
    return _nuclei_steps(a, path)


def _dgemm_peak(xp, device=0, n=None):
    """FLOP/s of one large real GEMM (n x n, median of 5) on ``xp``'s device ``device``: the
    rate a term's products are held against."""
    n = n or (8192 if xp is not np else 2048)
    if xp is not np:
        xp.cuda.Device(device).use()
    sync = (lambda: None) if xp is np else xp.cuda.Device(device).synchronize
    rng = np.random.default_rng(1)
    A, B = xp.asarray(rng.standard_normal((n, n))), xp.asarray(rng.standard_normal((n, n)))
    A @ B
    times = []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        A @ B
        sync()
        times.append(time.perf_counter() - t0)
    return 2.0 * n ** 3 / float(np.median(times))


def _nuclei_steps(a, path):
    import tdse
    from tdse.model import nuclei as nm
    from tdse.numerics.stepper import NucleiStepper
    from tdse.run.backend import backend_for
    base = tdse.load_config(path)
    rows = []
    devices = a.devices or [0]
    peak = _dgemm_peak(backend_for(base, a.backend).xp, devices[0])
    for spec in a.grids:
        nx, nr = (int(v) for v in spec.split("x"))
        g, nu = base.grid, base.nuclei
        cfg = base.with_value("grid.dx", (g.x_max - g.x_min) / nx).with_value(
            "nuclei.dR", (nu.R_max - nu.R_min) / nr).with_value("nuclei.state", 0)
        xp = backend_for(cfg, a.backend).xp
        if xp is not np:
            xp.cuda.Device(devices[0]).use()
        m = nm.Model(cfg, xp)
        rng = np.random.default_rng(57)
        psi0 = xp.asarray(rng.standard_normal(m.shape) + 1j * rng.standard_normal(m.shape))
        sync = (lambda: None) if xp is np else (lambda: [xp.cuda.Device(d).synchronize() for d in set(devices)])
        Yr = xp.asarray(rng.standard_normal((nx, 2 * nr)))
        Yc = xp.asarray(rng.standard_normal((nx, nr)) + 1j * rng.standard_normal((nx, nr)))
        gem = []
        for _ in range(5):
            sync()
            t0 = time.perf_counter()
            m.Tx @ Yr
            sync()
            t1 = time.perf_counter()
            Yc @ m.TR
            sync()
            gem.append((t1 - t0, time.perf_counter() - t1))
        tx, tr = (float(np.median([g_[i] for g_ in gem])) for i in (0, 1))
        flops = 4.0 * nx * nx * nr + 8.0 * nx * nr * nr
        # the model's own apply (the CPU's path, a scan's), then a run's GPU path: Psi's
        # columns on the first GPU, then split over all of ``devices``
        splits = [("apply", 1)] + ([] if xp is np else [("columns", 1)]) + (
            [("columns", len(devices))] if len(devices) > 1 else [])
        first = None
        for path_, gpus in splits:
            columns = None
            if path_ == "columns":
                from tdse.backends.cupy.columns import ColumnOperator
                h = nm.Model(cfg)
                columns = ColumnOperator(xp, devices[:gpus], h.Tx_host, h.TR_host.astype(complex), h.V_host,
                                         h.kappa * h.x[:, None])
            st = NucleiStepper(m, xp, columns=columns)
            psi = st.step(psi0.copy(), 1000)               # warm-up (mid-pulse: the field's on)
            sync()
            times, terms = [], []
            for _ in range(a.repeat):
                t0, k0 = time.perf_counter(), st.cheb_terms
                for j in range(a.steps):
                    psi = st.step(psi, 1000 + j)
                sync()
                times.append((time.perf_counter() - t0) / a.steps)
                terms.append((st.cheb_terms - k0) / a.steps)
            step, per = float(np.median(times)), float(np.median(terms))
            term = step / per
            first = first or step
            rows.append({"grid": [nx, nr], "backend": a.backend, "gpus": gpus, "path": path_,
                         "devices": devices[:gpus] if gpus > 1 else devices[:1], "steps": a.steps,
                         "step_s": step, "terms_per_step": per, "term_s": term, "term_flops": flops,
                         "term_tflops": flops / term / 1e12, "gemm_s": [tx, tr],
                         "gemm_tflops": [4.0 * nx * nx * nr / tx / 1e12, 8.0 * nx * nr * nr / tr / 1e12],
                         "gemm_share": (tx + tr) / term, "speedup": first / step,
                         "of_gemm_rate": (tx + tr) / gpus / term, "dgemm_peak_tflops": peak / 1e12,
                         "of_dgemm_peak": flops / term / (gpus * peak), "all_step_s": times})
            r = rows[-1]
            _say(f"{nx} x {nr} ({a.backend}, {path_}{f', {gpus} GPUs' if gpus > 1 else ''}): "
                 f"{step * 1e3:.2f} ms a step, "
                 f"{per:.0f} terms, {term * 1e6:.0f} us a term ({r['term_tflops']:.3f} TFLOP/s); its GEMMs "
                 f"alone {(tx + tr) * 1e6:.0f} us on one ({r['gemm_tflops'][0]:.2f} real, "
                 f"{r['gemm_tflops'][1]:.2f} complex TFLOP/s): a term at {r['of_gemm_rate']:.2f} of "
                 f"{gpus} x that rate, {r['of_dgemm_peak']:.2f} of {gpus} x the {peak / 1e12:.1f} TFLOP/s of a "
                 f"large DGEMM" + (f"; {r['speedup']:.2f}x the first row" if r['speedup'] != 1 else ""))
    return rows, {"devices": devices}


# ---------------------------------------------------------------- small-n: the launch limit
def _small_n_args(p):
    p.add_argument("--input", default="inputs/atom_hhg.toml")
    p.add_argument("--n", type=int, nargs="+", default=[256, 500, 1000, 2000, 4000])
    p.add_argument("--steps", type=int, default=400, help="steps timed per case")
    p.add_argument("--methods", nargs="+", default=["chebyshev", "dense"])
    p.add_argument("--dense-max-n", type=int, default=2000, help="dense exponent up to this N (GPU)")
    p.add_argument("--cpu-dense-max-n", type=int, default=1000)
    p.add_argument("--no-dynamiqs", action="store_true")
    p.add_argument("--no-single-run", action="store_true",
                   help="skip the input's own run (every step of t_end, absorber and all)")


def _launch_cost(cp, nodes=1000):
    """Seconds per node of a replayed graph of empty kernels (the launch bound's unit)."""
    k = cp.ElementwiseKernel("float64 x", "float64 y", "y = x", "tdse_empty")
    a, b = cp.zeros(1), cp.zeros(1)
    k(a, b)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        for _ in range(nodes):
            k(a, b)
        g = s.end_capture()
        g.launch(s)
        s.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            g.launch(s)
        s.synchronize()
    return (time.perf_counter() - t0) / (10 * nodes)


def _hbm_rate(cp):
    """Bytes per second of a 1 GiB device copy (read + write)."""
    a = cp.ones(2 ** 27)
    b = cp.empty_like(a)
    cp.copyto(b, a)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        cp.copyto(b, a)
    cp.cuda.Device().synchronize()
    return 5 * 2 * a.nbytes / (time.perf_counter() - t0)


def _bare_steps(plan, steps, graphs=True):
    """Seconds per step of the plan's stepper on psi, after two warm-up steps (graphs
    captured there); a GPU loop's context switch (tdse.run.loop._settle, ~0.2 s a GPU)
    made before the clock starts -- inside it, it had added ~10 us a step to a 40000-step
    bare loop on 2 GPUs."""
    import tdse
    from tdse.run.loop import _settle
    xp = plan.backend.xp
    from tdse.numerics.propagators import Launched
    st = plan.stepper()
    if not graphs:
        st.propagator = Launched(st)
    psi = xp.asarray(plan.psi0)

    def sync():
        if xp is not np:
            xp.cuda.Device().synchronize()
    with plan.backend.limit():
        state = tdse.evolve(plan, psi, stop=2, stepper=st)
        _settle(plan, steps)
        sync()
        t0 = time.perf_counter()
        state = tdse.evolve(plan, state.psi, start=2, stop=2 + steps, stepper=st, settle=False)
        sync()
    g = getattr(st.propagator, "graph", None)
    nodes = getattr(g, "nodes_per_step", None) if g else None
    return (time.perf_counter() - t0) / steps, st, nodes, state.psi


def _dynamiqs_case(cfg, plan, t_end, rtol=1e-8):
    """dynamiqs.sesolve of the same H(t) = T + V0 + x E(t) (the sinc-DVR matrix, the same
    pulse), Dopri8 rtol = atol = ``rtol`` in double precision: (seconds warm, seconds with
    compilation, final psi)."""
    import dynamiqs as dq
    import jax.numpy as jnp
    from tdse.model import hamiltonian
    from tdse.model.potential import soft_core
    dq.set_precision("double")
    x = np.asarray(plan.x)
    H0 = hamiltonian.kinetic_dense(cfg.grid) + np.diag(soft_core(cfg.potential, x, 0.0))
    f = cfg.potential.field
    E0, w, dur = f.E0, f.omega, f.duration

    def field(t):
        return jnp.where(t <= dur, E0 * jnp.sin(jnp.pi * t / dur) ** 2 * jnp.sin(w * t + f.phase), 0.0)
    H = dq.constant(jnp.asarray(H0, dtype=jnp.complex128)) + dq.modulated(field, jnp.asarray(np.diag(x), dtype=jnp.complex128))
    psi0 = jnp.asarray(np.asarray(plan.psi0) * np.sqrt(cfg.grid.dx), dtype=jnp.complex128)[:, None]
    tsave = jnp.asarray([0.0, t_end])
    kw = {}
    try:
        kw["method"] = dq.method.Dopri8(rtol=rtol, atol=rtol)
    except AttributeError:
        kw["solver"] = dq.solver.Dopri8(rtol=rtol, atol=rtol)

    def run():
        r = dq.sesolve(H, psi0, tsave, **kw)
        out = np.asarray(r.states[-1] if not hasattr(r.states, "to_jax") else r.states.to_jax()[-1])
        return out.ravel() / np.sqrt(cfg.grid.dx)
    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    psi = run()
    return time.perf_counter() - t0, first, psi


def _small_n(a):
    """Seconds per cfm4 step of one run at N = 256 ... 4000 (the DVR, atom_hhg's box and pulse
    without the absorber, dx = box / N) on this machine's GPU -- replayed from a CUDA graph
    and launched from Python -- and its CPU; the dense exponent too; the graph's kernels per
    step against the launch bound (an empty kernel's replay cost) and the bandwidth bound
    (the kinetic matrix read once a term); what backend auto picks; dynamiqs' sesolve on the
    same H(t) in the same run (its final psi compared)."""
    import dataclasses

    import cupy as cp

    import tdse
    from tdse import config as cfgmod
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # JAX beside CuPy
    base = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    base = dataclasses.replace(base, absorber=None)
    base = base.with_value("propagator.time_error", "none")
    width = base.grid.x_max - base.grid.x_min
    # the input's own run first, in a process that has not yet loaded JAX nor run the CPU
    # cases (as a user's `tdse run`); its dynamiqs comparison at the end
    single = None if a.no_single_run else _single_run(a, cp)
    node_s, hbm = _launch_cost(cp), _hbm_rate(cp)
    _say(f"launch bound {node_s * 1e6:.2f} us a graph node; device copy {hbm / 1e9:.0f} GB/s")
    rows = []
    for n in a.n:
        for method in a.methods:
            if method == "dense" and n > a.dense_max_n:
                continue
            cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / n))
            cfg = cfg.with_value("propagator.method", method)
            cfg = cfg.with_value("time.t_end", (a.steps + 2) * cfg.time.dt)
            row = {"n": cfg.grid.n, "method": method, "steps": a.steps}
            gpu = tdse.prepare(cfg, backend="cupy", devices=[0], check_resolution=False)
            row["gpu_graph_s"], st, nodes, psi_gpu = _bare_steps(gpu, a.steps, graphs=True)
            row["gpu_launched_s"] = _bare_steps(gpu, a.steps if method != "dense" else min(a.steps, 100),
                                                graphs=False)[0]
            row["graph_nodes_per_step"] = nodes
            if nodes:
                terms = st.cheb_terms / max(1, st.exponentials) * len(st.scheme.factors)
                row["launch_bound_s"] = nodes * node_s
                row["bandwidth_bound_s"] = terms * 8.0 * cfg.grid.n ** 2 / hbm
            if method != "dense" or n <= a.cpu_dense_max_n:
                cpu = tdse.prepare(cfg, backend="numpy", check_resolution=False)
                k = a.steps if method != "dense" else min(a.steps, 20)   # dense: a few steps
                row["cpu_s"], _, _, psi_cpu = _bare_steps(cpu, k)
                psi_gpu = _bare_steps(gpu, k)[3] if k != a.steps else psi_gpu
                row["cpu_threads"] = cpu.backend.threads
                row["gpu_vs_cpu_max_diff"] = float(np.abs(cp.asnumpy(psi_gpu) - psi_cpu).max())
            auto = tdse.prepare(cfg, backend="auto", check_resolution=False)
            row["auto"] = auto.backend.name
            timed = {"cupy": row["gpu_graph_s"], "numpy": row.get("cpu_s")}
            best = min(v for v in timed.values() if v)
            row["auto_over_best"] = timed[auto.backend.name] / best if timed.get(auto.backend.name) else None
            if method == "chebyshev" and not a.no_dynamiqs:
                try:
                    warm, first, psi_dq = _dynamiqs_case(cfg, gpu, a.steps * cfg.time.dt)
                    ref = tdse.evolve(gpu, cp.asarray(gpu.psi0), stop=a.steps).psi
                    import jax
                    row.update({"dynamiqs_s": warm / a.steps, "dynamiqs_first_call_s": first,
                                "dynamiqs_device": str(jax.devices()[0]),
                                "dynamiqs_max_diff": float(np.abs(cp.asnumpy(ref) - psi_dq).max())})
                except Exception as e:  # noqa: BLE001 -- said in the row, the rest still runs
                    row["dynamiqs_error"] = f"{type(e).__name__}: {str(e)[:160]}"
            _say(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
            rows.append(row)
    meta = {"launch_bound_s_per_node": node_s, "device_copy_bytes_per_s": hbm}
    if single is not None:
        meta["single_run"] = _single_run_dynamiqs(a, single)
    return rows, meta


def _single_run(a, cp):
    """The input itself (atom_hhg: absorber and all, every step of t_end) stepped on one GPU
    with no sinks (#27's target: <= 0.5 s), a whole exponential one cooperative kernel
    (graphs._CHAIN) against a graph node a Chebyshev term (graphs.CHEB_CHAIN off) and on the CPU,
    final psi compared: (the record, (config, GPU plan) for :func:`_single_run_dynamiqs`)."""
    import tdse
    cfg = tdse.load_config(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    cfg = cfg.with_value("propagator.time_error", "none")
    steps = cfg.time.steps - 2                 # two warm-up steps (graphs captured there)
    gpu = tdse.prepare(cfg, backend="cupy", devices=[0], check_resolution=False)
    out = {"input": a.input, "n": cfg.grid.n, "steps": cfg.time.steps, "method": gpu.config.propagator.method}
    from tdse.numerics import graphs
    psi = {}
    for key, chain in (("chain", True), ("terms", False)):
        graphs.CHEB_CHAIN = chain             # (a module constant: tests and this suite force it off)
        try:
            best = None
            for _ in range(3):                 # the best of three
                sec, st, nodes, p = _bare_steps(gpu, steps)
                best = sec if best is None else min(best, sec)
        finally:
            graphs.CHEB_CHAIN = True
        out[f"gpu_{key}_s"] = best * cfg.time.steps
        out[f"gpu_{key}_nodes_per_step"] = nodes
        g = getattr(st.propagator, "graph", None)
        out[f"gpu_{key}_kernel"] = getattr(g, "chain_kernel", None) if g else None
        psi[key] = cp.asnumpy(p)
    out["chain_vs_terms_max_diff"] = float(np.abs(psi["chain"] - psi["terms"]).max())
    cpu = tdse.prepare(cfg, backend="numpy", check_resolution=False)
    sec, _, _, p = _bare_steps(cpu, steps)
    out["cpu_s"], out["cpu_threads"] = sec * cfg.time.steps, cpu.backend.threads
    out["gpu_vs_cpu_max_diff"] = float(np.abs(psi["chain"] - p).max())
    return out, (cfg, gpu)


def _single_run_dynamiqs(a, single):
    """dynamiqs on the single run's H(t) (without the absorber), said in its record."""
    out, (cfg, gpu) = single
    if not a.no_dynamiqs:
        try:
            warm, first, _ = _dynamiqs_case(cfg, gpu, cfg.time.t_end)
            out.update({"dynamiqs_s": warm, "dynamiqs_first_call_s": first,
                        "dynamiqs_note": "the same H(t) without the absorber (dynamiqs has no mask)"})
        except Exception as e:  # noqa: BLE001 -- said in the record, the rest still runs
            out["dynamiqs_error"] = f"{type(e).__name__}: {str(e)[:160]}"
    _say(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in out.items()))
    return out


# ---------------------------------------------------------------- mid-step: #59 item 3
def _mid_step_args(p):
    p.add_argument("--input", default="inputs/h2plus_moving_large.toml")
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384])
    p.add_argument("--stencils", type=int, nargs="+", default=[3, 5], choices=[3, 5])
    p.add_argument("--schemes", nargs="+", default=["midpoint"], choices=["midpoint", "cfm4"])
    p.add_argument("--steps", type=int, default=1000, help="steps timed per path")
    p.add_argument("--replays", type=int, default=2000, help="graph replays timed per path")


def _most_terms(g):
    """The key (pattern, 1) of the GraphStep ``g``'s one-step graph of the most terms."""
    return max((k for k in g.graphs if k[1] == 1), key=lambda k: sum(k[0]))


def _replayed(cp, g, replays):
    """Device seconds a step of the GraphStep ``g``: its graph of the most terms met,
    replayed back to back with no host work between (:func:`_graph_seconds`, after one
    launch that warms it)."""
    graph = g.graphs[_most_terms(g)]
    _graph_seconds(cp, graph)
    return _graph_seconds(cp, graph, replays)


#: the least a term of tdse_cheb_tile can take on the device: per term each thread reads
#: its neighbours' values from shared memory, writes its own, and the block waits
_BARRIER_CHAIN = r"""
extern "C" __global__ void tdse_barrier_chain(double* out, int K, int ext) {
    extern __shared__ double w[];
    double* b[2] = {w, w + ext};
    for (int j = threadIdx.x; j < ext; j += blockDim.x) w[j] = j;
    __syncthreads();
    for (int k = 1; k <= K; ++k) {
        const double* cur = b[(k - 1) & 1];
        double* nxt = b[k & 1];
        for (int j = k + threadIdx.x; j < ext - k; j += blockDim.x)
            nxt[j] = 0.5 * (cur[j - 1] + cur[j + 1]) - cur[j];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = b[K & 1][ext / 2];
}
"""


def _barrier_chain(cp, g, K, replays=200):
    """Device seconds of :data:`_BARRIER_CHAIN` with the GraphStep ``g``'s tile grid and
    block for K terms (its halo): the latency bound of a tiled exponential."""
    halo = g.rad * K
    ext = g.tile + 2 * halo
    blocks, threads = -(-g.n // g.tile), min(1024, 32 * -(-ext // 32))
    k = cp.RawKernel(_BARRIER_CHAIN, "tdse_barrier_chain")
    out = cp.empty(blocks)
    args = ((blocks,), (threads,), (out, np.int32(K), np.int32(ext)))
    k(*args, shared_mem=16 * ext)
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    for _ in range(replays):
        k(*args, shared_mem=16 * ext)
    b.record()
    b.synchronize()
    return cp.cuda.get_elapsed_time(a, b) / 1e3 / replays


def _mid_step(a):
    """#59 item 3: one run's Chebyshev step on the 3-/5-point stencil at N = 8192 and 16384
    (the input's box and dt, dx = box / N, the potential's own H(t)) on one GPU: a whole
    exponential as one kernel of overlapping tiles (chain.tdse_cheb_tile) against the graph
    of two kernels a term it replaces (graphs.CHEB_TILE off) and the step launched from
    Python; each as the loop's seconds a step (tdse.evolve, host included) and as the
    graph's device seconds (replayed back to back); beside them the launch bound (the
    graph's nodes x an empty node's replay), the tile's latency bound (its grid and blocks
    doing nothing a term but a 3-point average in shared memory and a barrier:
    :data:`_BARRIER_CHAIN`, launched back to back) and the bandwidth bound (the bytes a step must
    move through HBM at the device copy rate: the tile reads psi, the mask and x and writes
    psi, 48 N bytes an exponential; the terms' nodes read 3 and write 2 vectors a term,
    80 N bytes); psi of each path against the launched one after the same steps."""
    import dataclasses

    import cupy as cp

    import tdse
    from tdse import config as cfgmod
    from tdse.numerics import graphs as G
    base = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    base = base.with_value("propagator.time_error", "none").with_value("propagator.method", "chebyshev")
    width = base.grid.x_max - base.grid.x_min
    node_s, hbm = _launch_cost(cp), _hbm_rate(cp)
    _say(f"launch bound {node_s * 1e6:.2f} us a graph node; device copy {hbm / 1e9:.0f} GB/s")
    rows = []
    for n in a.n:
        for stencil in a.stencils:
            for scheme in a.schemes:
                cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / n, stencil=stencil))
                cfg = cfg.with_value("propagator.scheme", scheme)
                cfg = cfg.with_value("time.t_end", (a.steps + 2) * cfg.time.dt)
                plan = tdse.prepare(cfg, backend="cupy", devices=[0], check_resolution=False)
                row = {"n": cfg.grid.n, "stencil": stencil, "scheme": scheme, "steps": a.steps}
                psi = {}
                for key in ("tile", "terms", "launched"):
                    G.CHEB_TILE = key == "tile"       # (a module constant: tests and this suite)
                    try:
                        sec, st, nodes, p = _bare_steps(plan, a.steps, graphs=key != "launched")
                    finally:
                        G.CHEB_TILE = True
                    row[f"{key}_step_s"], psi[key] = sec, cp.asnumpy(p)
                    g = getattr(st.propagator, "graph", None)
                    if key != "launched":
                        row[f"{key}_nodes_per_step"] = nodes
                        row[f"{key}_device_s"] = _replayed(cp, g, a.replays)
                        row[f"{key}_launch_bound_s"] = nodes * node_s
                        terms = g.cheb_terms / max(1, g.exponentials)
                        row["terms_per_exponential"] = terms
                        E = len(g.rows)
                        row[f"{key}_bandwidth_bound_s"] = (48.0 * n * E if key == "tile"
                                                           else 80.0 * n * terms * E) / hbm
                        if key == "tile":
                            row["tile_latency_bound_s"] = sum(_barrier_chain(cp, g, int(K))
                                                              for K in _most_terms(g)[0])
                    else:
                        row["tile_vs_launched_max_diff"] = float(np.abs(psi["tile"] - psi[key]).max())
                        row["terms_vs_launched_max_diff"] = float(np.abs(psi["terms"] - psi[key]).max())
                        row["psi_scale"] = float(np.abs(psi[key]).max())
                row["tile_over_terms_step"] = row["tile_step_s"] / row["terms_step_s"]
                row["tile_device_over_latency_bound"] = row["tile_device_s"] / row["tile_latency_bound_s"]
                _say(f"N={n} {stencil}-point {scheme}: step {row['tile_step_s'] * 1e6:.1f} us tiled "
                     f"({row['tile_device_s'] * 1e6:.1f} us device) against {row['terms_step_s'] * 1e6:.1f} "
                     f"us by terms ({row['terms_device_s'] * 1e6:.1f}), {row['launched_step_s'] * 1e6:.0f} "
                     f"us launched; {row['terms_per_exponential']:.0f} terms; latency bound "
                     f"{row['tile_latency_bound_s'] * 1e6:.1f} us; diff "
                     f"{row['tile_vs_launched_max_diff']:.1e}")
                rows.append(row)
    return rows, {"launch_bound_s_per_node": node_s, "device_copy_bytes_per_s": hbm, "input": a.input}


# ---------------------------------------------------------------- run-overhead: a run vs its steps
def _at_least(lo):
    """An argparse type: an integer >= lo (a clear message otherwise)."""
    def parse(v):
        try:
            k = int(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{v!r} is not an integer") from None
        if k < lo:
            raise argparse.ArgumentTypeError(f"{k} must be >= {lo}")
        return k
    return parse


def _run_overhead_args(p):
    p.add_argument("--input", default="inputs/h2plus_moving.toml")
    p.add_argument("--n", type=int, nargs="+", default=[256, 2048])
    p.add_argument("--stencils", nargs="+", default=["3", "5", "dvr"])
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--steps", type=_at_least(3), default=100,
                   help="steps of each run (t_end = steps dt; two are warm-up)")
    p.add_argument("--every", type=int, default=None, help="observables_every (default: the input's)")
    p.add_argument("--populations-every", type=_at_least(0), nargs="+", default=[0],
                   help="output.populations_every, a row each (0: the input's, with every observation)")
    p.add_argument("--repeat", type=_at_least(1), default=1,
                   help="the bare loop and the 1- and S-step runs this many times each, medians kept")
    p.add_argument("--start-up-repeat", type=_at_least(1), default=None,
                   help="the 1-step run (the start-up the target leaves apart) this many times, "
                        "its median kept (default: max(3, --repeat): a GPU process's start-up "
                        "moved by ~1 s between runs, 5 %% of a 150000-step 3-point run)")
    p.add_argument("--threads", type=_at_least(1), default=None,
                   help="host BLAS threads of the bare loop and of the CLI's runs (tdse run "
                        "--threads) alike; default: each chooses its own, as a user's run does")
    p.add_argument("--companion", action=argparse.BooleanOptionalAction, default=True,
                   help="also time the S-step run with propagator.time_error = \"companion\" "
                        "(its own column; not part of the target)")


_PYCACHE = []


def _cli_env():
    """The environment of a timed CLI run: the project on PYTHONPATH, and its bytecode kept
    (PYTHONPYCACHEPREFIX, a folder of this process's) and compiled once before the first run
    (compileall), as an installed package has it -- where the machine sets
    PYTHONDONTWRITEBYTECODE (the GPU machines do) every run compiled tdse and mgemm again,
    which a user's installed copy does not do (0.05-0.08 s of atom_hhg's `tdse run` on an
    H200's host, 1.86-1.90 against 1.92-1.94 s; cProfile counts 0.5 s of compiles, its own
    cost included: ``scan_cli_profile_h200x1_20261201T0717.txt``)."""
    import subprocess
    import tempfile
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not _PYCACHE:
        _PYCACHE.append(tempfile.mkdtemp(prefix="tdse-pycache-"))
        env["PYTHONPYCACHEPREFIX"] = _PYCACHE[0]
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "tdse"),
                        os.path.join(ROOT, "mgemm")], env=env, capture_output=True, check=True)
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE[0]
    return env


def _timed_cli(args, marks=None):
    """The wall of ``python -m tdse ARGS``; ``marks``: a list given the process's spawn and
    end in epoch seconds (``time.time()``, the run file's ``timeline`` clock)."""
    import subprocess
    env = _cli_env()
    t0, e0 = time.perf_counter(), time.time()
    r = subprocess.run([sys.executable, "-m", "tdse", *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if marks is not None:
        marks[:] = [e0, time.time()]
    if r.returncode:
        raise RuntimeError(f"tdse {' '.join(args)}: {r.stderr.strip()[-300:]}")
    return wall


#: a CLI run's wall split by its file's ``timeline`` (tdse.run.driver._close): the mark each
#: phase ends at, from the process's spawn to its end
CLI_PHASES = (("before_prepare", "prepare0"), ("prepare", "prepare1"), ("set_up", "loop"),
              ("loop", "loop_end"), ("to_close", "close"), ("close_and_exit", "gone"))


def cli_phases(spawn, gone, timeline) -> dict:
    """Seconds of each :data:`CLI_PHASES` phase of one CLI run: before :func:`tdse.prepare`
    (the interpreter, the imports, the CLI's parsing), prepare, the set-up before the loop's
    clock (resources, the writer, the stepper and sinks), the loop with its sinks'
    ends, what follows up to the close (the loop's counts), and the close with the process's
    exit (the last block's write, the file's close and rename, the interpreter's teardown).
    Their sum is the wall from ``spawn`` to ``gone``."""
    t = dict(timeline, gone=gone)
    t["prepare0"], t["prepare1"] = t.pop("prepare", (t["run"], t["run"]))
    out, last = {}, spawn
    for name, mark in CLI_PHASES:
        out[name] = t[mark] - last
        last = t[mark]
    return out


def _timed_run(args, out_file):
    """``tdse ARGS`` (a run writing ``out_file``) as :func:`_timed_cli` times it: (its wall,
    the file's readable attributes, its wall by phase (:func:`cli_phases`) or None where the
    file has no ``timeline``)."""
    import json

    import h5py

    from tdse.run.runfile import readable_attrs
    marks = []
    wall = _timed_cli(args, marks)
    with h5py.File(out_file, "r") as f:
        attrs = readable_attrs(f)
    phases = cli_phases(*marks, json.loads(attrs["timeline"])) if "timeline" in attrs else None
    return wall, attrs, phases


def _run_overhead(a):
    """`tdse run` as a user starts it (a new process: imports, precheck, H(0), auto's
    calibration, observables, snapshots; plots off) against the bare step loop of the same
    plan in this process, for moving-centre inputs per stencil and N: the run's seconds per
    step -- (wall of the S-step run - wall of a 1-step run) / (S - 1), the fixed start-up
    cost its own column -- over the bare loop's (#23 item 3; target 1.15)."""
    import dataclasses

    import tdse
    from tdse import config as cfgmod
    base = cfgmod.load(os.path.join(ROOT, a.input) if not os.path.isabs(a.input) else a.input)
    width = base.grid.x_max - base.grid.x_min
    rows = []
    for n in a.n:
        for st in a.stencils:
            stencil = int(st) if st in ("3", "5") else st
            cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=width / n,
                                                                       stencil=stencil))
            cfg = cfg.with_value("propagator.method", "auto").with_value(
                "propagator.time_error", "none").with_value("time.t_end", a.steps * cfg.time.dt)
            if a.every:
                cfg = cfg.with_value("output.observables_every", a.every)
            # each cadence's input made (and refused, one line) before any work
            cases = [(pe, cfg.with_value("output.populations_every", pe) if pe else cfg)
                     for pe in a.populations_every]
            t0 = time.perf_counter()
            plan = tdse.prepare(cfg, backend=a.backend, check_resolution=False, threads=a.threads)
            t_prepare = time.perf_counter() - t0
            S = cfg.time.steps
            # warm 2 steps, then S - 2 timed; --repeat times before the runs and again after
            # them (a GPU's bare step moved by up to 40 % between minutes on one machine, the
            # DVR's 9.6 against 13.7 ms: the median of both sets is the ratio's step)
            _say(f"N = {n}, {st}: {plan.config.propagator.method} (prepared in {t_prepare:.1f} s); "
                 f"the bare loop, {a.repeat} x {S - 2} steps, then the CLI runs")
            before = [_bare_steps(plan, S - 2)[0] for _ in range(a.repeat)]
            _say(f"  bare step {float(np.median(before)) * 1e6:.0f} us")
            done = []
            for pe, c in cases:
                done.append(_overhead_row(a, c, plan, S, t_prepare, stencil,
                                          bare=lambda: _bare_steps(plan, S - 2)[0]))
            after = [_bare_steps(plan, S - 2)[0] for _ in range(a.repeat)]
            for row in done:
                _over_bare(row, before, after)
                _say(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
                              if not isinstance(v, (list, dict))))
            rows += done
    return rows, {}


#: the run-overhead row's ratios over the bare step: each from its seconds a step
_OVER_BARE = {"wall_over_steps": "step_seconds_in_run",
              "wall_over_steps_start_up_apart": "step_seconds_start_up_apart",
              "loop_over_steps": "step_seconds_loop", "loop_slope_over_steps": "step_seconds_loop_slope",
              "wall_slope_over_steps": "step_seconds_wall_slope"}


def _over_bare(row, before, after):
    """A run-overhead row's ratios over the bare step: the median of the bare loops timed
    ``before`` and ``after`` the row's runs (each set kept)."""
    bare = float(np.median(list(before) + list(after)))
    for k, per_step in _OVER_BARE.items():
        row[k] = row[per_step] / bare
    row.update(step_seconds_bare=bare, step_seconds_bare_before=[float(v) for v in before],
               step_seconds_bare_after=[float(v) for v in after])


def _overhead_row(a, cfg, plan, S, t_prepare, stencil, bare=None):
    """One run-overhead row: the CLI's wall for 1, S/2 and S steps (and S with the companion),
    and their seconds a step (:func:`_over_bare` makes them ratios over the bare loops timed
    before and after the runs).  ``bare()``: one more bare loop, timed just before and
    just after the S-step runs -- the loop ratio over their mean is its own column (a
    GPU's bare step drifted by 10-25 % over the minutes of a row: the DVR's 8.9 to 11.2 ms
    on one H100, ``run-overhead_h100x1_20261126T165210.json``)."""
    around = []
    import tempfile

    from tdse import config as cfgmod
    import json
    walls, loops, run_threads, prep = {}, {}, None, {}
    pairs = {}    # H(t)'s eigenpairs per label: the loop's wait for them, their seconds, calls
    every_wall, every_loop = {}, {}   # each repeat's CLI wall and loop clock, per label
    split = {}       # per label, the medians of cli_phases: where each CLI run's wall went
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in.toml")
        args = ["run", path, "--out", d, "--backend", a.backend, "--quiet", "--no-plots",
                "--force", "--yes", "--allow-inaccurate"] + (
                    ["--threads", str(a.threads)] if a.threads else [])
        half = S // 2
        # the 1-step run (the start-up the target leaves apart) with the look-ahead's
        # processes where the S-step run has them: "auto" leaves them out of a run of one
        # step, and their start and end (~20-30 and ~15 ms on 2 CPUs, before the set-up and
        # at the close) then counted as the steps' (cli_phases_full_minus_one_step)
        from tdse.run.eigenpairs import may_want
        one = cfg.with_value("time.t_end", cfg.time.dt)
        if cfg.run.eigen_workers == "auto" and may_want(cfg, a.backend, a.threads):
            one = one.with_value("run.eigen_workers", "on")
        for label, c in (("one_step", one),
                         ("half", cfg.with_value("time.t_end", half * cfg.time.dt)),
                         ("full", cfg),
                         ("companion", cfg.with_value("propagator.time_error", "companion"))):
            if label == "companion" and not a.companion:
                continue
            with open(path, "w") as f:
                f.write(cfgmod.to_toml(c))
            w, lp, ph, phases = [], [], [], []
            out_file = os.path.join(d, f"{c.name}.h5")
            if label == "full" and bare is not None:
                around.append(bare())
            times = {"companion": 1, "one_step": a.start_up_repeat or max(3, a.repeat)}
            for _ in range(times.get(label, a.repeat)):
                # each run into a fresh output, as a user's new run: the earlier run's file
                # (786 MB after 150000 steps at N = 8192) removed outside the clock, where
                # --force would remove it inside the run's close (snapshots.publish)
                if os.path.exists(out_file):
                    os.remove(out_file)
                wall, attrs, split_one = _timed_run(args, out_file)
                w.append(wall)
                if label != "companion":     # the run's own clock: its loop, start-up excluded
                    lp.append(float(attrs["wall_seconds"]))
                    if split_one is not None:
                        phases.append(split_one)
                    run_threads = attrs.get("blas_threads")
                    ph.append({**json.loads(attrs.get("prepare_seconds", "{}")),
                               # the loop's context switch (a GPU loop of 1000+ steps):
                               # a fixed cost at the loop's start, a start-up phase here
                               "context_switch": float(attrs.get("context_switch_seconds", 0.0))})
                    pairs.setdefault(label, []).append(
                        [float(attrs.get(k, 0.0)) for k in
                         ("eigenpairs_wait_seconds", "eigenpairs_seconds", "eigenpairs_calls")])
            if label == "full" and bare is not None:
                around.append(bare())
            walls[label] = float(np.median(w))
            every_wall[label] = [float(v) for v in w]
            if phases:
                split[label] = {k: float(np.median([p[k] for p in phases])) for k in phases[0]}
            if lp:
                loops[label] = float(np.median(lp))
                every_loop[label] = [float(v) for v in lp]
                # the run's own start-up phases (tdse.run.plan.prepare), medians per phase
                prep[label] = {k: float(np.median([p.get(k, 0.0) for p in ph])) for k in ph[0]}
    per_step_run = (walls["full"] - walls["one_step"]) / (S - 1)
    # the start-up phases that grow with the run (the precheck's exact potential bounds over
    # every step: O(S N)) or vary between processes (auto's calibration), as their own rows;
    # the ratio with them apart is the target's "steps x step time + start-up"
    prep_full, prep_one = sum(prep["full"].values()), sum(prep["one_step"].values())
    per_step_apart = ((walls["full"] - prep_full) - (walls["one_step"] - prep_one)) / (S - 1)
    # the slope between the S- and S/2-step runs: the per-step cost with every fixed cost
    # (start-up, the eigenpairs worker's start and its overlap with the first steps, the
    # first blocks) in the intercept -- what the target's "steps x step time + start-up" reads
    slope = (loops["full"] - loops["half"]) / (S - half)
    # the loop clock holds the loop's context switch, which the bare loop does before its clock
    switch = {k: prep[k].get("context_switch", 0.0) for k in ("full", "one_step")}
    loop_step = ((loops["full"] - switch["full"]) - (loops["one_step"] - switch["one_step"])) / (S - 1)
    row = {"n": cfg.grid.n, "stencil": str(stencil), "method": plan.config.propagator.method,
           "backend": a.backend, "steps": S,
           "observables_every": cfg.output.observables_every,
           "populations_every": cfg.output.populations_interval,
           "step_seconds_in_run": per_step_run, "target": 1.15,
           "step_seconds_start_up_apart": per_step_apart,
           "prepare_seconds": prep["full"], "prepare_seconds_one_step": prep["one_step"],
           "precheck_seconds": prep["full"].get("precheck"),
           "calibration_seconds": prep["full"].get("calibration"),
           "context_switch_seconds": prep["full"].get("context_switch"),
           # the same from the files' own clock (wall_seconds: the loop with its sinks,
           # the last writes): (loop(S) - loop(1)) / (S - 1), free of the process start-up's
           # noise that the difference of two CLI walls carries (+-1 s over S steps)
           "loop_seconds": loops["full"], "loop_seconds_one_step": loops["one_step"],
           "step_seconds_loop": loop_step,
           # the same over the bare loops just before and after the S-step runs
           "step_seconds_bare_around_full": [float(v) for v in around],
           "loop_over_bare_around_full": loop_step / float(np.mean(around)) if around else None,
           "loop_seconds_half": loops["half"], "half_steps": half,
           "step_seconds_loop_slope": slope,
           "step_seconds_wall_slope": (walls["full"] - walls["half"]) / (S - half),
           "start_up_seconds": walls["full"] - S * slope,
           "cli_wall_seconds": walls["full"], "fixed_seconds": walls["one_step"],
           "prepare_seconds_in_process": t_prepare,
           "cli_wall_with_companion_seconds": walls.get("companion"), "repeat": a.repeat,
           "start_up_repeat": len(every_wall["one_step"]),
           "one_step_eigen_workers": one.run.eigen_workers,
           "threads_pinned": a.threads,
           # the host's BLAS threads of the bare loop (this process's plan) and of the run
           "bare_blas_threads": plan.backend.threads,
           "run_blas_threads": None if run_threads is None else int(run_threads),
           # every repeat (the medians above): the CLI walls' spread between processes
           "cli_walls_each": every_wall, "loop_seconds_each": every_loop,
           # the S-step run's wait for H(t)'s eigenpairs (seconds the loop stood), their
           # seconds (in a worker, a thread or the loop) and calls, each repeat
           "eigenpairs_wait_seconds_each": [p[0] for p in pairs.get("full", [])],
           "eigenpairs_seconds_each": [p[1] for p in pairs.get("full", [])],
           "eigenpairs_calls": int(pairs["full"][0][2]) if pairs.get("full") else None,
           # each CLI run's wall by phase (cli_phases; medians per label), and what the S-step
           # run spends beyond the 1-step run in each: the loop's is the steps', the others
           # are fixed costs that the 1-step run (the target's start-up) does not pay
           "cli_phases": split,
           "cli_phases_full_minus_one_step": ({k: split["full"][k] - split["one_step"][k]
                                               for k in split["full"]}
                                              if "full" in split and "one_step" in split else None)}
    return row


# ---------------------------------------------------------------- start-up: a run's wall by phase
def _start_up_args(p):
    p.add_argument("--inputs", nargs="+", default=["tiny", "atom_hhg", "h2plus_static", "h2plus_moving",
                                                   "h2plus_moving_ramped", "thesis_fig6"])
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--repeat", type=_at_least(1), default=3, help="runs of each input, medians kept")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=False,
                   help="also time each input with its pictures (`tdse run --plots`), a run each")


def _start_up(a):
    """#59 item 2: `tdse run INPUT --no-plots` as a user starts it (a new process), its wall
    split by the file's ``timeline`` (:func:`cli_phases`: before prepare -- the interpreter,
    imports, parsing --, prepare, set-up, the loop, the close and exit), beside the time the
    run prints (the file's ``wall_seconds``: its loop with sinks) and that time's share of the
    wall (target >= 0.8 on 2 CPU cores); with ``--plots`` also the wall with the pictures.
    Targets on one H100 for atom_hhg: wall <= 1.5 s, printed <= 0.6 s."""
    import tempfile

    from tdse import config as cfgmod
    rows = []
    for name in a.inputs:
        path = os.path.join(ROOT, "inputs", f"{name}.toml")
        with tempfile.TemporaryDirectory() as d:
            args = ["run", path, "--out", d, "--backend", a.backend, "--quiet", "--force", "--yes"]
            out_file = os.path.join(d, f"{cfgmod.load(path).name}.h5")
            walls, printed, phases = [], [], []
            for _ in range(a.repeat):
                wall, attrs, split_one = _timed_run(args + ["--no-plots"], out_file)
                walls.append(wall)
                printed.append(float(attrs["wall_seconds"]))
                phases.append(split_one)
            with_plots = _timed_cli(args + ["--plots"]) if a.plots else None
        wall, run_s = float(np.median(walls)), float(np.median(printed))
        row = {"input": name, "backend": a.backend, "repeat": a.repeat, "wall_seconds": wall,
               "printed_seconds": run_s, "printed_share": run_s / wall,
               "phases": {k: float(np.median([p[k] for p in phases])) for k in phases[0]},
               "walls_each": walls, "printed_each": printed, "wall_with_plots_seconds": with_plots}
        rows.append(row)
        _say(f"{name}: wall {wall:.2f} s, printed {run_s:.2f} s ({100 * run_s / wall:.0f} %); "
             + ", ".join(f"{k} {v:.2f}" for k, v in row["phases"].items())
             + (f"; with plots {with_plots:.2f} s" if with_plots else ""))
    return rows, {"bytecode": "compiled before the runs (compileall into PYTHONPYCACHEPREFIX): "
                              "an installed package's start-up (_cli_env)"}


# ---------------------------------------------------------------- time-error: #56's rows
def _time_error_args(p):
    p.add_argument("--kinds", nargs="*", default=["abrupt", "ramped", "laser", "fast"],
                   help="the drives (benchmarks/drives.py) whose cost and stated error are rows "
                        "(default: all four; --kinds with none: no such rows, the other parts only)")
    p.add_argument("--seed", type=int, default=None, help="the inputs' random parameters (default: fresh)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tolerances", type=float, nargs="+", default=[1e-4, 1e-6, 1e-8])
    p.add_argument("--backend", default="numpy")
    p.add_argument("--inputs", nargs="*", default=[], help="also these input files' cost (no true error)")
    p.add_argument("--steps", type=int, default=400, help="the --inputs' steps (t_end shortened)")
    p.add_argument("--no-adaptive", action="store_true", help="no adaptive rows (the laser's, and a --scan's)")
    p.add_argument("--scan", type=int, nargs="*", default=[],
                   help="also an E0 scan of the laser drive with this many members (item 4): "
                        "the estimate's cost in a batch, and adaptive steps shared by a batch "
                        "against each member's own (--batch 1)")
    p.add_argument("--scan-tolerance", type=float, default=1e-6)
    p.add_argument("--ladder-most", type=_at_least(2), default=None,
                   help="the adaptive rows' fixed-dt ladder goes down to dt = 2^-(this - 1) "
                        "(default LADDER_MOST; one more for a tolerance of 1e-9)")
    p.add_argument("--reference-factor", type=_at_least(2), default=640,
                   help="the adaptive rows' reference at dt / this (Chebyshev 1e-14; 1280 for "
                        "a ladder one rung finer)")
    p.add_argument("--dynamiqs", type=float, nargs="*", default=[],
                   help="also dynamiqs' sesolve (Dopri8) at these rtol = atol on the laser drive "
                        "without its absorber, against adaptive steps at --tolerances: wall at "
                        "equal accuracy (a GPU, dynamiqs installed)")


def _time_error(a):
    """#56: for each kind of drive (benchmarks/drives.py, random parameters) the loop's
    seconds with time_error = "none", "estimate" and "companion" (medians of --repeat,
    alternating, in one process) and each stated error against the true one (dt/8 Chebyshev
    1e-14); then adaptive steps on the laser input (dt = 1 the largest) at each tolerance
    against the fixed-dt ladder dt = 2^-k: the cheapest fixed run as accurate as the
    adaptive one, without and with its error bar."""
    import dataclasses
    import tdse
    from tdse.config import with_values
    from tdse.run.timeerror import phase_blind_distance
    from . import drives
    seed = a.seed if a.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    rng = np.random.default_rng(seed)

    def loop(cfg):
        res = tdse.simulate(cfg, backend=a.backend)
        return res.seconds, res

    def kind_of(cfg, te):
        return dataclasses.replace(cfg, propagator=dataclasses.replace(cfg.propagator, time_error=te))

    def costs(cfg):
        """The loop's seconds without, with the estimate and with the companion (alternating,
        --repeat times): (all, medians, stated errors, the last run's Result)."""
        secs, stated = {k: [] for k in ("none", "estimate", "companion")}, {}
        for _ in range(a.repeat):
            for k in secs:
                s_, res = loop(kind_of(cfg, k))
                secs[k].append(s_)
                if k != "none":
                    stated[k] = res.time_error["error_at_t_end"]
        return secs, {k: float(np.median(v)) for k, v in secs.items()}, stated, res

    rows = []
    for kind in a.kinds:
        cfg = drives.make(kind, rng)
        _, ref = drives.reference(cfg)
        secs, med, stated, res = costs(cfg)
        true = phase_blind_distance(np.asarray(res.psi[-1]), ref, cfg.grid.dx)
        row = {"part": "cost", "kind": kind, "n": cfg.grid.n, "steps": cfg.time.steps,
               "stencil": str(cfg.grid.stencil), "seconds": med, "all_seconds": secs,
               "true_error": true, "stated": stated,
               "stated_over_true": {k: v / true for k, v in stated.items()},
               "estimate_over_none": med["estimate"] / med["none"],
               "companion_over_none": med["companion"] / med["none"]}
        rows.append(row)
        _say(f"{kind:7s} N={cfg.grid.n}: none {med['none']:.2f} s, estimate x{row['estimate_over_none']:.2f}"
             f" (stated/true {row['stated_over_true']['estimate']:.2f}), companion "
             f"x{row['companion_over_none']:.2f} (stated/true {row['stated_over_true']['companion']:.2f})")
    for path in a.inputs:               # a shipped input, shortened: the cost alone
        cfg = tdse.load_config(os.path.join(ROOT, path) if not os.path.isabs(path) else path)
        cfg = with_values(cfg, [("time.t_end", cfg.time.dt * a.steps), ("output.every", 50)])
        secs, med, stated, res = costs(cfg)
        rows.append({"part": "cost-input", "input": path, "n": cfg.grid.n, "steps": a.steps,
                     "stencil": str(cfg.grid.stencil), "scheme": cfg.propagator.scheme,
                     "method": res.config.propagator.method, "seconds": med, "all_seconds": secs,
                     "stated": stated, "estimate_over_none": med["estimate"] / med["none"],
                     "companion_over_none": med["companion"] / med["none"]})
        _say(f"{path} N={cfg.grid.n}: none {med['none']:.2f} s, estimate x{rows[-1]['estimate_over_none']:.2f}, "
             f"companion x{rows[-1]['companion_over_none']:.2f} (stated {stated})")
    for B in a.scan:
        rows += _time_error_scan(a, drives.make("laser", rng), B)
    if a.dynamiqs:
        rows += _time_error_dynamiqs(a, drives.make("laser", rng))
    if a.no_adaptive:
        return rows, {"seed": seed, "backend": a.backend}
    # adaptive steps on the laser input
    base = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])
    # (dt / 640: the errors fall as dt^2 here (the absorber's mask a step), so that the
    # reference's own error is ~1/20 of 3e-10, the finest rung's and a 1e-8 tolerance's)
    _, ref = drives.reference(base, factor=a.reference_factor)
    most = a.ladder_most or LADDER_MOST
    ladder = []

    def fixed(steps, every):   # a fixed-dt run: its wall without and with the estimate
        cfg = with_values(base, [("time.dt", base.time.t_end / steps), ("output.every", every)])
        s_none = float(np.median([loop(kind_of(cfg, "none"))[0] for _ in range(a.repeat)]))
        s_est, res = loop(kind_of(cfg, "estimate"))
        err = phase_blind_distance(np.asarray(res.psi[-1]), ref, cfg.grid.dx)
        return {"dt": cfg.time.dt, "steps": steps, "every": every, "seconds_none": s_none,
                "seconds_estimate": s_est, "true_error": err, "stated": res.time_error["error_at_t_end"]}

    def compared(r):
        """The fixed run an adaptive row is compared with, its estimate's wall the median of
        --repeat runs (a ladder rung's is one run: alone it had moved the row's ratio by its
        own spread)."""
        cfg = with_values(base, [("time.dt", base.time.t_end / r["steps"]), ("output.every", r["every"])])
        each = [r["seconds_estimate"]] + [loop(kind_of(cfg, "estimate"))[0] for _ in range(a.repeat - 1)]
        return {**r, "seconds_estimate": float(np.median(each)), "seconds_estimate_each": each}

    def rung(k):       # dt = 2^-k
        ladder.append(fixed(round(base.time.t_end * 2 ** k), 5 * 2 ** k))

    def matched(err):
        """The fixed dt that just meets ``err``: from the power law between the ladder's
        two rungs around it, then 5 % more steps until its true error is <= err."""
        lo = max((r for r in ladder if r["true_error"] <= err), key=lambda r: r["dt"])
        hi = [r for r in ladder if r["dt"] == 2 * lo["dt"]]
        if not hi:
            return lo
        p = np.log(hi[0]["true_error"] / lo["true_error"]) / np.log(2.0)
        steps = lo["steps"] * (lo["true_error"] / err) ** (1.0 / p)
        for _ in range(8):
            steps = int(np.ceil(steps / 10.0)) * 10
            if steps >= lo["steps"]:
                return lo
            got = fixed(steps, steps // 10)
            if got["true_error"] <= err:
                return got
            steps *= 1.05
        return lo
    for k in range(0, 8):
        rung(k)
    for tol in a.tolerances:
        cfg = with_values(base, [("time.tolerance", tol)])
        times, res = [], None
        for _ in range(a.repeat):
            s_, res = loop(cfg)
            times.append(s_)
        err = phase_blind_distance(np.asarray(res.psi[-1]), ref, cfg.grid.dx)
        while not any(r["true_error"] <= err for r in ladder) and len(ladder) < most:
            rung(len(ladder))      # finer fixed steps until one is as accurate (the reference's
        ok = [r for r in ladder if r["true_error"] <= err]     # dt is 2^-9 / 1.25)
        best = min(ok, key=lambda r: r["seconds_none"]) if ok else None
        # (the ladder's rung halves dt: up to 2x the steps the accuracy needs; the fixed run
        # compared is the one that just meets it)
        best = compared(matched(err)) if best else None
        med = float(np.median(times))
        row = {"part": "adaptive", "kind": "laser", "tolerance": tol, "seconds": med,
               "all_seconds": times, "true_error": err,
               "stated": res.time_error["error_at_t_end"], "steps": res.time_error["steps_taken"],
               "rejected": res.time_error["rejected"], "fixed_as_accurate": best,
               "over_fixed_none": med / best["seconds_none"] if best else None,
               "over_fixed_estimate": med / best["seconds_estimate"] if best else None}
        rows.append(row)
        _say(f"tolerance {tol:g}: adaptive {med:.2f} s, {row['steps']} steps, true {err:.2g} (stated "
             f"{row['stated']:.2g}); fixed dt {best['dt'] if best else '-'} "
             f"({best['steps'] if best else '-'} steps, true {best['true_error'] if best else float('nan'):.2g}): "
             f"x{row['over_fixed_none'] or float('nan'):.2f} of its wall without an error bar, "
             f"x{row['over_fixed_estimate'] or float('nan'):.2f} with one")
    return rows, {"seed": seed, "ladder": ladder, "backend": a.backend}


#: the finest fixed dt the adaptive rows compare with: 2^-(LADDER_MOST - 1) (dt = 2^-8 on the
#: laser: 12800 steps, ~10 s on 2 CPU cores; 2.5 x the reference's dt)
LADDER_MOST = 9


def _time_error_dynamiqs(a, base):
    """#56: adaptive steps (time.tolerance, dt = 1 the largest step) against dynamiqs'
    adaptive Dopri8 on one H(t): the laser drive without its absorber (dynamiqs has no mask),
    each run's true error against a dt/160 Chebyshev 1e-14 run; at each of our tolerances
    the cheapest dynamiqs run at least as accurate (warm: its compilation apart)."""
    import dataclasses
    import tdse
    from tdse.config import with_values
    from mgemm.arrays import to_host
    from tdse.run.timeerror import phase_blind_distance
    from . import drives
    cfg = dataclasses.replace(with_values(base, [("time.dt", 1.0), ("output.every", 5)]), absorber=None)
    _, ref = drives.reference(cfg, factor=160)
    ours = []
    for tol in a.tolerances:
        c = with_values(cfg, [("time.tolerance", tol)])
        times, res = [], None
        for _ in range(a.repeat):
            res = tdse.simulate(c, backend=a.backend)
            times.append(res.seconds)
        ours.append({"tolerance": tol, "seconds": float(np.median(times)), "all_seconds": times,
                     "true_error": phase_blind_distance(to_host(res.psi[-1]), ref, cfg.grid.dx),
                     "stated": res.time_error["error_at_t_end"], "steps": res.time_error["steps_taken"]})
    plan = tdse.prepare(cfg, backend=a.backend)
    theirs = []
    for rtol in a.dynamiqs:
        try:
            warm, first, psi = _dynamiqs_case(cfg, plan, cfg.time.t_end, rtol)
        except Exception as e:     # (not installed, or its versions disagree with jax's)
            theirs.append({"rtol": rtol, "error": f"{type(e).__name__}: {str(e)[:200]}"})
            continue
        theirs.append({"rtol": rtol, "seconds": warm, "first_call_seconds": first,
                       "true_error": phase_blind_distance(psi, ref, cfg.grid.dx)})
        _say(f"dynamiqs Dopri8 rtol {rtol:g}: {warm:.3f} s, true {theirs[-1]['true_error']:.2g}")
    for r in ours:
        ok = [d for d in theirs if "seconds" in d and d["true_error"] <= r["true_error"]]
        best = min(ok, key=lambda d: d["seconds"]) if ok else None
        r["dynamiqs_as_accurate"] = best
        r["over_dynamiqs"] = r["seconds"] / best["seconds"] if best else None
        _say(f"ours at {r['tolerance']:g}: {r['seconds']:.3f} s, true {r['true_error']:.2g}; dynamiqs as "
             f"accurate: {best and best['rtol']} -> x{r['over_dynamiqs'] or float('nan'):.2f} its wall")
    return [{"part": "dynamiqs", "n": cfg.grid.n, "t_end": cfg.time.t_end, "ours": ours, "dynamiqs": theirs}]


def _time_error_scan(a, base, B):
    """#56 item 4: an E0 scan (B members, E0 = 0.02-0.1) of the laser drive ``base``: the
    batch's seconds without and with the members' time errors (fixed dt, alternating,
    medians of --repeat); then with time.tolerance (dt = 1 the largest step), the members
    sharing their steps in one batch against each member in a batch of its own (its own
    steps): seconds, steps, the largest stated error."""
    from tdse.config import with_values
    from tdse.studies.scan import scan
    sets = {"field.E0": list(np.linspace(0.02, 0.1, B))}
    cfg = with_values(base, [("output.every", 10), ("propagator.time_error", "none")])
    secs = {"none": [], "estimate": []}
    for _ in range(a.repeat):
        for k in secs:
            res = scan(cfg.with_value("propagator.time_error", k), sets, backend=a.backend)
            secs[k].append(res["seconds"])
    med = {k: float(np.median(v)) for k, v in secs.items()}
    rows = [{"part": "scan-cost", "members": B, "n": cfg.grid.n, "steps": cfg.time.steps,
             "seconds": med, "all_seconds": secs, "estimate_over_none": med["estimate"] / med["none"],
             "largest_stated": float(res["time_error"][:, -1].max())}]
    _say(f"scan of {B}: none {med['none']:.2f} s, estimate x{rows[-1]['estimate_over_none']:.2f}")
    if a.no_adaptive:
        return rows
    ad = with_values(base, [("time.dt", 1.0), ("output.every", 5), ("time.tolerance", a.scan_tolerance)])
    out = {}
    for how, batch in (("shared", None), ("split", 1)):
        times = []
        for _ in range(a.repeat):
            res = scan(ad, sets, backend=a.backend, batch=batch)
            times.append(res["seconds"])
        out[how] = {"seconds": float(np.median(times)), "all_seconds": times,
                    "batches": res["batches"], "steps": res["batch_steps_taken"],
                    "largest_stated": float(res["time_error"][:, -1].max())}
    rows.append({"part": "scan-adaptive", "members": B, "tolerance": a.scan_tolerance, **out,
                 "shared_over_split": out["shared"]["seconds"] / out["split"]["seconds"]})
    _say(f"adaptive scan of {B} at {a.scan_tolerance:g}: shared {out['shared']['seconds']:.2f} s "
         f"({out['shared']['steps'][0]} steps), split {out['split']['seconds']:.2f} s "
         f"({min(out['split']['steps'])}-{max(out['split']['steps'])} steps a member): "
         f"shared/split x{rows[-1]['shared_over_split']:.2f}")
    return rows


# ---------------------------------------------------------------- gauge: #55 item 2
GAUGE_ATOM = """
name = "gauge_atom"
[grid]
x_min = -80.0
x_max = 80.0
dx = 0.2
stencil = "dvr"
[potential]
a = 2.0
[[potential.centres]]
x0 = 0.0
Z = 1.0
[field]
E0 = 0.0534
omega = 0.057
cycles = 2
[absorber]
width = 20.0
[initial]
state = 0
[time]
dt = 0.1
t_end = 221.0
[propagator]
scheme = "cfm4"
method = "chebyshev"
tolerance = 1e-12
time_error = "none"
[output]
every = 2210
"""


def _gauge_args(p):
    p.add_argument("--stencils", nargs="+", default=["3", "5"])
    p.add_argument("--dxs", type=float, nargs="+", default=[0.4, 0.2, 0.1, 0.05])
    p.add_argument("--reference-dx", type=float, default=0.2, help="the DVR reference's dx")
    p.add_argument("--E0", type=float, default=0.0534)
    p.add_argument("--omega", type=float, default=0.057)


def _gauge(a):
    """#55 item 2: a soft-core atom (E_0 = -1/2) in a 2-cycle sin^2 pulse, in both gauges on
    each finite-difference stencil at each dx, against the DVR in both gauges at
    --reference-dx (their difference stated too): the errors of the yield, of the
    populations after the pulse (A = 0 there), of the dipole acceleration over the run
    (relative to its peak) and of |psi(t_end)|^2 (L1), and each run's seconds."""
    import tdse
    from tdse.config import loads, with_values
    base = with_values(loads(GAUGE_ATOM), [("field.E0", a.E0), ("field.omega", a.omega)])
    t_end = round(base.field.duration / base.time.dt + 0.5) * base.time.dt
    base = with_values(base, [("time.t_end", t_end), ("output.every", round(t_end / base.time.dt))])

    def run(cfg):
        res = tdse.simulate(cfg, backend="numpy")
        o = res.observables
        return {"seconds": res.seconds, "yield": float(o["yield"][-1]),
                "populations": np.asarray(o["populations_h0"][-1]), "acc": np.asarray(o["acceleration"]),
                "density": np.abs(np.asarray(res.psi[-1])) ** 2, "x": np.asarray(res.x), "n": cfg.grid.n}

    def density_on(r, x):          # |psi|^2 on another grid (linear interpolation; 0 outside)
        return np.interp(x, r["x"], r["density"], left=0.0, right=0.0)

    ref = {g: run(with_values(base, [("grid.dx", a.reference_dx), ("field.gauge", g)]))
           for g in ("length", "velocity")}
    R = ref["length"]
    between = {"yield": abs(ref["velocity"]["yield"] - R["yield"]),
               "populations": float(np.abs(ref["velocity"]["populations"] - R["populations"]).max()),
               "acceleration": float(np.abs(ref["velocity"]["acc"] - R["acc"]).max() / np.abs(R["acc"]).max())}
    _say(f"DVR dx = {a.reference_dx}: gauges apart by {between}")
    rows = []
    for st in a.stencils:
        for dx in a.dxs:
            for g in ("length", "velocity"):
                r = run(with_values(base, [("grid.stencil", int(st)), ("grid.dx", dx), ("field.gauge", g)]))
                row = {"stencil": int(st), "dx": dx, "gauge": g, "n": r["n"], "seconds": r["seconds"],
                       "yield": r["yield"], "yield_error": abs(r["yield"] - R["yield"]),
                       "population_error": float(np.abs(r["populations"] - R["populations"]).max()),
                       "acceleration_error": float(np.abs(r["acc"] - R["acc"]).max() / np.abs(R["acc"]).max()),
                       "density_error": float(np.sum(np.abs(density_on(r, R["x"]) - R["density"])) * a.reference_dx)}
                rows.append(row)
                _say(f"{st}-point dx = {dx} {g:8s}: yield {r['yield']:.4g} (err {row['yield_error']:.2g}), "
                     f"P err {row['population_error']:.2g}, acc err {row['acceleration_error']:.2g}, "
                     f"|psi|^2 err {row['density_error']:.2g}, {r['seconds']:.1f} s")
    return rows, {"reference": {"stencil": "dvr", "dx": a.reference_dx, "yield": R["yield"],
                                "populations": R["populations"].tolist(),
                                "gauges_apart": between, "seconds": {g: ref[g]["seconds"] for g in ref}},
                  "input": GAUGE_ATOM, "E0": a.E0, "omega": a.omega}


SUITES = {
    "engine": Suite("mgemm's band GEMM vs cupy.matmul, cuBLAS-XT and JAX's sharded matmul",
                    True, _engine_args, _engine),
    "expm": Suite("multi-GPU mgemm.expm vs torch / jax / cupyx on one GPU", True, _expm_args, _expm),
    "expm-cpu": Suite("mgemm.expm vs scipy.linalg.expm on the CPU", False, _expm_cpu_args, _expm_cpu),
    "tdse": Suite("TDSE step time on 1, 2, 4 GPUs", True, _tdse_args, _tdse),
    "tune": Suite("hardware probe, then tile sweep vs the model (tuned tiles saved in the result)",
                  True, _tune_args, _tune),
    "gpu-tests": Suite("the GPU-marked tests, one row per test", True, _gpu_tests_args, _gpu_tests),
    "accuracy": Suite("time to accuracy on the CPU: each scheme x method at the dt meeting "
                      "--target in the final psi", False, _accuracy_args, _accuracy),
    "step-cost": Suite("seconds per cfm4 step for psi or U(t) per stencil, N and method "
                       "(which method when)", False, _step_cost_args, _step_cost),
    "expm-profile": Suite("the multi-GPU exponent's rate against G x the one-GPU DGEMM rate, "
                          "and its timeline", True, _expm_profile_args, _expm_profile),
    "propagator": Suite("the whole propagator U over cfm4 steps at scale: mgemm on G GPUs, "
                        "Chebyshev block on G GPUs, torch.linalg.matrix_exp loop on one", True,
                        _propagator_args, _propagator),
    "scale": Suite("the split exponent at sizes beyond one GPU, banded in and out: time, "
                   "peak memory per GPU, accuracy against expm_multiply", True, _scale_args, _scale),
    "formulas": Suite("products per exponent before/after the Bader-Blanes-Casas / Sastre "
                      "formulas, accuracy against an eigendecomposition", False,
                      _formulas_args, _formulas),
    "small-n": Suite("one run's step at N = 256-4000 on a GPU (graph / launched) and the CPU, "
                     "launch and bandwidth bounds, auto's pick, dynamiqs", True, _small_n_args, _small_n),
    "mid-step": Suite("#59 item 3: one run's stencil step at N = 8192 / 16384, an exponential one "
                      "tiled kernel against a graph node a term and launched; device time, launch "
                      "and bandwidth bounds", True, _mid_step_args, _mid_step),
    "formula": Suite("a step of the molecule written as a [potential] formula against the "
                     "built-in soft-core centres, in one process", False, _formula_args, _formula),
    "time-error": Suite("#56: the loop with its error bar by the estimate or the companion against "
                        "none, stated/true on four random drives; adaptive steps against fixed dt "
                        "at equal accuracy", False, _time_error_args, _time_error),
    "gauge": Suite("#55: the length and velocity gauges' errors against dx on the stencils, "
                   "against the DVR in both gauges (an atom in a 2-cycle 800 nm pulse)", False,
                   _gauge_args, _gauge),
    "nuclei": Suite("the 1D + 1D H2+ model's step per grid, its Chebyshev terms and its GEMMs' "
                    "share of a term (CPU or GPU)", False, _nuclei_args, _nuclei),
    "tsurff": Suite("the loop with t-SURFF's flux observer against the loop without it, in one "
                    "process (CPU)", False, _tsurff_args, _tsurff),
    "run-overhead": Suite("`tdse run` (a new process) against its bare step loop: wall over "
                          "steps x step time, start-up and precheck apart", False,
                          _run_overhead_args, _run_overhead),
    "start-up": Suite("#59: `tdse run` of each input (a new process) as wall by phase, the printed "
                      "run time's share of it", False, _start_up_args, _start_up),
    "scan": Suite("an E0 scan (tdse scan) against its members run one by one, in one process",
                  False, _scan_args, _scan),
    "inputs": Suite("each CPU input as `tdse run` runs it: time, threads, and the quantities "
                    "README quotes", False, _inputs_args, _inputs),
    "absorber": Suite("reflection of the default absorber for packets of 0.5-8 Ha", False,
                      _absorber_args, _absorber),
    "kernels-3m": Suite("one GPU, no transfers: ZGEMM vs 3m's three DGEMMs per tile", True,
                        _kernels_args, _kernels),
    "sweep-3m": Suite("schedule variants of the band engine at one N", True, _sweep_args, _sweep),
}
