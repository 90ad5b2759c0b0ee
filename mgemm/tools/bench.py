"""``mgemm bench``: the band engine against single-GPU cuBLAS, cuBLAS-XT and JAX, in one process.

For each N: C = A B (alpha = 1, beta = 0) with random operands (never zeros), placed per
``placement``; median wall time over ``repeat`` calls after a warm-up (each call
synchronises, so wall time is the whole product).  Rates in TFLOP/s count 2N^3 real or
8N^3 complex flops (3m is reported as the *effective* rate of the same 8N^3).  The
fraction is rate / (G x the single-GPU cupy.matmul rate measured in the same run).

JAX's sharded matmul (where JAX is installed): the same A, B (handed over from CuPy by
DLPack), jit(jnp.matmul) over a mesh of the G GPUs, A in row bands and B in column bands
(XLA gathers what each GPU needs), C in row bands.  Two timings: ``jax-sharded`` with the
operands already distributed (JAX's usual setting), ``jax-gpu0`` counting the
distribution from GPU 0 and the gather of C back to it (like placement "one").
"""
from __future__ import annotations

import ctypes
import glob
import time

import numpy as np

from .calibrate import calibrate, traced
from .common import flops, free_gpu_memory, rand_matrix, time_call


def _cublasxt_lib():
    names = ["libcublas.so.13", "libcublas.so.12", "libcublas.so"]
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    for pat in ("/usr/local/cuda*/lib64/libcublas.so*", "/opt/**/nvidia/cu*/lib/libcublas.so*",
                "/usr/**/nvidia/cu*/lib/libcublas.so*", "/opt/**/libcublas.so*"):
        for p in sorted(glob.glob(pat, recursive=True)):
            try:
                return ctypes.CDLL(p)
            except OSError:
                pass
    raise OSError("libcublas not found")


def cublasxt_gemm(cp, A, B, C, devices, block):
    """C = A B through cuBLAS-XT (ctypes), row-major via C^T = B^T A^T."""
    lib = _cublasxt_lib()
    h = ctypes.c_void_p()
    assert lib.cublasXtCreate(ctypes.byref(h)) == 0
    ids = (ctypes.c_int * len(devices))(*devices)
    assert lib.cublasXtDeviceSelect(h, len(devices), ids) == 0
    assert lib.cublasXtSetBlockDim(h, block) == 0
    dt = np.dtype(A.dtype)
    name = {"f": "S", "d": "D", "F": "C", "D": "Z"}[dt.char]
    fn = getattr(lib, f"cublasXt{name}gemm")
    one, zero = np.array(1, dt), np.array(0, dt)
    n = A.shape[0]
    sz = ctypes.c_size_t

    def run():
        st = fn(h, 0, 0, sz(n), sz(n), sz(n), ctypes.c_void_p(one.ctypes.data),
                ctypes.c_void_p(B.data.ptr), sz(n), ctypes.c_void_p(A.data.ptr), sz(n),
                ctypes.c_void_p(zero.ctypes.data), ctypes.c_void_p(C.data.ptr), sz(n))
        if st != 0:
            raise RuntimeError(f"cublasXt{name}gemm returned {st}")

    return run, lambda: lib.cublasXtDestroy(h)


def _jax():
    """jax with float64 on and no preallocation (CuPy shares the GPUs), or None."""
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    os.environ.setdefault("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    try:
        import jax
    except Exception:
        return None
    jax.config.update("jax_enable_x64", True)
    try:
        if len(jax.devices("gpu")) < 1:
            return None
    except RuntimeError:
        return None
    return jax


#: jax-gpu0 moves the operands at a few GB/s on 4 H200 (measured: 4 TFLOP/s at N = 8192),
#: so it is timed only up to this N
JAX_GPU0_MAX_N = 8192


def jax_sharded_rows(jax, cp, A0, B0, g, repeat, sample, ref_rows, n, dtype, single, fl):
    """Rows for JAX's sharded matmul on the first ``g`` GPUs (see the module docstring)."""
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    devs = jax.devices("gpu")[:g]
    mesh = Mesh(np.array(devs), ("x",))
    rows_s, cols_s = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P(None, "x"))
    cp.cuda.Device(0).synchronize()
    a0, b0 = jax.dlpack.from_dlpack(A0), jax.dlpack.from_dlpack(B0)  # on GPU 0, no copy
    mm = jax.jit(jnp.matmul, out_shardings=rows_s)
    one = jax.sharding.SingleDeviceSharding(devs[0])
    out = []

    def timed(f):
        f().block_until_ready()
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            f().block_until_ready()
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts))

    a, b = jax.device_put(a0, rows_s), jax.device_put(b0, cols_s)
    t_s = timed(lambda: mm(a, b))
    c = mm(a, b)
    with cp.cuda.Device(0):
        got = cp.asarray(np.asarray(c[sample]))
        err = float(cp.abs(got - ref_rows).max() / cp.abs(ref_rows).max())
    del c
    runs = [("jax-sharded", t_s)]
    if n <= JAX_GPU0_MAX_N:
        runs.append(("jax-gpu0", timed(lambda: jax.device_put(
            mm(jax.device_put(a0, rows_s), jax.device_put(b0, cols_s)), one))))
    for name, t in runs:
        rate = fl / t / 1e12
        out.append(dict(n=n, dtype=dtype.name, engine=name, gpus=g, placement="sharded" if name ==
                        "jax-sharded" else "one", seconds=t, tflops=rate, fraction=rate / (g * single),
                        rel_error=err, jax_version=jax.__version__))
    return out


