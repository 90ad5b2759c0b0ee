"""``mgemm bench-expm``: the matrix exponent on G GPUs against single-GPU libraries.

The matrix family of the issue: A = -i dt H with H the 3-point finite-difference
Hamiltonian of the soft-core H2+ potential (atomic units), dt chosen so ||A||_1 = 20.
Reference: U = V exp(-i Lambda dt) V^T from cupy.linalg.eigh of the real symmetric H.
Reported per engine: median wall time of ``repeat`` calls after a warm-up, relative
Frobenius error against the reference and ||U^H U - I||_F / sqrt(N) (unitarity).
Baselines on GPU 0 where installed: torch.linalg.matrix_exp, jax.scipy.linalg.expm
(x64, no preallocation), cupyx.scipy.linalg.expm.
"""
from __future__ import annotations

import gc
import os
import time

import numpy as np

from ..expm import expm, expm_plan_for
from .common import free_gpu_memory


#: the family's ||A||_1 (:func:`h2plus_matrix`)
NORM1 = 20.0


def h2plus_matrix(n, norm1=NORM1):
    """(H, dt) on the host: 3-point H of the soft-core double well, dt: ||dt H||_1 = norm1."""
    dx = 0.1
    x = (np.arange(n) - n / 2) * dx
    v = -1.0 / np.sqrt((x - 1) ** 2 + 0.1) - 1.0 / np.sqrt((x + 1) ** 2 + 0.1)
    H = np.diag(1.0 / dx ** 2 + v) + np.diag(np.full(n - 1, -0.5 / dx ** 2), 1) + \
        np.diag(np.full(n - 1, -0.5 / dx ** 2), -1)
    dt = norm1 / np.abs(H).sum(axis=0).max()
    return H, dt


def h2plus_columns(n, norm1=NORM1):
    """The same H as :func:`h2plus_matrix` without ever forming it: ``(make, dt, d, off)``
    with ``make(c0, c1)`` the columns c0..c1-1 of -i dt H built on the current GPU (for
    :meth:`mgemm.dist.Layout.from_columns`), d the diagonal, off the off-diagonal value."""
    import cupy as cp
    dx = 0.1
    x = (np.arange(n) - n / 2) * dx
    v = -1.0 / np.sqrt((x - 1) ** 2 + 0.1) - 1.0 / np.sqrt((x + 1) ** 2 + 0.1)
    d, off = 1.0 / dx ** 2 + v, -0.5 / dx ** 2
    neighbours = np.full(n, 2.0)
    neighbours[[0, -1]] = 1.0
    dt = norm1 / float(np.max(np.abs(d) + abs(off) * neighbours))

    def make(c0, c1):
        band = cp.zeros((n, c1 - c0), dtype=cp.complex128)
        j = cp.arange(c0, c1)
        band[j, j - c0] = cp.asarray(d[c0:c1])
        lo, hi = max(c0, 1), min(c1, n - 1)
        band[cp.arange(lo, c1) - 1, cp.arange(lo, c1) - c0] = off
        band[cp.arange(c0, hi) + 1, cp.arange(c0, hi) - c0] = off
        band *= -1j * dt
        return band
    return make, dt, d, off


def family_plan(method="auto"):
    """The plan :func:`mgemm.expm` takes for the benchmark's family at any N: A = -i dt H
    (purely imaginary, skew-Hermitian: the split path, unitary) with ||A||_1 = :data:`NORM1`,
    complex128, the unit roundoff as tolerance (what :func:`~mgemm.expm.expm_plan_for`
    detects from such an A)."""
    from ..arrays import unit_roundoff
    from ..plan import plan_expm
    u = unit_roundoff(np.complex128)
    return plan_expm(NORM1, method=method, tolerance=u, split=True, unitary=True, unit_roundoff=u)


