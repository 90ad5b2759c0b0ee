"""#59 item 3 / #54: bare graph steps of large3 (N = 8192, 3-point): host seconds to queue S steps
seconds for them (events), and the device's time per step with the host far ahead
(a pre-queued burst)."""
import time, sys, numpy as np, cupy as cp, tdse
cfg = tdse.load_config("benchmarks/archive/large3.toml").with_value("propagator.time_error", "none")
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
st = plan.stepper()
X = cp.asarray(plan.psi0)
X = st.advance(X, 0, 200)
cp.cuda.Device().synchronize()
for S in (2000, 8000):
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    t0 = time.perf_counter(); e0.record()
    X = st.advance(X, 200, 200 + S)
    host = time.perf_counter() - t0
    e1.record(); e1.synchronize()
    wall = time.perf_counter() - t0
    dev = cp.cuda.get_elapsed_time(e0, e1) * 1e-3
    print(f"S={S}: host queue {host/S*1e6:.1f} us/step, wall {wall/S*1e6:.1f}, device {dev/S*1e6:.1f} us/step")
# the device alone: one graph replayed (no host work between)
g = st.propagator.graph
pat = next(k for k in g.graphs if k[1] == 1)     # (pattern, steps): a one-step graph
gr = g.graphs[pat]
cp.cuda.Device().synchronize()
e0, e1 = cp.cuda.Event(), cp.cuda.Event()
e0.record()
for _ in range(500):
    gr.launch()
e1.record(); e1.synchronize()
print(f"one graph replayed 500x: {cp.cuda.get_elapsed_time(e0, e1) / 500 * 1e3:.1f} us a launch (device), nodes {g.nodes_per_step}")
