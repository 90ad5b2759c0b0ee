"""#59 item 2: what a GPU atom_hhg run's first run in a process loads: every CuPy kernel
module compiled or read from the cache (cupy.cuda.compiler's compile_with_cache and
_compile_module_with_cache wrapped with perf_counter), grouped by the tdse frame that asked,
and the libraries' first handles (cuBLAS, cuFFT plan, cuSOLVER) timed apart in a second
process.  Run twice in a row on the device (the second with CuPy's kernel cache warm).

    python benchmarks/archive/cold_kernels.py run      # the run, its kernels
    python benchmarks/archive/cold_kernels.py libs     # the libraries' first handles
    python benchmarks/archive/cold_kernels.py profile [K]  # the two runs' K top own times
"""
import collections
import sys
import tempfile
import time
import traceback

if __name__ == "__main__":
    import cupy
    from cupy.cuda import compiler
    if sys.argv[1] == "profile":      # the first and second runs by cProfile, top own times
        import cProfile
        import io
        import pstats

        from tdse.config import load
        from tdse.run import driver
        cfg = load("inputs/atom_hhg.toml")
        for r in range(2):
            pr = cProfile.Profile()
            t = time.perf_counter()
            pr.runcall(driver.run, cfg, tempfile.mkdtemp(), backend="cupy", force=True)
            print(f"run {r}: {time.perf_counter() - t:.3f} s (profiled)")
            out = io.StringIO()
            pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(int(sys.argv[2]) if len(sys.argv) > 2 else 25)
            print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))
        sys.exit()
    if sys.argv[1] == "libs":
        t = time.perf_counter()
        cupy.cuda.Device(0).synchronize()
        a = cupy.ones((500, 8), dtype=cupy.complex128)
        cupy.cuda.Device(0).synchronize()
        print(f"context + first array {time.perf_counter() - t:.3f} s")
        for name, f in (("cublas handle + zgemm", lambda: a.T @ a),
                        ("cufft plan (1000 x 8)", lambda: cupy.fft.fft(a, n=1000, axis=0)),
                        ("cusolver (eigh 64)", lambda: cupy.linalg.eigh(cupy.eye(64))),
                        ("a reduction kernel", lambda: a.real.sum()),
                        ("an elementwise kernel", lambda: a * 2.5)):
            t = time.perf_counter()
            f()
            cupy.cuda.Device(0).synchronize()
            print(f"{name}: {1e3 * (time.perf_counter() - t):.1f} ms")
        sys.exit()
    loads = []

    def wrap(name):
        f = getattr(compiler, name)

        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                frames = [fr for fr in traceback.extract_stack()[:-1] if "/tdse/" in fr.filename]
                where = (f"{frames[-1].filename.split('/tdse/')[-1]}:{frames[-1].name}" if frames else "?")
                loads.append((name, where, time.perf_counter() - t))
        setattr(compiler, name, g)
    for name in [n for n in dir(compiler) if "compile" in n and callable(getattr(compiler, n))
                 and "hip" not in n]:
        wrap(name)
    import cupy.linalg as cl
    for name in ("eigh", "eigvalsh", "qr", "solve", "inv", "svd", "cholesky", "lstsq"):
        f = getattr(cl, name)

        def g(*a, _f=f, _n=name, **k):
            t = time.perf_counter()
            try:
                return _f(*a, **k)
            finally:
                frames = [fr for fr in traceback.extract_stack()[:-1] if "/tdse/" in fr.filename]
                where = (f"{frames[-1].filename.split('/tdse/')[-1]}:{frames[-1].name}" if frames else "?")
                loads.append((f"linalg.{_n}", f"linalg.{_n} from {where}", time.perf_counter() - t))
        setattr(cl, name, g)
    from tdse.config import load
    from tdse.run import driver
    cfg = load("inputs/atom_hhg.toml")
    for r in range(2):
        loads.clear()
        t = time.perf_counter()
        driver.run(cfg, tempfile.mkdtemp(), backend="cupy", force=True)
        wall = time.perf_counter() - t
        by = collections.defaultdict(lambda: [0, 0.0])
        for _, where, s in loads:
            by[where][0] += 1
            by[where][1] += s
        print(f"run {r}: {wall:.3f} s; {len(loads)} kernel loads and linalg calls, {sum(s for *_, s in loads):.3f} s "
              f"(compiler functions wrapped: {sorted(set(n for n, *_ in loads))})")
        for where, (k, s) in sorted(by.items(), key=lambda kv: -kv[1][1])[:15]:
            print(f"   {where}: {k} loads, {1e3 * s:.1f} ms")
