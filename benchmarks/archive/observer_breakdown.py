"""Where a run's host time goes besides its steps (#23 item 3), in process: `run()` of a
prepared plan (its observers as `tdse run` has them), once to warm, then timed with each
observer's methods and the pieces behind them (H(t)'s eigenpairs, the block rows' record /
measure / finish, the snapshot writes) wrapped in host-clock timers.  On a GPU the clock is
the host's (what a host-bound loop spends), not the device's.  Prints one line a piece:
seconds, microseconds a step, calls.
python benchmarks/archive/observer_breakdown.py INPUT N STENCIL STEPS POP_EVERY BACKEND"""
import collections
import sys
import tempfile
import time
import warnings

from run_profile import case      # the probes' case (this folder is on sys.path)

from tdse.run import observers as O
from tdse.run import snapshots as SN
from tdse.run.driver import run

acc, cnt = collections.defaultdict(float), collections.Counter()


def timed(cls, name):
    f = getattr(cls, name)

    def w(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            acc[f"{cls.__name__}.{name}"] += time.perf_counter() - t0
            cnt[f"{cls.__name__}.{name}"] += 1
    setattr(cls, name, w)


PIECES = ((O.Observables, ("after", "eigenpairs", "flush")),
          (O._BlockRows, ("record", "_measure", "start", "finish")),
          (O.Snapshots, ("after", "_write")), (O.Progress, ("after",)),
          (SN.SnapshotWriter, ("write",)))
for cls, names in PIECES:
    for name in names:
        timed(cls, name)
warnings.simplefilter("ignore")
cfg, plan = case(*sys.argv[1:7])
d = tempfile.mkdtemp()
run(plan, d, force=True)                               # warm (kernels, graphs, the worker)
acc.clear()
cnt.clear()
t0 = time.perf_counter()
res = run(plan, d, force=True)
wall = time.perf_counter() - t0
S = cfg.time.steps
print(f"{cfg.grid.n} {cfg.grid.stencil} {sys.argv[6]} pops every {cfg.output.populations_interval}: "
      f"run() {wall:.3f} s, {S} steps, {wall / S * 1e6:.0f} us a step")
for k, v in sorted(acc.items(), key=lambda kv: -kv[1]):
    print(f"  {k:28s} {v:8.3f} s {v / S * 1e6:8.1f} us/step {cnt[k]:7d} calls")
