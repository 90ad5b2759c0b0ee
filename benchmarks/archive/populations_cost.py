"""#59 item 5: what the populations in H(t)'s eigenstates every step cost a moving-centre
run on this CPU: h2plus_moving at N points per stencil (auto's method, no time error,
observables every step, S steps), `tdse.simulate` with populations_every = S (the first
and last rows only) against every step, each twice, the best kept (prepare included in
both).  Prints a table (the target: <= 1.3).

    python benchmarks/archive/populations_cost.py S N[,N...] [STENCIL[,STENCIL...]]
"""
import dataclasses
import os
import sys
import time

import tdse
from tdse import config as cfgmod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    S, ns = int(sys.argv[1]), [int(v) for v in sys.argv[2].split(",")]
    base = cfgmod.load(os.path.join(ROOT, "inputs", "h2plus_moving.toml"))
    w = base.grid.x_max - base.grid.x_min
    print(f"# python benchmarks/archive/populations_cost.py {' '.join(sys.argv[1:])} "
          f"({time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}, {os.cpu_count()} CPUs)")
    print("| N | stencil | method | without (s) | every step (s) | ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in ns:
        for st in [int(v) if v in ("3", "5") else v for v in
                   (sys.argv[3].split(",") if len(sys.argv) > 3 else ["3", "5", "dvr"])]:
            cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / n, stencil=st))
            cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
                   .with_value("time.t_end", S * cfg.time.dt).with_value("output.observables_every", 1))
            best = {}
            for pe in (S, 1, S, 1):
                t = time.perf_counter()
                r = tdse.simulate(cfg.with_value("output.populations_every", pe), backend="numpy")
                best[pe] = min(best.get(pe, 1e9), time.perf_counter() - t)
            print(f"| {n} | {st} | {r.config.propagator.method} | {best[S]:.2f} | {best[1]:.2f} | "
                  f"{best[1] / best[S]:.2f} |", flush=True)
