"""#54: what a snapshot's row costs the host where a GPU run writes its snapshots (no GPU
needed: the Snapshots sink and a background SnapshotWriter on NumPy rows): INPUT's grid
(default benchmarks/archive/large3.toml, N = 8192: 128 KiB a row), rings of 32 rows
finished through Snapshots.finish as a ring's copy is after its event (each row's
_write_pending -> SnapshotWriter.append), in two cases: reused (one writer, blocks of
snapshots.BLOCK_BYTES written in its thread) and a new writer a ring (its first block
written at its first snapshot, its block arrays fresh).  Prints us a row, medians of 20
rings.

    python benchmarks/archive/append_cost.py [INPUT]
"""
import os, sys, tempfile, time
import numpy as np
import tdse
from tdse.run import sinks as S
from tdse.run.driver import _open_writer

path = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/archive/large3.toml"
cfg = tdse.load_config(path).with_value("run.io_thread", "on").with_value("time.t_end", 2.0)
plan = tdse.prepare(cfg, backend="numpy", check_resolution=False, allow_inaccurate=True)
d = tempfile.mkdtemp()
n = cfg.grid.n
ring = np.random.default_rng(5).standard_normal((32, n)) + 1j


class Done:                      # a ring's copy whose event has run
    def __init__(self, a):
        self.a = a

    def done(self):
        return True

    def result(self):
        return {"psi": self.a}


def rings(fresh, count=20):
    out, step, snap, w = [], 0, None, None
    for r in range(count + 3):
        if fresh or snap is None:
            if w is not None:
                w.close(True)
            w = _open_writer(plan, os.path.join(d, f"a{r}.h5.part"), {}, None)
            snap = S.Snapshots(plan, w)
        for i in range(32):
            step += 25
            snap.pending.append((step, step * 0.002, S._RingRow(Done(ring), i), ({}, {}, {})))
        t0 = time.perf_counter()
        snap.finish()
        if r >= 3:
            out.append((time.perf_counter() - t0) / 32)
    w.close(True)
    return np.median(out) * 1e6, np.max(out) * 1e6


for fresh in (False, True) * 2:
    med, worst = rings(fresh)
    print(f"N = {n}: {'a new writer a ring' if fresh else 'one writer'}: {med:.1f} us a row (median ring), worst ring {worst:.1f}")
