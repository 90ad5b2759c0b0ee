"""``mgemm probe``: measure the model's hardware parameters and save a machine profile.

Measured (each a median of ``repeat`` timings after a warm-up, on random data):

* ``bw_math[dtype]``: one large GEMM per dtype (cupy.matmul, N = ``gemm_n``);
* ``tile_rates[dtype][N_i]``: the GEMM rate of an N_i x K x N_i product (the tile
  shape; K = ``tile_k``, recorded as ``tile_rates_k``: give the K of your problems, the
  rates depend on it -- on one H200, DGEMM 2048 beat 4096 by 6 % at K = 16384 and tied at
  32768), which the refined model uses;
* ``tile_rates_3m[complex dtype][N_i]``: the real FLOP/s of 3m's tile, the three real
  GEMMs on the planes of a band stack as the engine issues them (one strided-batched
  call, :mod:`mgemm.schedule`), used for ``complex_method="3m"``;
* ``bw_mem``: a device-local copy, counted as bytes read + written;
* ``pairs[s][d]``: peer copy s -> d of ``copy_bytes`` (peer access enabled), issued on
  the destination's stream, as the band engine does; ``pairs_2d``: the same bytes as a
  strided 2-D copy (a column band of a row-major matrix);
* ``one_to_all[s]``: s sends to every other GPU at once (total bytes / time): the model's
  ``bw_transfer`` (a source's links are one shared budget);
* ``*_under_load``: the same while every GPU runs GEMMs (is the copy slowed by compute?);
* ``latency``: an 8-byte peer copy.

The profile (JSON) is what ``tile="auto"`` reads: ``$MGEMM_PROFILE`` or
``~/.cache/mgemm/profile.json``; loading, saving and reading it live in
:mod:`mgemm.profile` (no GPU needed).
"""
from __future__ import annotations

import time

import numpy as np

from ..model import REAL_OF
from .common import time_call

