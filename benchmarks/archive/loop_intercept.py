"""#54: the GPU run-overhead row's loop has a fixed cost a 1-step run does not pay (one
H200, N = 8192, 3-point: loop 1.08 s at 20000 steps and 1.51 s at 40000 -- a slope of 1.10
bare steps, an intercept of ~0.6 s): where it goes.  One run of INPUT (method auto, no
time error, populations every EVERY) in this process through tdse.simulate, each call of the
loop's parts timed (the graph captures, the planner's chunks, the saves, the look-ahead),
their sums and their longest calls with when they began (seconds after the loop's start).

    python benchmarks/archive/loop_intercept.py INPUT STEPS EVERY
"""
import collections, glob, json, sys, tempfile, time
import h5py
import tdse
import tdse.run.driver
from tdse.numerics import graphs, graph_plan
from tdse.run import eigenpairs, loop, rows, sinks

CALLS = collections.defaultdict(list)      # label -> [(start, seconds)]


def wrap(obj, name, label):
    f = getattr(obj, name)

    def w(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            CALLS[label].append((t0, time.perf_counter() - t0))
    setattr(obj, name, w)


for obj, name in ((loop, "advance"), (graphs.GraphStep, "_capture"), (graphs.GraphStep, "_warm"),
                  (graphs.GraphStep, "_plan"), (graph_plan.Planner, "chunk"),
                  (sinks.Snapshots, "save"), (rows.Observables, "save"),
                  (eigenpairs.Lookahead, "__call__"), (graphs.GraphStep, "_upload"),
                  (graphs.GraphStep, "_rows"), (loop, "_settle"), (tdse.run.driver, "evolve"),
                  (sinks.Snapshots, "begin"), (sinks.Snapshots, "end"), (rows.Observables, "begin"),
                  (rows.Observables, "end"), (sinks.Progress, "begin"), (sinks.Progress, "end")):
    wrap(obj, name, f"{getattr(obj, '__name__', '')}.{name}")
path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
d = tempfile.mkdtemp()
t0 = time.perf_counter()
T0 = time.time()
tdse.simulate(cfg, backend="cupy", out=d, force=True)
wall = time.perf_counter() - t0
with h5py.File(glob.glob(d + "/*.h5")[0]) as f:
    tl = json.loads(f.attrs["timeline"])
loop_s = tl["loop_end"] - tl["loop"]
start = min(s for s, _ in CALLS["tdse.run.loop.advance"])
print(f"# {path} {steps} steps, populations every {every}: wall {wall:.2f} s, loop {loop_s:.3f} s")
print(f"loop clock (from the first advance): {tl['loop'] - T0 + t0 - start:+.3f} .. {tl['loop_end'] - T0 + t0 - start:+.3f} s")
for k, v in sorted(CALLS.items(), key=lambda kv: -sum(x[1] for x in kv[1])):
    top = sorted(v, key=lambda x: -x[1])[:4]
    print(f"{k:32s} {sum(x[1] for x in v):7.3f} s {len(v):6d} calls; longest: "
          + ", ".join(f"{s * 1e3:.1f} ms at {b - start:+.3f} s" for b, s in top))
