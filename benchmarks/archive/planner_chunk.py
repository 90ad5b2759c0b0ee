"""#54: a GPU run's graph planner on the host (graph_plan.Planner.chunk: every per-step
scalar of CHUNK steps; no GPU needed), for INPUT (default benchmarks/archive/large3.toml,
N = 8192, 3-point, no field) at CHUNK steps a chunk: ms a chunk and us a step, medians of 7
rounds of 20 chunks.

    python benchmarks/archive/planner_chunk.py [CHUNK [INPUT]]
"""
import sys, time
import numpy as np
import tdse
from tdse.numerics import graph_plan
from tdse.numerics.stepper import BatchStepper

C = int(sys.argv[1]) if len(sys.argv) > 1 else 64
path = sys.argv[2] if len(sys.argv) > 2 else "benchmarks/archive/large3.toml"
graph_plan.CHUNK = C
st = BatchStepper([tdse.load_config(path)], np)
p = graph_plan.Planner(st)
p.chunk(0)
ts = []
for j in range(7):
    t0 = time.perf_counter()
    for i in range(20):
        p.chunk(C * (i + 1 + 20 * j))
    ts.append((time.perf_counter() - t0) / 20)
print(f"CHUNK = {C}: {np.median(ts) * 1e3:.3f} ms a chunk, {np.median(ts) / C * 1e6:.2f} us a step")