def plan_rows(sizes, gpus, methods, free):
    """``mgemm bench-expm --plan``: per method and GPU count G, with ``free`` bytes on each
    GPU, the largest N whose input band and exponent fit (:func:`mgemm.expm.largest_fitting_n`)
    with the family's plan and with its leanest fallback (what :func:`mgemm.expm.expm`
    falls back to before it refuses), and per N of ``sizes`` the bytes a GPU needs and
    the plan expm would run (or None: it refuses before any work)."""
    from ..expm import (ExpmMemoryError, fitting_plan, input_and_exponent_bytes, input_bytes,
                        largest_fitting_n, leaner_plans)
    dt = np.complex128
    rows = []
    for method in methods:
        plan = family_plan(method)
        lean = (leaner_plans(plan, dt) or [plan])[-1]
        for g in gpus:
            row = {"method": method, "gpus": g, "free_bytes": int(free), "plan": plan.as_dict(),
                   "largest_n": largest_fitting_n(plan, dt, g, free),
                   "largest_n_leanest": largest_fitting_n(lean, dt, g, free),
                   "leanest_plan": lean.as_dict(), "sizes": {}}
            for n in sizes:
                left = free - input_bytes(n, dt, g)
                try:            # (expm sees the memory left once the caller's input is made)
                    run = fitting_plan(plan, n, dt, g, left) if left > 0 else None
                except ExpmMemoryError:
                    run = None
                row["sizes"][str(n)] = {
                    "bytes_per_gpu": input_and_exponent_bytes(n, plan, dt, g),
                    "bytes_per_gpu_leanest": input_and_exponent_bytes(n, lean, dt, g),
                    "bytes_per_gpu_run": input_and_exponent_bytes(n, run, dt, g) if run else None,
                    "stored_powers_run": run.ps_block if run else None,
                    "fits": run is not None}
            rows.append(row)
    return rows


def _timed(fn, sync, repeat):
    out = fn()
    sync()
    ts = []
    for _ in range(repeat):
        del out
        t0 = time.perf_counter()
        out = fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return out, float(np.median(ts))


def run_bench_expm(sizes, gpus, methods=("auto",), repeat=3, baselines=True, progress=print,
                   checkpoint=None):
    import cupy as cp

    rows = []
    for n in sizes:
        H_h, dt = h2plus_matrix(n)
        with cp.cuda.Device(0):
            H = cp.asarray(H_h)
            lam, V = cp.linalg.eigh(H)
            ref = (V * cp.exp(-1j * dt * lam)) @ V.T.astype(cp.complex128)
            del lam, V
            A = (-1j * dt) * H.astype(cp.complex128)
            ref_norm = float(cp.linalg.norm(ref))
        sync_all = lambda: [cp.cuda.Device(d).synchronize() for d in range(max(gpus))]  # noqa: E731

        def check(U):
            with cp.cuda.Device(0):
                U = cp.asarray(U)
                err = float(cp.linalg.norm(U - ref)) / ref_norm
                E = U.conj().T @ U
                E[cp.arange(n), cp.arange(n)] -= 1
                unit = float(cp.linalg.norm(E)) / np.sqrt(n)
            return err, unit

        base = {"n": n, "dtype": "complex128", "norm1": 20.0, "dt": dt}
        for g in gpus:
            for method in methods:
                for split in (None, False):
                    label = "mgemm" + ("" if split is None else "-complexpath")
                    if split is False and g != max(gpus):
                        continue
                    devs = list(range(g))
                    with cp.cuda.Device(0):
                        U, sec = _timed(lambda: expm(A, method=method, devices=devs,
                                                           split=split, terms=30),
                                        sync_all, repeat)
                    plan = expm_plan_for(A, method=method, split=split, terms=30)[0]
                    err, unit = check(U)
                    del U
                    rows.append({**base, "engine": label, "gpus": g, "method": method,
                                 "seconds": sec, "rel_error": err, "unitarity": unit,
                                 "plan": plan.as_dict()})
                    progress(f"N={n} {label} {method} G={g}: {sec:.3f} s, error {err:.1e}, "
                             f"unitarity {unit:.1e} ({plan.path}, {plan.products} products)")
                    free_gpu_memory(cp)
        if baselines:
            for name, fn in _baselines(A, n):
                try:
                    res = fn(repeat)
                    if isinstance(res, dict):  # ran in a subprocess, checked there
                        rows.append({**base, "engine": name, "gpus": 1, **res})
                        progress(f"N={n} {name}: {res}")
                        continue
                    U, sec = res
                    err, unit = check(U)
                    del U
                    rows.append({**base, "engine": name, "gpus": 1, "seconds": sec,
                                 "rel_error": err, "unitarity": unit})
                    progress(f"N={n} {name}: {sec:.3f} s, error {err:.1e}")
                except Exception as e:  # a missing or failing library is recorded, not fatal
                    rows.append({**base, "engine": name, "gpus": 1, "error": repr(e)[:300]})
                    progress(f"N={n} {name}: failed {e!r}"[:200])
                gc.collect()
                free_gpu_memory(cp)
        if checkpoint:
            checkpoint(rows)
        del A, ref, H
        free_gpu_memory(cp)
    for n in sizes:
        rs = [r for r in rows if r["n"] == n and "seconds" in r]
        libs = [r for r in rs if not r["engine"].startswith("mgemm")]
        if libs:
            fastest = min(libs, key=lambda r: r["seconds"])
            for r in rs:
                r["speedup_vs_fastest_library"] = fastest["seconds"] / r["seconds"]
                r["fastest_library"] = fastest["engine"]
    return rows


