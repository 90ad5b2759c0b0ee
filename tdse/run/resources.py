"""Resources a run needs, checked before it starts: GPU memory (naming the largest N that
fits), disk space for the output file, and the CPU time a run will take."""
from __future__ import annotations

import math
import os
import shutil
import warnings

from ..config import Config, ConfigError
from ..options import blas_limit
from ..numerics import exponentials, schemes


def output_bytes(config: Config) -> int:
    """Expected size of the run file: every dataset in whole chunks
    (:func:`tdse.run.layout.file_bytes`), P_mn and U(t) in operator mode, the
    time-error companion's psi (each twice: two resume slots)."""
    from .layout import file_bytes
    n, K, steps, out = config.grid.n, config.output.populations, config.time.steps, config.output
    snaps = steps // out.every + 2
    obs = steps // out.observables_every + 2
    op = config.propagator.operator
    extra = {"P": ("operator", "float64", (K, K), "", "")} if op else None
    # what resuming keeps, in two slots (the last whole snapshot's and the next one's:
    # tdse.run.snapshots.resume_name)
    resume = 2 * ((16 * n * n if op else 0) + (16 * n if config.propagator.time_error == "companion" else 0))
    return file_bytes(n, len(config.potential.centres), K, snaps, obs, extra, resume)


def gpu_memory_estimate(n: int, devices: int, operator: bool = False, method: str | None = None,
                        stencil=None) -> int:
    """Bytes on the busiest GPU (GPU 0), an estimate from what the step allocates.

    Dense exponentials (``method`` dense, taylor, or not yet resolved): on one GPU H,
    A = -i dt H, its shifted copy (complex) and ~12 real work matrices plus U; on G GPUs
    GPU 0 also builds H, A and B = Im A, and every GPU holds ~5 real full-size replicas
    (the gathered left operands) and ~14 real bands of N x N/G.  Operator mode adds U(t)
    and its update (and, on G GPUs, the gathered U).

    Matrix-free (Chebyshev): O(N) vectors -- psi, the recurrence's three terms, the sum,
    potentials, 16 complex vectors counted -- plus, for the sinc-DVR, its kinetic matrix
    (real N x N, which the graph-captured step applies by GEMM); operator mode adds U(t)'s
    N x N/G columns and their recurrence (6 complex blocks).  An earlier version charged
    every method the dense one's N^2 matrices and refused Chebyshev runs that fit (N =
    32768 on one H200)."""
    nn = n * n
    if method is not None and not exponentials.is_auto(method) and \
            exponentials.get(method).matrix_free:
        w = -(-n // max(1, devices))
        return 16 * 16 * n + (8 * nn if stencil == "dvr" else 0) + \
            bool(operator) * 6 * 16 * n * w
    if devices <= 1:
        return (11 + 3 * bool(operator)) * 16 * nn
    g = devices
    return 56 * nn + 40 * nn + 112 * nn // g + bool(operator) * (16 * nn + 32 * nn // g)


def check_resources(config: Config, backend: str, devices, out_dir, free_gpu=None, free_disk=None,
                    existing=0):
    """Refuse a run that cannot fit on the GPUs (naming the largest N that fits); warn
    when the disk looks too small for the output."""
    n, op = config.grid.n, config.propagator.operator
    if backend == "cupy":
        g = len(devices or [0])
        if free_gpu is None:
            import cupy as cp
            free_gpu = min(free_on(cp, d) for d in (devices or [0]))
        how = dict(method=config.propagator.method, stencil=config.grid.stencil)
        need = gpu_memory_estimate(n, g, op, **how)
        if need > free_gpu:
            lo, hi = 1, n
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if gpu_memory_estimate(mid, g, op, **how) <= free_gpu else (lo, mid - 1)
            raise ConfigError("grid.dx", config.grid.dx,
                              f"gives N = {n}, which needs about {need / 2**30:.1f} GiB per GPU on "
                              f"{g} GPU(s), more than the {free_gpu / 2**30:.1f} GiB free; the "
                              f"largest N that fits is about {lo}")
    if out_dir is None:  # in memory: no file
        return
    check_disk(config, out_dir, free_disk, existing)


def check_disk(config: Config, out_dir, free_disk=None, existing=0):
    """Refuse a run whose file cannot fit in the free space of ``out_dir`` (ConfigError
    naming --out, what it needs and what is free), before any work; warn when it would
    leave less than a tenth free.  ``existing``: bytes a resumed file already holds."""
    check_space(out_dir, max(0, output_bytes(config) - existing), "the run file", free_disk)


def check_space(out_dir, size, what, free_disk=None):
    """Refuse ``what`` of ``size`` bytes where the free space of ``out_dir`` (or the nearest
    folder above it that exists) is less (ConfigError naming --out, what it needs and what
    is free), before any work; warn when it would leave less than a tenth free."""
    probe = out_dir
    while probe and not os.path.isdir(probe):   # the folder may not exist yet
        probe = os.path.dirname(probe)
    if free_disk is None:
        free_disk = shutil.disk_usage(probe or ".").free
    if size > free_disk:
        raise ConfigError("--out", out_dir, f"{what} needs about {_size(size)}, but only "
                          f"{_size(free_disk)} are free there")
    if size > 0.9 * free_disk:
        warnings.warn(f"the output needs about {_size(size)} but only {_size(free_disk)} are "
                      f"free in {out_dir}", ResourceWarning, stacklevel=2)


def _size(b) -> str:
    return f"{b / 2**20:.1f} MiB" if b >= 2**20 else f"{b / 2**10:.0f} KiB"


def free_on(cp, d):
    """Free bytes on GPU ``d``: the driver's free memory plus CuPy's pooled free blocks."""
    with cp.cuda.Device(d):
        return cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()


# ---------------------------------------------------------------- CPU time
def measured_gemm_rate(n=384, threads=1) -> float:
    """FLOP/s of a real n^3 GEMM on this CPU now (a few milliseconds)."""
    import time as _time

    import numpy as np
    a = np.random.default_rng(0).standard_normal((n, n))
    with blas_limit(threads):
        a @ a
        t0 = _time.perf_counter()
        for _ in range(3):
            a @ a
        dt = (_time.perf_counter() - t0) / 3
    return 2.0 * n ** 3 / max(dt, 1e-9)


def cpu_seconds_estimate(config: Config, pc, threads=1, rate=None) -> float:
    """Seconds a CPU run needs, from its flops and a measured GEMM rate: each exponential's
    products (real GEMMs of N^2 on the split path, complex = 4 real otherwise) or
    Chebyshev terms (each ~40 N flops, x log2 N for the DVR's FFT; N columns in operator
    mode), operator mode's extra products, the step-doubling window, and the eigenstates
    of H(t) when the centres move (a dense eigensolver for the DVR)."""
    n, pr = config.grid.n, config.propagator
    k = schemes.get(pr.scheme).exponentials
    steps = config.time.steps + 2 * pr.error_window
    exps = k * steps if config.time_dependent else k
    rate = rate or measured_gemm_rate(min(max(n, 64), 768), threads)
    per = 2.0 * n ** 3
    if exponentials.get(pr.method).matrix_free:
        cols = n if pr.operator else 1
        fft = max(1.0, math.log2(n)) if config.grid.stencil == "dvr" else 1.0
        work = k * steps * pc.chebyshev_terms * cols * 40.0 * n * fft
    else:
        work = exps * pc.plan.products * per * (1 if config.hermitian else 4)
        work += k * steps * (4 * per if pr.operator else 8.0 * n * n)
    if config.potential.molecule_moves and config.grid.stencil == "dvr":
        work += config.time.steps / config.output.observables_every * 4.0 * n ** 3
    # + about 2 ms of Python and observables per observation
    return work / rate + 2e-3 * config.time.steps / config.output.observables_every
