"""#56 probe (benchmarks/archive): the GPU split carrier alone on one GPU -- SplitCarrier.carry a piece (end to end, synchronised), its kernel alone (CUDA events), the piece's potentials on the host (total_many), against the Chebyshev midpoint carrier's graph steps.  PYTHONPATH=. python benchmarks/archive/split_bench.py"""
import time, numpy as np, cupy as cp
import tdse
from benchmarks import drives
from tdse.numerics import adaptive as ad
from tdse.numerics.carrier import carrier
from tdse.backends.cupy.split import split_kernel
from tdse.model.potential import total_many
rng = np.random.default_rng(3)
for name, cfg, S in (("atom_hhg", tdse.load_config("inputs/atom_hhg.toml"), 50), ("laser", drives.make("laser", rng), 10)):
    tc = ad.transport_config(cfg)
    c = carrier(tdse.prepare(tc, backend="cupy").stepper(), cp)
    cheb = tdse.prepare(tc, backend="cupy").stepper()
    n = cfg.grid.n
    e = cp.asarray(rng.normal(size=n) + 1j * rng.normal(size=n)); L = cp.asarray(0.1 * (rng.normal(size=(S, n)) + 1j * rng.normal(size=(S, n))))
    for _ in range(3): c.carry(e, 0, L)
    cp.cuda.Device().synchronize()
    ts = []
    for r in range(20):
        t = time.perf_counter(); c.carry(e, 64 * r, L); cp.cuda.Device().synchronize(); ts.append(time.perf_counter() - t)
    d = c._dev; D = cp.ones((S, n), complex)
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event(); ks = []
    for r in range(20):
        ev0.record(); split_kernel(cp)(d["grid"], (256,), (d["Q"], d["ph"], D, L, e.copy(), d["y"], d["z"], np.int32(S), np.int32(n), d["bar"], np.int32(0), d["bar"], d["y"]), shared_mem=16 * n); ev1.record(); ev1.synchronize(); ks.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1e-3)
    h = []
    for r in range(20):
        t = time.perf_counter(); total_many(cfg.potential, c.stepper.x_host, [0.1 * j for j in range(S)]); h.append(time.perf_counter() - t)
    X = e.copy(); cheb.advance(X, 0, S); cp.cuda.Device().synchronize(); t = time.perf_counter(); cheb.advance(X, 0, S); cp.cuda.Device().synchronize(); tc_ = time.perf_counter() - t
    print(f"{name} N={n} S={S}: carry {min(ts)/S*1e6:.1f} us/step, kernel {min(ks)/S*1e6:.1f} us/step, total_many {min(h)/S*1e6:.1f} us/step, chebyshev carrier {tc_/S*1e6:.1f} us/step, grid {d['grid']}", flush=True)
