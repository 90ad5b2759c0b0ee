"""The CPU scan's sinc-DVR Chebyshev term in the folded basis (hamiltonian.FoldedBlockOperator)
against BlockOperator's (which folds and unfolds its block in every term): one term
(N = 500, 16 members, atom_hhg's grid) and the 16-member atom_hhg batch of
`python -m benchmarks scan --members 16 --t-end 110.3` (tdse.studies.scan.run_batch), the
two alternated in one process.

    python benchmarks/archive/folded_term.py [--reps 5]
"""
import argparse
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tdse import config as cfgmod  # noqa: E402
from tdse.model import hamiltonian as H  # noqa: E402
from tdse.studies import scan as S  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--reps", type=int, default=5)
a = p.parse_args()
INPUT = os.path.join(os.path.dirname(__file__), "..", "..", "inputs", "atom_hhg.toml")
cfg = cfgmod.load(INPUT).with_value("propagator.time_error", "none").with_value(
    "propagator.method", "chebyshev").with_value("time.t_end", 110.3)
g, n, B = cfg.grid, cfg.grid.n, 16
rng = np.random.default_rng(1)
V = rng.standard_normal((n, B))
X = np.ascontiguousarray(rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)))
P = np.ascontiguousarray(rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)))
Y = np.ascontiguousarray(rng.standard_normal((n, B)) + 1j * rng.standard_normal((n, B)))
plain_op = H.BlockOperator(g, 1.0, V, np, alpha=0.01, shift=0.3)
folded_op = H.FoldedBlockOperator(g, 1.0, V, alpha=0.01, shift=0.3)
Xf, Pf, Yf = folded_op.into(X), folded_op.into(P), folded_op.into(Y)
per = lambda f: min(timeit.repeat(f, number=500, repeat=5)) / 500 * 1e6  # noqa: E731
Pc, Yc = P.copy(), Y.copy()
print(f"one term, N = {n}, {B} members: BlockOperator.recur {per(lambda: plain_op.recur(X, Pc, Yc, 0.3j)):.1f} us, "
      f"FoldedBlockOperator.recur {per(lambda: folded_op.recur(Xf, Pf, Yf, 0.3j)):.1f} us")
print(f"  operator set-up: BlockOperator {per(lambda: H.BlockOperator(g, 0.5, V, np, 0.01, 0.3)):.1f} us, "
      f"folded {per(lambda: H.FoldedBlockOperator(g, 0.5, V, 0.01, 0.3)):.1f} us")

cs = [cfg.with_value("field.E0", float(e)) for e in np.linspace(0.02, 0.08, B)]
folded = H.block_operator
plain = lambda g, s, V, xp=np, alpha=1.0, shift=0.0: H.BlockOperator(g, s, V, xp, alpha, shift)  # noqa: E731
S.run_batch(cs)
res = {"folded": [], "BlockOperator": []}
for _ in range(a.reps):
    for name, f in (("folded", folded), ("BlockOperator", plain)):
        H.block_operator = f
        res[name].append(S.run_batch(cs)["seconds"])
H.block_operator = folded
for name, v in res.items():
    print(f"16-member batch, {name}: " + " ".join(f"{s:.2f}" for s in v) + f" s (median {np.median(v):.2f})")
