"""A GPU run's observation rows are handed to the writer one write behind its snapshots
(Observables.hand_over: defer on a GPU), so a file cut by a hard crash (SIGKILL, power)
lacks the rows between its last observation and its last whole snapshot, which a resumed
run -- continuing from that snapshot -- never measures.  Shown on the CPU: the same
hand-over (Observables.gpu forced True; HostCopy passes host arrays through), the run cut
at step 1500 as a hard crash would (no fail handlers, no close).  A resumption now starts
from the last snapshot the rows reach (tdse.run.snapshots.resumable_count), except where
resume arrays (the companion's psi, operator mode's U) tie it to the last one; handing
every row over at each write (flush without defer) would close the gap at its source, at a
wait for the device each write -- unmeasured on a GPU.

    python benchmarks/archive/resume_gap.py cpu|gpu
"""
import os
import sys
import tempfile

import h5py
import tdse
from tdse.run import observers, snapshots
from tdse.run.driver import run
gpu = sys.argv[1] == "gpu"
cfg = tdse.load_config("inputs/h2plus_moving.toml").with_value("propagator.time_error", "none") \
    .with_value("time.t_end", 40.0).with_value("output.flush_seconds", 0.05).with_value("output.every", 20)
init = observers.Observables.__init__
def patched(self, *a, **k):
    init(self, *a, **k)
    self.gpu = gpu
observers.Observables.__init__ = patched
observers.Observables.fail = lambda self, state, error: None      # a hard crash runs no handler
observers.Snapshots.fail = lambda self, state, error: None
def crash_close(self, complete):
    self._wait(); self.f.close(); self.f = None
snapshots.SnapshotWriter.close = crash_close
class Kill(Exception):
    pass
orig_after = observers.Progress.after
def after(self, state):
    if state.step == 1500:
        raise Kill()
    orig_after(self, state)
observers.Progress.after = after
d = tempfile.mkdtemp()
try:
    run(cfg, d, backend="numpy")
except Kill:
    pass
part = os.path.join(d, f"{cfg.name}.h5.part")
with h5py.File(part, "r") as f:
    count = int(f.attrs["snapshots_complete"]); last = int(f["snapshots/step"][count - 1])
    rows = f["observables/step"][:int(f.attrs["observables_complete"])]
missing = sorted(set(range(0, last + 1)) - set(rows.tolist()))
print(f"gpu={gpu}: {count} whole snapshots, the last at step {last}; observation rows through step "
      f"{int(rows.max())}; rows missing up to the last snapshot: {len(missing)} (steps {missing[:1]}..{missing[-1:]})")