# ---------------------------------------------------------------- GPU measurements
def run_probe(devices=None, gemm_n=8192, copy_bytes=1 << 30, repeat=5, progress=print,
              tile_k=32768):
    import cupy as cp

    from ..executors.cupy_exec import enable_peer_access
    rt = cp.cuda.runtime
    devices = list(range(rt.getDeviceCount())) if devices is None else list(devices)
    enable_peer_access(devices)
    d0 = devices[0]
    out = {"kind": "mgemm-profile", "devices": devices,
           "gpus": [rt.getDeviceProperties(d)["name"].decode() for d in devices],
           "gemm_n": gemm_n, "copy_bytes": copy_bytes}
    # math
    out["bw_math"] = {}
    for dt in ("float32", "float64", "complex64", "complex128"):
        with cp.cuda.Device(d0):
            rng = cp.random.default_rng(1)
            a = rng.standard_normal((gemm_n, gemm_n)).astype(dt)
            if dt.startswith("complex"):
                a = a + 1j * rng.standard_normal((gemm_n, gemm_n)).astype(dt)
            b = a.T.copy()
            t = time_call(cp, lambda: cp.matmul(a, b), repeat, [d0])
        out["bw_math"][dt] = (8 if dt.startswith("complex") else 2) * gemm_n ** 3 / t
        progress(f"bw_math {dt}: {out['bw_math'][dt] / 1e12:.1f} TFLOP/s")
        del a, b
    # the GEMM rate at band-tile shapes: N_i x K times K x N_i (what the engine runs)
    out["tile_rates"] = {}
    k_tile = tile_k
    for dt in ("float32", "float64", "complex64", "complex128"):
        rates = {}
        with cp.cuda.Device(d0):
            rng = cp.random.default_rng(4)
            big = rng.standard_normal((8192, k_tile)).astype(dt)
            if dt.startswith("complex"):
                big = big + 1j * rng.standard_normal((8192, k_tile)).astype(dt)
            for t in (256, 512, 1024, 2048, 4096, 8192):
                a, b = big[:t], big[:t].T.copy()
                c = cp.empty((t, t), dtype=dt)
                sec = time_call(cp, lambda: cp.matmul(a, b, out=c), repeat, [d0])
                rates[str(t)] = (8 if dt.startswith("complex") else 2) * t * t * k_tile / sec
                del b, c
            del big
        out["tile_rates"][dt] = rates
        progress(f"tile rates {dt}: " + ", ".join(f"{t}: {r / 1e12:.1f}" for t, r in rates.items())
                 + " TFLOP/s")
    out["tile_rates_k"] = k_tile
    out["tile_rates_3m"] = {}
    for dt in ("complex64", "complex128"):
        rates = _tile_rates_3m(cp, d0, REAL_OF[dt], k_tile, repeat)
        out["tile_rates_3m"][dt] = rates
        progress(f"3m tile rates {dt} (real): "
                 + ", ".join(f"{t}: {r / 1e12:.1f}" for t, r in rates.items()) + " TFLOP/s")
    # memory
    n_el = copy_bytes // 8
    with cp.cuda.Device(d0):
        x = cp.random.default_rng(2).standard_normal(n_el)
        y = cp.empty_like(x)
        t = time_call(cp, lambda: y.__setitem__(Ellipsis, x), repeat, [d0])
    out["bw_mem"] = 2 * x.nbytes / t
    progress(f"bw_mem: {out['bw_mem'] / 1e9:.0f} GB/s")
    # transfers
    srcs, dsts, streams = {}, {}, {}
    for d in devices:
        with cp.cuda.Device(d):
            srcs[d] = cp.random.default_rng(3 + d).standard_normal(n_el)
            dsts[d] = {s: cp.empty(n_el) for s in devices if s != d}
            streams[d] = cp.cuda.Stream(non_blocking=True)

    def copy(s, d, two_d=False):
        src, dst = srcs[s], dsts[d][s]
        with cp.cuda.Device(d):
            if two_d:  # a column band: rows of `w` elements at pitch 2w
                w = 4096
                rows = n_el // (2 * w)
                rt.memcpy2DAsync(dst.data.ptr, w * 8, src.data.ptr, 2 * w * 8, w * 8, rows, 4,
                                 streams[d].ptr)
            else:
                rt.memcpyAsync(dst.data.ptr, src.data.ptr, n_el * 8, 4, streams[d].ptr)

    def measure_pairs(two_d=False):
        m = [[None] * len(devices) for _ in devices]
        for i, s in enumerate(devices):
            for j, d in enumerate(devices):
                if s != d:
                    t = time_call(cp, lambda: copy(s, d, two_d), repeat, devices)
                    m[i][j] = (n_el * 8 / (2 if two_d else 1)) / t
        return m

    def measure_one_to_all(s):
        others = [d for d in devices if d != s]
        if not others:
            return None
        t = time_call(cp, lambda: [copy(s, d) for d in others], repeat, devices)
        return len(others) * n_el * 8 / t

    out["pairs"] = measure_pairs()
    out["pairs_2d"] = measure_pairs(two_d=True)
    out["one_to_all"] = {str(s): measure_one_to_all(s) for s in devices}
    ota = [v for v in out["one_to_all"].values() if v]
    pair_vals = [v for row in out["pairs"] for v in row if v]
    out["bw_transfer"] = float(min(ota)) if ota else (float(np.median(pair_vals)) if pair_vals
                                                     else float("inf"))
    progress(f"peer pairs median {np.median(pair_vals) / 1e9 if pair_vals else 0:.0f} GB/s, "
             f"one-to-all {[round(v / 1e9) for v in ota]} GB/s")
    # the same under GEMM load on every GPU
    if len(devices) > 1:
        loads = {}
        for d in devices:
            with cp.cuda.Device(d):
                a = cp.random.default_rng(9).standard_normal((8192, 8192)) + 0j
                loads[d] = (a, cp.cuda.Stream(non_blocking=True))

        def busy():
            for d in devices:
                a, st = loads[d]
                with cp.cuda.Device(d), st:
                    for _ in range(3):
                        cp.matmul(a, a)

        def pair_loaded():
            busy()
            t0 = time.perf_counter()
            copy(devices[1], devices[0])
            streams[devices[0]].synchronize()
            t = time.perf_counter() - t0
            for d in devices:
                cp.cuda.Device(d).synchronize()
            return n_el * 8 / t

        def ota_loaded():
            busy()
            t0 = time.perf_counter()
            for d in devices[1:]:
                copy(devices[0], d)
            for d in devices[1:]:
                streams[d].synchronize()
            t = time.perf_counter() - t0
            for d in devices:
                cp.cuda.Device(d).synchronize()
            return (len(devices) - 1) * n_el * 8 / t

        out["pair_under_load"] = float(np.median([pair_loaded() for _ in range(repeat)]))
        out["one_to_all_under_load"] = float(np.median([ota_loaded() for _ in range(repeat)]))
        progress(f"under GEMM load: pair {out['pair_under_load'] / 1e9:.0f} GB/s, one-to-all "
                 f"{out['one_to_all_under_load'] / 1e9:.0f} GB/s")
        # latency: 8 bytes
        s, d = devices[1], devices[0]

        def tiny():
            with cp.cuda.Device(d):
                rt.memcpyAsync(dsts[d][s].data.ptr, srcs[s].data.ptr, 8, 4, streams[d].ptr)
        lat = []
        for _ in range(50):
            t0 = time.perf_counter()
            tiny()
            streams[d].synchronize()
            lat.append(time.perf_counter() - t0)
        out["latency"] = float(np.median(lat))  # includes the issue and sync overhead
    else:
        out["latency"] = 0.0
    return out


def _tile_rates_3m(cp, dev, real, k, repeat, tiles=(256, 512, 1024, 2048, 4096, 8192)):
    """Real FLOP/s of 3m's tile T x K x T: the three plane GEMMs of a band stack as one
    strided-batched call, laid out as the engine holds them (A3 band T x 3K with the
    planes side by side, B3 band 3K x T stacked, tile buffer T x 3T)."""
    from ..executors.cupy_exec import cublas, strided_gemm
    one, zero = np.array(1.0, dtype=real), np.array(0.0, dtype=real)
    rates = {}
    with cp.cuda.Device(dev):
        h = cp.cuda.device.get_cublas_handle()
        cublas.setPointerMode(h, 0)
        rng = cp.random.default_rng(5)
        tm = max(tiles)
        a3 = rng.standard_normal((tm, 3 * k)).astype(real)
        b3_all = rng.standard_normal((3 * k, tm)).astype(real)
        for t in tiles:
            b3 = b3_all[:, :t].copy()
            c = cp.empty((t, 3 * t), dtype=real)

            def call(a3=a3, b3=b3, c=c, t=t):
                strided_gemm(h, real, t, t, k, one.ctypes.data, a3.data.ptr, 3 * k, k,
                             b3.data.ptr, t, k * t, zero.ctypes.data, c.data.ptr, 3 * t, t, 3)
            sec = time_call(cp, call, repeat, [dev])
            rates[str(t)] = 2.0 * 3 * t * t * k / sec
            del b3, c
        del a3, b3_all
    return rates

