"""#56: the GPU estimate's block of the suite's laser drive (a piece of 256 steps): host time
of its first piece with its graph's capture against the same products launched eagerly
(to done), and of its 4 later pieces (host, the graph launched or eager again); per fresh
LocalError (a run's), ROUNDS times.

    python benchmarks/archive/block_eager.py [ROUNDS]
"""
import sys
import time

import cupy as cp
import numpy as np

from benchmarks import drives
from tdse.numerics.local_error import LocalError

import tdse  # noqa: E402

rng = np.random.default_rng(56)
cases = {k: drives.make(k, rng) for k in drives.KINDS}
cases["atom_hhg"] = tdse.load_config("inputs/atom_hhg.toml")


class Eager:
    """Stands in for the captured graph: each launch makes the products eagerly."""

    def __init__(self, local, g):
        self.local, self.g = local, g

    def launch(self):
        self.local._body(self.g)


rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
for name, cfg in cases.items():
  n, dt = cfg.grid.n, cfg.time.dt
  S = LocalError(cfg, cp).chunk_steps
  U = cp.asarray(rng.standard_normal((S, n)) + 1j * rng.standard_normal((S, n)))
  print(f"== {name}: N = {n}, stencil {cfg.grid.stencil}, pieces of {S}", flush=True)
  for r in range(rounds + 1):
      out = {}
      for mode in ("graph", "eager"):
          local = LocalError(cfg, cp)
          if mode == "eager":
              local._capture = lambda g, local=local: Eager(local, g)
          cp.cuda.Device().synchronize()
          t = time.perf_counter()
          L = local.block(U, 0, dt)
          t1 = time.perf_counter()
          cp.cuda.Device().synchronize()
          t2 = time.perf_counter()
          t3 = time.perf_counter()
          for k in range(1, 5):             # later pieces: the graph launched, or eager again
              local.block(U, k * S, dt)
          t4 = time.perf_counter()
          cp.cuda.Device().synchronize()
          out[mode] = ((t1 - t) * 1e3, (t2 - t) * 1e3, L, (t4 - t3) / 4 * 1e3)
      same = bool(cp.array_equal(out["graph"][2], out["eager"][2]))
      if r:
          print(" ".join(f"{m}: first host {h:.2f} ms, done {d:.2f} ms, later {later:.2f} ms a piece;"
                         for m, (h, d, _, later) in out.items()),
                "bits equal" if same else f"max diff {float(cp.abs(out['graph'][2] - out['eager'][2]).max()):.2e}",
                flush=True)
