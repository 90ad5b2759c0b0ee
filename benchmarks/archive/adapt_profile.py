"""#56: where an adaptive laser run's wall goes on a GPU, for the time-error suite's two
laser draws (its first, as `--kinds` with none draws it, and the one after its four drives):
after two warm runs, one run counted (graph captures, the steps' Chebyshev patterns) and one
under cProfile (the functions with the most own time, and tdse's by cumulative time).

    python benchmarks/archive/adapt_profile.py [TOL]
"""
import cProfile
import collections
import io
import pstats
import sys
import time

import numpy as np

import tdse
from benchmarks import drives
from tdse.config import with_values
from tdse.numerics import graphs

tol = float(sys.argv[1]) if len(sys.argv) > 1 else 1e-8
rng = np.random.default_rng(56)
first = drives.make("laser", rng)
rng = np.random.default_rng(56)
for kind in ("abrupt", "ramped", "laser", "fast"):
    drives.make(kind, rng)
suite = drives.make("laser", rng)
real = graphs.capture
count = collections.Counter()


def counted(cp, body, pool=None):
    import traceback
    where = [f.name for f in traceback.extract_stack(limit=6)[:-1]]
    count[" < ".join(reversed(where[-3:]))] += 1
    return real(cp, body, pool)


for name, laser in (("first", first), ("suite", suite)):
    print("==", name, "field", laser.field, "a", laser.potential.a, flush=True)
    cfg = with_values(laser, [("time.dt", 1.0), ("output.every", 5), ("time.tolerance", tol)])
    for _ in range(2):
        r = tdse.simulate(cfg, backend="cupy", progress=False)
    count.clear()
    graphs.capture = counted
    t = time.perf_counter()
    r = tdse.simulate(cfg, backend="cupy", progress=False)
    graphs.capture = real
    print(f"wall {time.perf_counter() - t:.3f} s, steps {r.time_error['steps_taken']}, "
          f"rejected {r.time_error['rejected']}; captures {sum(count.values())}:", dict(count), flush=True)
    pr = cProfile.Profile()
    pr.enable()
    r = tdse.simulate(cfg, backend="cupy", progress=False)
    pr.disable()
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s)
    st.sort_stats("tottime").print_stats(30)
    st.sort_stats("cumulative").print_stats("tdse", 40)
    print("\n".join(line for line in s.getvalue().splitlines() if line.strip())[-6000:], flush=True)
