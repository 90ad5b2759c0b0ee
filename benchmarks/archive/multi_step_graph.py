"""#54 / #59 probe: a bare loop of one run's graph steps launched one graph a step (GraphStep.advance,
as a run) against S steps in one graph (S copies of the step's body captured together; each
still fetches its own row from the chunk's segment by the device counter), on INPUT (default
archive/large3.toml: N = 8192, 3-point, Chebyshev).  psi after the steps must be the same bits.

    python benchmarks/archive/multi_step_graph.py [INPUT] [STEPS]
"""
import sys, time
import cupy as cp
import tdse
from tdse.numerics import graphs
from tdse.numerics.graph_plan import CHUNK

path = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/archive/large3.toml"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
cfg = tdse.load_config(path)
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False, allow_inaccurate=True)
st = plan.stepper()
psi0 = cp.asarray(plan.psi0)
st.advance(psi0, 0, 200)                     # the graphs made, kernels compiled
gs = st.propagator.graph
multi = {}


def multi_advance(X, j0, j1, S):
    """GraphStep.advance's loop with S equal-pattern steps a launch (no taps)."""
    j = j0
    graphs.copy_in(cp, gs.Xin, X)
    while j < j1:
        assert gs._ready(j)
        c0, patterns = gs._chunk[0], gs._chunk[1]
        e = min(j1, c0 + CHUNK)
        slots, _ = gs._slots(None, j, e)
        gs._upload(j - c0, e - c0, slots)
        i = j - c0
        while i < e - c0:
            p = patterns[i]
            if S > 1 and i + S <= e - c0 and all(patterns[i + s] == p for s in range(S)):
                g = multi.get((p, S))
                if g is None:
                    g = multi[(p, S)] = graphs.capture(cp, lambda: [gs._step_body(p) for _ in range(S)])
                g.launch()
                i += S
            else:
                (gs.graphs.get(p) or gs._first(p)).launch()
                i += 1
        j = e
    return graphs.copy_out(cp, gs.Xin, X.shape)


def timed(f):
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    out = f()
    cp.cuda.Device().synchronize()
    return out, time.perf_counter() - t0


ref, _ = timed(lambda: st.advance(psi0, 0, steps))
for S in (4, 16):
    got, _ = timed(lambda: multi_advance(psi0, 0, steps, S))      # (its graphs captured here)
    print(f"S = {S}: psi the same bits as a graph a step: {bool(cp.array_equal(got, ref))}, "
          f"max diff {float(cp.abs(got - ref).max()):.1e}")
print(f"# {path}, N = {cfg.grid.n}, {steps} steps; us a step (3 rounds, alternating)")
for rnd in range(3):
    row = []
    for S in (1, 4, 16):
        f = (lambda: st.advance(psi0, 0, steps)) if S == 1 else (lambda: multi_advance(psi0, 0, steps, S))
        _, t = timed(f)
        row.append(f"S={S}: {t / steps * 1e6:6.1f}")
    print("  ".join(row))