def _baselines(A, n):
    """(name, fn(repeat) -> (U, seconds)) for each single-GPU library that imports."""
    import cupy as cp
    out = []
    try:
        import cupyx.scipy.linalg  # noqa: F401

        def run_cupyx(repeat):
            # in a subprocess: at N = 16384 it hit an illegal memory access on H200
            # (CuPy 14.2), which poisons the CUDA context of the process that runs it
            import json
            import subprocess
            import sys
            r = subprocess.run([sys.executable, "-m", "mgemm.tools.bench_expm", "cupyx", str(n),
                                str(repeat)], capture_output=True, text=True, timeout=600)
            lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
            if r.returncode or not lines:
                raise RuntimeError(f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-200:]}")
            return json.loads(lines[-1])
        out.append(("cupyx.scipy.linalg.expm", run_cupyx))
    except ImportError:
        pass
    try:
        import torch

        def run_torch(repeat):
            t = torch.as_tensor(A, device="cuda:0")
            U, sec = _timed(lambda: torch.linalg.matrix_exp(t), torch.cuda.synchronize, repeat)
            Uc = cp.asarray(U)
            Uc = Uc.copy()
            del U, t
            torch.cuda.empty_cache()
            return Uc, sec
        out.append(("torch.linalg.matrix_exp", run_torch))
    except ImportError:
        pass
    try:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.scipy.linalg as jsl

        def run_jax(repeat):
            dev = jax.devices()[0]
            if dev.platform != "gpu":
                raise RuntimeError(f"JAX runs on {dev.platform}, not a GPU")
            a = jax.device_put(np.asarray(A.get()), dev)
            f = jax.jit(jsl.expm)  # the warm-up call of _timed compiles
            U, sec = _timed(lambda: f(a).block_until_ready(), lambda: None, repeat)
            return cp.asarray(np.asarray(U)), sec
        out.append(("jax.scipy.linalg.expm", run_jax))
    except ImportError:
        pass
    return out


def _cupyx_child(n, repeat):
    """Time and check cupyx.scipy.linalg.expm alone (run as a subprocess)."""
    import json

    import cupy as cp
    import cupyx.scipy.linalg as csl
    H_h, dt = h2plus_matrix(n)
    H = cp.asarray(H_h)
    lam, V = cp.linalg.eigh(H)
    ref = (V * cp.exp(-1j * dt * lam)) @ V.T.astype(cp.complex128)
    del lam, V
    A = (-1j * dt) * H.astype(cp.complex128)
    U, sec = _timed(lambda: csl.expm(A), cp.cuda.Device(0).synchronize, repeat)
    err = float(cp.linalg.norm(U - ref) / cp.linalg.norm(ref))
    E = U.conj().T @ U
    E[cp.arange(n), cp.arange(n)] -= 1
    print(json.dumps({"seconds": sec, "rel_error": err,
                      "unitarity": float(cp.linalg.norm(E)) / n ** 0.5}))


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["cupyx"]:
        _cupyx_child(int(sys.argv[2]), int(sys.argv[3]))
