"""#56: the laser drive's estimate on the host (benchmarks/drives.py "laser", seed 56's
draw: the DVR, N = 320, 500 steps, a snapshot every 10) by the width of its pieces -- ended
at each snapshot (the DVR's kind before LocalError.columns_apart held for it) or spanning
them, pieces of at most S steps (adaptive.PIECE_STEPS, local_error.DVR_BLOCK_STEPS set to S)
-- the run's wall and the estimate's own seconds (time_error["estimate_seconds"]),
alternating, min and median of 7.  Usage: python benchmarks/archive/dvr_pieces.py S [S ...]"""
import dataclasses
import sys

import numpy as np

import tdse
import tdse.numerics.adaptive as ad
from benchmarks import drives
from tdse.numerics import local_error as le

rng = np.random.default_rng(56)
for k in ("abrupt", "ramped"):
    drives.make(k, rng)
cfg = drives.make("laser", rng)


def kind(te):
    return dataclasses.replace(cfg, propagator=dataclasses.replace(cfg.propagator, time_error=te))


apart = le.LocalError.columns_apart
variants = [("at snapshots", 10, False)] + [(f"spanning, {s}", s, True) for s in map(int, sys.argv[1:])]
res, none = {k: [] for k, _, _ in variants}, []
for _ in range(7):
    none.append(tdse.simulate(kind("none")).seconds)
    for name, s, span in variants:
        ad.PIECE_STEPS = le.DVR_BLOCK_STEPS = s
        le.LocalError.columns_apart = apart if span else property(lambda self: False)
        r = tdse.simulate(kind("estimate"))
        res[name].append((r.seconds, r.time_error["estimate_seconds"]))
print(f"without the estimate: wall min {min(none):.3f} median {np.median(none):.3f} s")
for k, v in res.items():
    a = np.array(v)
    print(f"pieces {k}: wall min {a[:, 0].min():.3f} median {np.median(a[:, 0]):.3f} s; "
          f"estimate's own min {a[:, 1].min() * 1e3:.1f} median {np.median(a[:, 1]) * 1e3:.1f} ms")
