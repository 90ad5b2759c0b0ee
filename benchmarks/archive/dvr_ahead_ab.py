"""#54 / #59 item 5, the DVR row on 2 CPUs: the same in-process run (h2plus_moving molecule on the
DVR at N, Chebyshev, observables every step) with populations only at the ends ("none"), every PE
steps with H(t)'s pairs in the look-ahead's worker ("ahead") and in the loop ("in loop",
run.eigen_workers = "off"), alternating, 6 each; the look-ahead's own time in the loop
(eigenpairs_wait_seconds: all of Lookahead.__call__) and the pairs' seconds.

    PYTHONPATH=. python benchmarks/archive/dvr_ahead_ab.py N PE STEPS [STENCIL]
"""
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]
warnings.simplefilter("ignore")
import tdse  # noqa: E402
from run_profile import case_config  # noqa: E402  (the probes' case)

N, pe, steps = sys.argv[1:4]
st = sys.argv[4] if len(sys.argv) > 4 else "dvr"
cfg = case_config(os.path.join(os.path.dirname(os.path.dirname(HERE)), "inputs", "h2plus_moving.toml"),
                  N, st, steps, 0)
out = {}
cases = (("none", int(steps), {}), ("ahead", int(pe), {}), ("in loop", int(pe), {"eigen_workers": "off"}))
for rep in range(6):
    for label, p, opts in cases:
        r = tdse.simulate(cfg.with_value("output.populations_every", p), backend="numpy", options=opts)
        out.setdefault(label, []).append((r.seconds, r.attrs.get("eigenpairs_wait_seconds", 0),
                                          r.attrs.get("eigenpairs_seconds", 0)))
print(f"N={N} {st} pe={pe} steps={steps}", open("/proc/loadavg").read().strip())
m0 = np.median([x[0] for x in out["none"]])
for k, v in out.items():
    m = np.median([x[0] for x in v])
    print(f"  {k:8s} median {m:.3f} s (x{m/m0:.2f})", [round(x[0], 2) for x in v],
          "waits", [round(x[1], 2) for x in v], "pairs s", [round(x[2], 2) for x in v])
