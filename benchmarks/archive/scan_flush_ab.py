"""#59 item 1: a GPU scan's observables blocks finished on a thread while the steps go on
(tdse.studies.scan._Recorder.flush, the copy by HostCopy) against the copy and finish on
the loop's thread as before (``old``, below): atom_hhg, B members, STEPS steps, one batch,
tdse.scan in one process alternating (one scan first, untraced, for the compiles); the
batch's loop seconds and the wall, and whether the observables are the same bits.
Usage: PYTHONPATH=. python scan_flush_ab.py B STEPS [REPEAT]"""
import sys
import time

import numpy as np

import tdse
from tdse.config import with_values
from tdse.model.observables import stack_rows
from tdse.studies import scan as scan_mod

B, steps = int(sys.argv[1]), int(sys.argv[2])
repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 3
cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("propagator.time_error", "none")
cfg = with_values(cfg, [("time.t_end", steps * cfg.time.dt)])
sets = {"field.E0": list(np.linspace(0.03, 0.09, B))}
new = scan_mod._Recorder.flush


def old(self):
    """The flush before: the rows stacked, copied (a .get() waiting for the stream) and
    finished on the loop's thread."""
    if not self._pending:
        return
    ts = [t for t, _ in self._pending]
    rows = [r for _, r in self._pending]
    cols = self.measure.finish(ts, stack_rows(rows, self.measure.xp))
    self._blocks.append(cols)
    self._pending = []


tdse.scan(cfg, sets, backend="cupy", batch=B)
res, got = {"new": [], "old": []}, {}
for _ in range(repeat):
    for name, fn in (("new", new), ("old", old)):
        scan_mod._Recorder.flush = fn
        t = time.perf_counter()
        r = tdse.scan(cfg, sets, backend="cupy", batch=B)
        res[name].append((r["batch_seconds"][0], time.perf_counter() - t))
        got[name] = {k: np.asarray(r[k]) for k in ("acceleration", "energy", "norm", "populations_h0")}
        print(f"B={B} steps={steps} {name}: loop {res[name][-1][0]:.3f} s, wall {res[name][-1][1]:.3f} s", flush=True)
same = all(np.array_equal(got["new"][k], got["old"][k]) for k in got["new"])
print(f"observables bit for bit the same: {same}")
for name, v in res.items():
    print(f"{name}: loop median {np.median([a for a, _ in v]):.3f} s, wall median {np.median([b for _, b in v]):.3f} s")
