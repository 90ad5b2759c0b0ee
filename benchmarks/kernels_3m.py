"""One GPU, no transfers: the kernels of a band tile, sustained (suite ``kernels-3m``).

What bounds 3m's ratio to native on a GPU: for tile widths T, with K = N,
* ZGEMM T x K x T (native's tile),
* three DGEMMs T x K x T on the real planes of a band stack, as the engine issues them
  (``3 dgemm``), or as one strided-batched call (``batched``),
* 3m's combine kernel (T1, T2, T3 -> complex tile),
* the whole N x N x N ZGEMM and DGEMM (cupy.matmul) for reference.
Each case runs back to back for about ``--seconds`` after a warm-up (CUDA events), in two
rounds ABAB so drift in the clocks shows; ``nvidia-smi`` logs clocks and power meanwhile
when ``--smi FILE`` is given.

    python -m benchmarks kernels-3m --n 32768 --tiles 1024,2048,4096,8192
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np


def table(doc):
    """Markdown lines: per tile, each case's effective TFLOP/s (8 T^2 K / time, mean time
    over the rounds), the combine's ms and the 3m / ZGEMM ratios (printed here and by
    the results index)."""
    rows, k = doc["rows"], doc["n"]
    out = [f"One GPU, K = {k}: effective TFLOP/s (8 T^2 K / time) of a T x K x T tile, mean "
           "of the rounds", "",
           "| tile T | ZGEMM | 3 DGEMMs | batched DGEMM | combine ms | 3 DGEMMs / ZGEMM | "
           "batched / ZGEMM |", "|---|---|---|---|---|---|---|"]
    for t in sorted({r["tile"] for r in rows if r["case"] == "zgemm"}):
        ms = {c: float(np.mean([r["ms"] for r in rows if r["tile"] == t and r["case"] == c]))
              for c in ("zgemm", "3 dgemm", "batched", "combine")}
        f = 8.0 * t * t * k / 1e9   # GFLOP; / ms = TFLOP/s
        out.append(f"| {t} | {f / ms['zgemm']:.1f} | {f / ms['3 dgemm']:.1f} | "
                   f"{f / ms['batched']:.1f} | {ms['combine']:.3f} | "
                   f"{ms['zgemm'] / ms['3 dgemm']:.3f} | {ms['zgemm'] / ms['batched']:.3f} |")
    return out


def run(a):
    """The cases for ``a.tiles`` at K = ``a.n``; returns (rows, {"n": K})."""
    import cupy as cp
    try:
        from cupy_backends.cuda.libs import cublas
    except ImportError:  # older layouts
        from cupy.cuda import cublas  # type: ignore

    from mgemm.executors.cupy_exec import combine3m, strided_gemm

    n = k = a.n
    tiles = [int(t) for t in a.tiles.split(",")]
    smi = None
    if a.smi:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,"
                                "temperature.gpu", "--format=csv", "-lms", "250"],
                               stdout=open(a.smi, "w"), stderr=subprocess.DEVNULL)
    rng = np.random.default_rng(7)
    h = cp.cuda.device.get_cublas_handle()
    cublas.setPointerMode(h, 0)
    one, zero = np.array(1.0), np.array(0.0)
    zone, zzero = np.array(1.0 + 0j), np.array(0j)

    def rand(shape, dt_):
        x = cp.asarray(rng.standard_normal(shape))
        if np.dtype(dt_).kind == "c":
            x = x + 1j * cp.asarray(rng.standard_normal(shape))
        return x.astype(dt_)

    def timed(fn, flops):
        fn()
        cp.cuda.Device().synchronize()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        once = cp.cuda.get_elapsed_time(e0, e1) / 1e3
        reps = max(1, int(a.seconds / max(once, 1e-6)))
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        e1.synchronize()
        t = cp.cuda.get_elapsed_time(e0, e1) / 1e3 / reps
        return t, flops / t

    rows = []
    Tmax = max(tiles)
    # a band stack as the engine holds it: A3 (T x 3K, planes side by side), B3 band
    # (3K x T, planes stacked), bufT (T x 3T)
    A3 = rand((Tmax, 3 * k), np.float64)
    B3 = rand((3 * k, Tmax), np.float64)
    Tb = cp.empty((Tmax, 3 * Tmax), np.float64)
    Az = rand((Tmax, k), np.complex128)
    Bz = rand((k, Tmax), np.complex128)

    def cases(T):
        A3t = A3[:T]                      # rows of the stack: ld 3k
        B3t = B3[:, :T] if T == Tmax else cp.ascontiguousarray(B3[:, :T])
        Tt = Tb[:T, :3 * T] if T == Tmax else cp.empty((T, 3 * T), np.float64)
        Azt, Bzt = Az[:T], cp.ascontiguousarray(Bz[:, :T])
        Czt = cp.empty((T, T), np.complex128)

        def zg():   # row-major C = A B as column-major C^T = B^T A^T
            cublas.zgemm(h, 0, 0, T, T, k, zone.ctypes.data, Bzt.data.ptr, T,
                         Azt.data.ptr, k, zzero.ctypes.data, Czt.data.ptr, T)

        def dg3():
            for p in range(3):
                cublas.dgemm(h, 0, 0, T, T, k, one.ctypes.data,
                             B3t.data.ptr + p * k * T * 8, T, A3t.data.ptr + p * k * 8, 3 * k,
                             zero.ctypes.data, Tt.data.ptr + p * T * 8, 3 * T)

        def dgb():
            strided_gemm(h, np.float64, T, T, k, one.ctypes.data, A3t.data.ptr, 3 * k, k,
                         B3t.data.ptr, T, k * T, zero.ctypes.data, Tt.data.ptr, 3 * T, T, 3)

        def comb():
            combine3m(Tt[:, :T], Tt[:, T:2 * T], Tt[:, 2 * T:], np.complex128(1), np.complex128(0),
                     Czt)
        return zg, dg3, dgb, comb, (Azt, Bzt, Czt, A3t, B3t, Tt)

    def check(T, bufs):
        # the three planes give T1, T2, T3 of a random real stack: compare with matmul
        A3t, B3t, Tt = bufs[3], bufs[4], bufs[5]
        ref = A3t[:256, :k] @ B3t[:k, :T]
        return float(cp.abs(Tt[:256, :T] - ref).max() / cp.abs(ref).max())

    nf = a.n_full
    Zf = rand((nf, nf), np.complex128)
    for rnd in range(a.rounds):
        for T in tiles:
            zg, dg3, dgb, comb, bufs = cases(T)
            f_tile = 8.0 * T * T * k           # complex flops of the tile (native's count)
            for label, fn, fl in (("zgemm", zg, f_tile), ("3 dgemm", dg3, f_tile),
                                  ("batched", dgb, f_tile), ("combine", comb, 0.0)):
                t, r = timed(fn, fl)
                row = {"round": rnd, "tile": T, "case": label, "ms": t * 1e3,
                       "eff_tflops": r / 1e12 if fl else None,
                       "real_tflops": (r * 0.75 / 1e12) if label != "zgemm" and fl else None}
                if label in ("3 dgemm", "batched"):
                    row["err"] = check(T, bufs)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
            del bufs
        for label, dt_ in (("zgemm N", np.complex128), ("dgemm N", np.float64)):
            X = Zf if dt_ == np.complex128 else Zf.real.copy()
            out = cp.empty_like(X)
            f = (8.0 if dt_ == np.complex128 else 2.0) * nf ** 3
            t, r = timed(lambda X=X, out=out: cp.matmul(X, X, out=out), f)
            rows.append({"round": rnd, "tile": nf, "case": label, "ms": t * 1e3,
                         "eff_tflops": r / 1e12})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            del X, out
    if smi is not None:
        smi.terminate()
    return rows, {"n": n}
