"""#56: where the time-error suite's laser run (its cost row's draw: rng(56) after abrupt
and ramped) spends its wall with and without the estimate on a GPU: medians of ROUNDS
alternating runs, then one of each under cProfile (own time; tdse's by cumulative time).

    python benchmarks/archive/laser_profile.py [ROUNDS]
"""
import cProfile
import io
import pstats
import sys

import numpy as np

import tdse
from benchmarks import drives

rng = np.random.default_rng(56)
drives.make("abrupt", rng)
drives.make("ramped", rng)
laser = drives.make("laser", rng)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
secs = {"none": [], "estimate": []}
for k in range(rounds + 1):
    for te in secs:
        s = tdse.simulate(laser.with_value("propagator.time_error", te), backend="cupy",
                          progress=False).seconds
        if k:
            secs[te].append(s)
print({k: [round(x * 1e3, 1) for x in v] for k, v in secs.items()})
for te in secs:
    pr = cProfile.Profile()
    pr.enable()
    tdse.simulate(laser.with_value("propagator.time_error", te), backend="cupy", progress=False)
    pr.disable()
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s)
    st.sort_stats("tottime").print_stats(22)
    st.sort_stats("cumulative").print_stats("tdse|mgemm", 40)
    print("==", te)
    print("\n".join(line for line in s.getvalue().splitlines() if line.strip()), flush=True)
