"""#54: where in a GPU run's loop the look-ahead's wait for H(t)'s pairs falls -- the
first windows (the workers' start transient) or throughout: INPUT with method auto, no
time error, STEPS steps, populations every EVERY, through tdse.simulate (a file written),
each Lookahead call's wait logged with whether the loop computed it itself.

    python benchmarks/archive/lookahead_timeline.py INPUT STEPS EVERY [REPEAT]
"""
import sys, tempfile, time, json, glob
import h5py
import tdse
from tdse.run import eigenpairs

LOG = []
call = eigenpairs.Lookahead.__call__


def logged(self, step, t):
    solved = self.tracker.solved
    t0 = time.perf_counter()
    out = call(self, step, t)
    LOG.append((step, time.perf_counter() - t0, self.tracker.solved > solved))
    return out


eigenpairs.Lookahead.__call__ = logged
path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
for rep in range(int(sys.argv[4]) if len(sys.argv) > 4 else 2):
    LOG.clear()
    d = tempfile.mkdtemp()
    t0 = time.perf_counter()
    tdse.simulate(cfg, backend="cupy", out=d, force=True)
    wall = time.perf_counter() - t0
    with h5py.File(glob.glob(d + "/*.h5")[0]) as f:
        tl = json.loads(f.attrs["timeline"])
    loop = tl["loop_end"] - tl["loop"]
    cut = steps // 5
    early = [w for s, w, _ in LOG if s < cut]
    late = [w for s, w, _ in LOG if s >= cut]
    own = [s for s, _, o in LOG if o]
    print(f"{path} {steps} steps, populations every {every}: wall {wall:.2f} s, loop {loop:.3f} s "
          f"({loop / steps * 1e6:.1f} us/step); wait {sum(early) + sum(late):.3f} s: first fifth "
          f"{sum(early):.3f} s ({len(early)} calls), rest {sum(late):.3f} s ({len(late)} calls); "
          f"computed by the loop: {len(own)} calls (steps {own[:6]}{' ...' if len(own) > 6 else ''}, "
          f"last {own[-1] if own else None})", flush=True)