def _mgemm_row(cp, A, B, C, devs, t_arg, cm, balance, repeat, ctx, progress):
    """One timed mgemm configuration as a result row.  ``balance`` "balanced": first two
    traced calibration calls (equal rows, then the rows they suggest; :mod:`.calibrate`),
    then the timing with the rows of the second."""
    n, dtype, g, placement, single, fl, sample, ref_rows = ctx
    a_dev, b_dev, c_dev = A.device.id, B.device.id, C.device.id
    from .. import executors
    from ..gemm import gemm
    ex = executors.get("cupy")
    shares = None
    what = f"N={n} mgemm G={g} {placement} tile={t_arg} {cm}{' balanced' if balance else ''}"
    try:
        if balance:
            shares = calibrate(lambda sh: traced(A, B, C, devs, t_arg, cm, sh))
        t = time_call(cp, lambda: gemm(A, B, C, 1.0, 0.0, devices=devs, tile=t_arg,
                                         complex_method=cm, shares=shares),
                  repeat, sorted(set(devs) | {a_dev, b_dev, c_dev}))
    except Exception as e:  # report, keep going
        progress(f"{what}: FAILED {e}")
        return dict(n=n, engine="mgemm", gpus=g, placement=placement, tile=str(t_arg),
                    complex_method=cm, balanced=bool(balance), error=str(e))
    with cp.cuda.Device(c_dev):
        got = cp.asarray(C[sample])
    with cp.cuda.Device(0):
        err = float(cp.abs(cp.asarray(got) - ref_rows).max() / cp.abs(ref_rows).max())
    sched = ex.last_schedule
    rate = fl / t / 1e12
    row = dict(n=n, dtype=dtype.name, engine="mgemm", gpus=g, placement=placement,
               tile=sched.tile, complex_method=cm, seconds=t, tflops=rate,
               fraction=rate / (g * single), rel_error=err, copy_side=ex.copy_side,
               interleave=ex.interleave, balanced=bool(balance))
    if cm == "auto":
        row["method_used"] = sched.method
    if sched.method == "3m":
        row["plane_copies"] = ex.plane_copies
    if ex.row_tile is not None:
        row["row_tile"] = ex.row_tile
    if balance:
        row["rows_per_gpu"] = sched.rows_per_worker()
    progress(f"N={n} mgemm G={g} {placement} tile={sched.tile} {cm}"
             f"{' balanced ' + str(row['rows_per_gpu']) if balance else ''}: "
             f"{rate:.2f} TFLOP/s = {rate / (g * single):.3f} of {g}x1, err {err:.1e}")
    return row


