"""A GPU scan's batch loop in two trees of the code, alternating, each in a process of its
own (one scan first for the compiles, then REPEAT timed): atom_hhg, B members, STEPS
steps, one batch; the batch's loop seconds and the largest difference of the members'
final acceleration and <p> between the trees, relative to their largest.
Usage: python scan_tree_ab.py B STEPS TREE_A TREE_B [REPEAT]"""
import json
import os
import subprocess
import sys

import numpy as np

B, steps, trees = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:5]
repeat = int(sys.argv[5]) if len(sys.argv) > 5 else 2
CHILD = r"""
import json, sys, numpy as np, tdse
from tdse.config import with_values
B, steps, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("propagator.time_error", "none")
cfg = with_values(cfg, [("time.t_end", steps * cfg.time.dt)])
sets = {"field.E0": list(np.linspace(0.03, 0.09, B))}
tdse.scan(cfg, sets, backend="cupy", batch=B)
loops = []
for _ in range(repeat):
    r = tdse.scan(cfg, sets, backend="cupy", batch=B)
    loops.append(r["batch_seconds"][0])
print(json.dumps({"loops": loops, "acc": np.asarray(r["acceleration"])[:, -1].tolist(),
                  "p": np.asarray(r["p_mean"])[:, -1].tolist()}))
"""
out = {t: [] for t in trees}
last = {}
for _ in range(2):
    for t in trees:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(t)}
        r = subprocess.run([sys.executable, "-c", CHILD, str(B), str(steps), str(repeat)],
                           capture_output=True, text=True, env=env, check=True)
        d = json.loads(r.stdout.strip().splitlines()[-1])
        out[t] += d["loops"]
        last[t] = d
        print(f"B={B} steps={steps} {t}: loops {[round(x, 3) for x in d['loops']]}", flush=True)
for k in ("acc", "p"):
    a, b = (np.asarray(last[t][k]) for t in trees)
    print(f"max |{k}_A - {k}_B| / max |{k}| = {np.abs(a - b).max() / np.abs(a).max():.2e}")
print({t: round(float(np.median(v)), 3) for t, v in out.items()})
