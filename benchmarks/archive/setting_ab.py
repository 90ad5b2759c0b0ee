"""#54: a GPU run's loop under one setting's values, alternating in one process on one plan
(the machine's process-to-process spread, +-0.4 s a loop, kept out): INPUT with method
auto, no time error, STEPS steps, populations every EVERY, written to a file as a run is
(tdse.run.driver.run); each run's loop seconds (the file's timeline) and the loop thread's
CPU seconds (time.thread_time: its host work, waits excluded), and the close (the file's
"close" mark to run()'s return).  The look-ahead's processes are opened once for all the
runs (tdse.run.driver.look_ahead).  SETTING is one of plan_ahead (graph_plan.PLAN_AHEAD:
1/0), chunk (graph_plan.CHUNK: the steps planned at once), switch (sys.setswitchinterval,
ms), multi (graphs.MULTI_STEPS), block (snapshots.BLOCK_BYTES, MiB), lazy (1: H(t)'s
pairs of tapped rows asked at the block's measure, as rows.py has them since 2026-11-30;
0: the code before, re-created here -- a row's pairs asked when tapped, and a save point
at a populations row whose pairs the look-ahead has not yet computed).

    python benchmarks/archive/setting_ab.py INPUT STEPS EVERY ROUNDS SETTING V1 V2 [...]
"""
import glob, json, sys, tempfile, time
import h5py
import numpy as np
import tdse
from tdse.numerics import graph_plan, graphs
from tdse.run import rows, snapshots
from tdse.run.driver import look_ahead, run
from tdse.run.loop import Sink

path, steps, every, rounds, setting = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
values = [float(v) for v in sys.argv[6:]]


def apply(v):
    if setting == "plan_ahead":
        graph_plan.PLAN_AHEAD = bool(v)
    elif setting == "chunk":
        for m in (graph_plan, graphs):
            m.CHUNK, m.HEAD = int(v), 2 + graph_plan.TAPS * int(v)
    elif setting == "switch":
        sys.setswitchinterval(v / 1000)
    elif setting == "multi":
        graphs.MULTI_STEPS = int(v)
    elif setting == "block":
        snapshots.BLOCK_BYTES = int(v * (1 << 20))
    elif setting == "lazy":
        for name in ("next_point", "tap"):
            setattr(rows.Observables, name, NEW[name] if v else globals()[f"eager_{name}"])
    else:
        raise SystemExit(f"unknown setting {setting}")


NEW = {"next_point": rows.Observables.next_point, "tap": rows.Observables.tap}


def computed(pairs, step):
    """Whether the look-ahead computed ``step``'s pairs (its Lookahead.computed, gone with
    the eager path)."""
    if pairs.pool is None or pairs.broken:
        return False
    for f, group, _ in pairs.tasks.values():
        if step in group:
            return f.done() and not f.cancelled() and f.exception() is None
    return False


def eager_next_point(self, step, stop):
    p = Sink.next_point(self, step, stop)
    if p is None or not self.tapping:
        return p
    e, pe = self.every, self._pop_every
    host = min(self.last, p + (self.rows.M - self.rows.cols - 1) * e)
    if self.moving:
        q = -(-p // pe) * pe
        while q < host and self.pairs is not None and computed(self.pairs, q):
            q += pe
        host = min(host, q)
    return host if host <= stop else None


def eager_tap(self, j0, j1, saved):
    if not self.tapping:
        return None
    e, dt, rw = self.every, self.config.time.dt, self.rows
    ks = range((j0 // e + 1) * e, (j1 - 1 if saved else j1) + 1, e)
    slots = []
    for k in ks:
        if self._pops_at(k):
            slots.append(rw.reserve(k, k * dt, self.pairs(k, k * dt) if self.pairs is not None
                                    else self._tapped_pairs(k)))
        else:
            slots += rw.reserve_plain([k], dt)
    return {k: [row] for k, row in zip(ks, slots)}


cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
out = {v: [] for v in values}
d = tempfile.mkdtemp()
with look_ahead(cfg, "cupy") as workers:
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False, allow_inaccurate=True)
    for r in range(rounds + 1):                  # (round 0: warm-up, not kept)
        for v in values:
            apply(v)
            c0 = time.thread_time()
            run(plan, d, force=True, workers=workers)
            cpu, back = time.thread_time() - c0, time.time()
            with h5py.File(glob.glob(d + "/*.h5")[0]) as f:
                tl = json.loads(f.attrs["timeline"])
            if r:
                out[v].append((tl["loop_end"] - tl["loop"], cpu, back - tl["close"]))
print(f"# {path}, {steps} steps, populations every {every}; {setting}: us a step, loop "
      f"(its thread's CPU) [the close, ms]")
for v in values:
    runs = "  ".join(f"{a / steps * 1e6:.1f} ({c / steps * 1e6:.1f}) [{z * 1e3:.0f}]" for a, c, z in out[v])
    med = np.median([a for a, _, _ in out[v]]) / steps * 1e6
    print(f"{setting} = {v:g}: median {med:.1f}; runs {runs}")