def run_bench(sizes, dtype="complex128", gpus=(1, 2, 4), placements=("three", "one"),
              tiles=("auto",), complex_methods=("native",), repeat=3, xt_blocks=(2048, 4096, 8192),
              timeline=None, progress=print, use_jax=True, checkpoint=None, balance=False):
    import cupy as cp

    dtype = np.dtype(dtype)
    ngpu = cp.cuda.runtime.getDeviceCount()
    if max(gpus) > ngpu:
        raise ValueError(f"gpus={max(gpus)}: only {ngpu} GPUs present")
    rows = []
    for n in sizes:
        fl = flops(n, dtype)
        A0 = rand_matrix(cp, 0, n, dtype, 1)
        B0 = rand_matrix(cp, 0, n, dtype, 2)
        with cp.cuda.Device(0):
            C0 = cp.empty((n, n), dtype)
            t1 = time_call(cp, lambda: cp.matmul(A0, B0, out=C0), repeat, [0])
            sample = slice(0, min(n, 256))
            ref_rows = cp.matmul(A0[sample], B0)
        single = fl / t1 / 1e12
        rows.append(dict(n=n, dtype=dtype.name, engine="cupy.matmul", gpus=1, seconds=t1,
                         tflops=single, fraction=1.0))
        progress(f"N={n} cupy.matmul 1 GPU: {single:.2f} TFLOP/s")
        for g in gpus:
            devs = list(range(g))
            for placement in placements:
                a_dev, b_dev, c_dev = (0, 0, 0) if placement == "one" else (0, 1 % g, 2 % g)
                with cp.cuda.Device(a_dev):
                    A = A0 if a_dev == 0 else cp.asarray(A0)
                with cp.cuda.Device(b_dev):
                    B = B0 if b_dev == 0 else cp.asarray(B0)
                with cp.cuda.Device(c_dev):
                    C = C0 if c_dev == 0 else cp.empty((n, n), dtype)
                assert (A.device.id, B.device.id, C.device.id) == (a_dev, b_dev, c_dev)
                for tile in tiles:
                    for cm in complex_methods:
                        if cm != "native" and dtype.kind != "c":
                            continue
                        t_arg = tile if tile == "auto" else int(tile)
                        for sh in ([None, "balanced"] if balance and g > 1 else [None]):
                            row = _mgemm_row(cp, A, B, C, devs, t_arg, cm, sh, repeat,
                                             (n, dtype, g, placement, single, fl, sample, ref_rows),
                                             progress)
                            rows.append(row)
                            if "error" in row:
                                break
                del A, B, C
                free_gpu_memory(cp)
            if g > 1 and xt_blocks:
                best = None
                for blk in xt_blocks:
                    try:
                        with cp.cuda.Device(0):
                            Cx = cp.empty((n, n), dtype)
                        run, destroy = cublasxt_gemm(cp, A0, B0, Cx, devs, blk)
                        t = time_call(cp, run, max(1, repeat - 1), devs)
                        destroy()
                        with cp.cuda.Device(0):
                            err = float(cp.abs(Cx[sample] - ref_rows).max() / cp.abs(ref_rows).max())
                        del Cx
                        rate = fl / t / 1e12
                        progress(f"N={n} cuBLAS-XT G={g} block={blk}: {rate:.2f} TFLOP/s, err {err:.1e}")
                        if best is None or rate > best["tflops"]:
                            best = dict(n=n, dtype=dtype.name, engine="cublasxt", gpus=g,
                                        placement="one", tile=blk, seconds=t, tflops=rate,
                                        fraction=rate / (g * single), rel_error=err)
                    except Exception as e:
                        progress(f"N={n} cuBLAS-XT G={g} block={blk}: FAILED {e}")
                    free_gpu_memory(cp)
                if best:
                    rows.append(best)
            jax = _jax() if (g > 1 and use_jax) else None
            if jax is not None:
                try:
                    got = jax_sharded_rows(jax, cp, A0, B0, g, max(1, repeat - 1), sample,
                                           ref_rows, n, dtype, single, fl)
                    for r in got:
                        progress(f"N={n} {r['engine']} G={g}: {r['tflops']:.2f} TFLOP/s, "
                                 f"err {r['rel_error']:.1e}")
                    rows += got
                except Exception as e:  # report, keep going
                    progress(f"N={n} JAX G={g}: FAILED {type(e).__name__}: {e}")
                    rows.append(dict(n=n, engine="jax-sharded", gpus=g, error=str(e)))
                free_gpu_memory(cp)  # drops JAX's arrays too (platform allocator)
        if checkpoint:
            checkpoint(rows)
        del A0, B0, C0
        free_gpu_memory(cp)
    if timeline:
        import os
        n = sizes[-1]
        g = max(gpus)
        A = rand_matrix(cp, 0, n, dtype, 1)
        B = rand_matrix(cp, 1 % g, n, dtype, 2)
        with cp.cuda.Device(2 % g):
            C = cp.empty((n, n), dtype)
        from .timeline import plot_timeline
        methods = [cm for cm in complex_methods if cm == "native" or dtype.kind == "c"]
        for idx, cm in enumerate(methods or ["native"]):
            stem, ext = os.path.splitext(timeline)
            path = timeline if idx == 0 else f"{stem}_{cm}{ext or '.png'}"
            # the tile of the fastest row measured for this N, G and method (placement ii)
            done = [r for r in rows if r.get("engine") == "mgemm" and r.get("n") == n
                    and r.get("gpus") == g and r.get("complex_method") == cm
                    and r.get("placement") == "three" and "tflops" in r]
            tile = max(done, key=lambda r: r["tflops"])["tile"] if done else "auto"
            devs = list(range(g))
            runs = [("", None)]
            if balance and g > 1:   # and once with the rows a calibration suggests
                runs.append(("_balanced", calibrate(
                    lambda sh: traced(A, B, C, devs, tile, cm, sh))))
            for suffix, shares in runs:
                trace, sched = traced(A, B, C, devs, tile, cm, shares)
                rows_of = "" if shares is None else ", rows " + "/".join(
                    map(str, sched.rows_per_worker()))
                plot_timeline(trace, f"{os.path.splitext(path)[0]}{suffix}{ext or '.png'}"
                              if suffix else path,
                              title=f"mgemm N={n} {dtype.name} {cm} {g} GPUs, tile {sched.tile}, "
                                    f"A/B/C on 0/{1 % g}/{2 % g}{rows_of}")
    return rows
