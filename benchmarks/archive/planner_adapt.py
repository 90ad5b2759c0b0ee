"""#56: the GPU graph planner's host work along the adaptive laser run (no GPU needed): the
time-error suite's laser drive (seed 56, dt = 1), one graph step's planner a step size
dt / n (as adaptive.EstimatingStepper._stepper(n) makes them; its own spectral bounds,
Stepper.bounds_many, as propagators.Graphs passes them), asked for each dt's n steps in the
order the run asks (the n of each dt as the CPU run at 1e-6 and 1e-8 takes them: the same
controller).  GraphStep._plan as it is ("new": chunks sized by the steps asked, planned
ahead only once a chunk goes on from the last) against the policy before it ("old": CHUNK
steps a chunk and PLAN_DEPTH chunks ahead of each), on this host's planning thread: the
steps planned, the seconds the caller stood in _plan, and the planner's seconds in both
threads (its chunks timed).

    python benchmarks/archive/planner_adapt.py
"""
import collections, tempfile, time
import numpy as np
import tdse
from benchmarks import drives
from tdse.config import with_values
from tdse.numerics import adaptive, graph_plan, graphs as G
from tdse.numerics.adaptive import _at_step
from tdse.numerics.stepper import Stepper

base = with_values(drives.make("laser", np.random.default_rng(56)), [("time.dt", 1.0), ("output.every", 5)])


def sequence(tol):
    ns, real = [], adaptive.EstimatingStepper.step

    def step(self, psi, j):
        out = real(self, psi, j)
        ns.append(self.n)
        return out
    adaptive.EstimatingStepper.step = step
    try:
        tdse.simulate(with_values(base, [("time.tolerance", tol)]), backend="numpy", out=tempfile.mkdtemp(), force=True)
    finally:
        adaptive.EstimatingStepper.step = real
    return ns


class Timed:
    def __init__(self, p):
        self.p, self.seconds, self.steps = p, 0.0, 0

    def chunk(self, j, m=None):
        t0 = time.perf_counter()
        out = self.p.chunk(j, m)
        self.seconds += time.perf_counter() - t0
        self.steps += graph_plan.CHUNK if m is None else m
        return out


def old_plan(g, j, want):            # the policy before: CHUNK a chunk, PLAN_DEPTH ahead of each
    ahead = g._ahead
    if ahead and ahead[0][0] == j:
        ch = ahead.popleft()[2].result()
    else:
        for _, _, f in ahead:
            f.cancel() or f.result()
        ahead.clear()
        ch = g.planner.chunk(j, graph_plan.CHUNK)
    nxt = (ahead[-1][0] if ahead else j) + graph_plan.CHUNK
    while len(ahead) < G.PLAN_DEPTH:
        ahead.append((nxt, graph_plan.CHUNK, graph_plan.planning_thread().submit(g.planner.chunk, nxt, graph_plan.CHUNK)))
        nxt += graph_plan.CHUNK
    return ch


def run(ns, policy):
    steps, stood = {}, 0.0
    for j, n in enumerate(ns):
        if n not in steps:
            st = Stepper(_at_step(base, 1.0 / n), None, np)
            g = object.__new__(G.GraphStep)
            g.planner, g._ahead, g._end, g._size, g._chunk = Timed(graph_plan.Planner(st.as_batch(), st.bounds_many)), collections.deque(), None, 0, None
            steps[n] = g
        g = steps[n]
        k, k1 = j * n, j * n + n
        while k < k1:                 # GraphStep.advance's _ready
            ch = g._chunk
            if ch is None or not ch[0] <= k < ch[0] + len(ch[1]):
                t0 = time.perf_counter()
                ch = g._chunk = (policy(g, k, k1 - k) if policy else g._plan(k, k1 - k))
                stood += time.perf_counter() - t0
            k = min(k1, ch[0] + len(ch[1]))
    for g in steps.values():
        for _, _, f in g._ahead:
            f.result()
    return (sum(g.planner.steps for g in steps.values()), stood, sum(g.planner.seconds for g in steps.values()))


print("# benchmarks/archive/planner_adapt.py; CHUNK", graph_plan.CHUNK, "PLAN_DEPTH", G.PLAN_DEPTH, "PLAN_FIRST", G.PLAN_FIRST)
for tol in (1e-6, 1e-8):
    ns = sequence(tol)
    print(f"tolerance {tol:g}: {len(ns)} dts, {sum(ns)} steps, n = {ns}")
    for name, policy in (("old", old_plan), ("new", None), ("old", old_plan), ("new", None)):
        planned, stood, busy = run(ns, policy)
        print(f"  {name}: {planned} steps planned, the caller in _plan {stood * 1e3:.1f} ms, the planner {busy * 1e3:.1f} ms")
