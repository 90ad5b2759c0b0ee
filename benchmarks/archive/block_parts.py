"""The parts of a single run's time-block measure on one GPU (tdse.run.observers._BlockRows:
M states of N points measured at once by BlockMeasure.raw), each timed by CUDA events:
the transposing copy, the kinetic product, the FFT, the sums kernel (the grid in one part a
member, as before, or split: observables.measure_splits; and with V's derivative without
pow), the amplitudes, the whole raw(); the sums of the kernel variants compared.

    PYTHONPATH=. python -m benchmarks.archive.block_parts [N] [M] [stencil ...]
"""
import sys
import time

import numpy as np


def _timed(cp, f, R=20):
    f()
    cp.cuda.Device().synchronize()
    ms = []
    for _ in range(R):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        f()
        e1.record()
        e1.synchronize()
        ms.append(cp.cuda.get_elapsed_time(e0, e1))
    return float(np.median(ms))


def main():
    import cupy as cp

    from tdse import load_config
    from tdse.model import observables as O
    from tdse.model.grid import points
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    M = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    stencils = sys.argv[3:] or ["3", "5", "dvr"]
    print(f"N = {n}, M = {M} states a block, "
          f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; ms a block (median of 20)")
    rng = np.random.default_rng(5)
    for st in stencils:
        cfg = load_config("inputs/h2plus_moving_large.toml").with_value(
            "grid.stencil", int(st) if st.isdigit() else st)
        cfg = cfg.with_value("grid.dx", (cfg.grid.x_max - cfg.grid.x_min) / n)
        x = points(cfg.grid)
        K = 4
        phi = rng.standard_normal((1, K, n))
        psi0 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        bm = O.BlockMeasure([cfg] * M, x, np.broadcast_to(phi, (M, K, n)),
                            np.repeat(psi0[:, None], M, axis=1), cp)
        buf = cp.asarray(rng.standard_normal((M, n)) + 1j * rng.standard_normal((M, n)))
        ts = list(np.linspace(10.0, 10.0 + M * cfg.time.dt, M))
        r0 = bm.raw(None, buf.T, times=ts)         # compiles; the reference sums
        Xc = cp.ascontiguousarray(buf.T)
        kin = cp.ascontiguousarray(bm.kinetic._kinetic(Xc)[0])
        F = cp.ascontiguousarray(cp.fft.fft(Xc, axis=0))
        P = bm._up(bm._pack_own(ts))
        args = (Xc, kin, bm.psi0, F, bm.k, bm._xv, bm._lay, P, bm.potential.constants(),
                np.int32(n), np.int32(M), np.int32(len(bm.potential.Z)),
                np.int32(bm.potential.has_field))
        src = O.MEASURE_KERNEL.replace(
            "v -= Z / sqrt(r * r + a);\n        g += Z * r / pow(r * r + a, 1.5);",
            "double q2 = r * r + a, sq = sqrt(q2);\n        v -= Z / sq;\n"
            "        g += Z * r / (q2 * sq);")
        assert src != O.MEASURE_KERNEL
        nopow = cp.RawModule(code=src).get_function("tdse_block_measure")
        G = O.measure_splits(n)

        def kern(G, f=bm._kern):
            part = cp.empty((9, G, M))
            f(((M + 31) // 32, G), (32, 8), args + (part,))
            return part.sum(axis=1)

        sums = {g: kern(g) for g in (1, G)}
        sums["nopow"] = kern(G, nopow)
        ref = cp.asnumpy(r0["sums"])
        scale = np.abs(ref).max(axis=1, keepdims=True)
        scale[scale == 0] = 1.0              # a sum that is 0 (no absorbing layers) stays 0
        for k, v in sums.items():
            err = float((np.abs(cp.asnumpy(v) - ref) / scale).max())
            print(f"  [{st}] sums kernel {k}: max |diff| / scale {err:.1e}")
        parts = {
            "transpose copy": lambda: cp.ascontiguousarray(buf.T),
            "kinetic": lambda: bm.kinetic._kinetic(Xc),
            "FFT axis 0 (C order)": lambda: cp.ascontiguousarray(cp.fft.fft(Xc, axis=0)),
            "FFT of the rows + transpose": lambda: cp.ascontiguousarray(cp.fft.fft(buf, axis=1).T),
            "kernel, one part (as before)": lambda: kern(1),
            f"kernel, {G} parts": lambda: kern(G),
            f"kernel, {G} parts, no pow": lambda: kern(G, nopow),
            "amplitudes phi0 X": lambda: bm.phi0 @ Xc,
            "raw() whole": lambda: bm.raw(None, buf.T, times=ts),
        }
        for name, f in parts.items():
            print(f"  [{st}] {name:34s} {_timed(cp, f):8.3f} ms")
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            bm.raw(None, buf.T, times=ts)
        host = (time.perf_counter() - t0) / 10
        cp.cuda.Device().synchronize()
        print(f"  [{st}] raw() host call {1e3 * host:8.3f} ms")
        # the per-step pieces of the run's observer: a row's copy, H(t)'s populations
        row, psi = buf[0], cp.asarray(rng.standard_normal(n) + 0j)
        phit = cp.asarray(rng.standard_normal((K, n)))
        print(f"  [{st}] row copy (memcpy)  {1e3 * _timed(cp, lambda: row.data.copy_from_device_async(psi.data, row.nbytes), 200):8.2f} us")
        print(f"  [{st}] phit @ psi         {1e3 * _timed(cp, lambda: phit @ psi, 200):8.2f} us")


if __name__ == "__main__":
    main()
