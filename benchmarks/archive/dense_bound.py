"""auto's calibration (tdse.numerics.cost.calibrate): the timed dense exponent against its
lower bound (the plan's products as real GEMMs at 8x the timed complex GEMM's rate) on
this CPU, per input, N and stencil -- where the bound is tight and where it is not.

    python benchmarks/archive/dense_bound.py
"""
import dataclasses
import tdse
from tdse.numerics import cost
from tdse import config as cfgmod
rows = []
for inp in ("h2plus_static", "h2plus_moving", "atom_hhg"):
    base = cfgmod.load(f"inputs/{inp}.toml")
    w = base.grid.x_max - base.grid.x_min
    for N in (128, 256, 512, 1024):
        for st in (3, "dvr"):
            cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=st))
            cfg = cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
            cost._CACHE.clear()
            orig = cost.estimate
            try:
                p = tdse.prepare(cfg, backend="numpy", check_resolution=False)
            except Exception as e:
                print(inp, N, st, "refused", str(e)[:80]); continue
            t = p.method_choice["timings"] if getattr(p, "method_choice", None) else None
            if not t:
                print(inp, N, st, "no choice"); continue
            bound = p.precheck.plan.products * t["zgemm"] / 8
            print(f"{inp:14s} N {N:5d} {str(st):3s} n0 {t['n0']:4d} products {p.precheck.plan.products:2d} expm {t['expm']*1e3:7.2f} ms "
                  f"bound {bound*1e3:7.2f} ms ratio {t['expm']/bound:5.2f} timed {t['expm_timed']} chosen {p.config.propagator.method} "
                  f"est {p.method_choice['seconds_per_step']}", flush=True)
