"""#54 / #59 item 5: the look-ahead's workers started before the run's process imports the
solvers (tdse.run.eigenpairs.look_ahead, HEAD's tree at /tmp/ab_head against this one):
`tdse run` of h2plus_moving_large's molecule at N = 256 (STENCIL), 8000 steps, populations
every 10, alternating REPEAT times; the file's loop clock and the loop's wait for its pairs
(what it computed itself while the workers started, and its waits).

    python benchmarks/archive/workers_early.py STENCIL REPEAT   (after: git archive HEAD tdse mgemm inputs | tar -x -C /tmp/ab_head)
"""
import dataclasses, os, subprocess, sys, tempfile, time
import numpy as np, h5py
sys.path.insert(0, os.getcwd())
from tdse import config as cfgmod
from tdse.run.runfile import readable_attrs
st = sys.argv[1]; R = int(sys.argv[2])
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 256, stencil=int(st) if st in "35" else st))
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", 8000 * cfg.time.dt).with_value("output.populations_every", 10))
d = tempfile.mkdtemp(); path = os.path.join(d, "in.toml")
open(path, "w").write(cfgmod.to_toml(cfg))
res = {}
for _ in range(R):
    for tree in ("/tmp/ab_head", os.getcwd()):
        out = os.path.join(d, cfg.name + ".h5")
        if os.path.exists(out): os.remove(out)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "tdse", "run", path, "--out", d, "--backend", "numpy", "--quiet", "--no-plots", "--force", "--yes", "--allow-inaccurate"],
                           cwd=tree, env={**os.environ, "PYTHONPATH": tree}, capture_output=True, text=True)
        wall = time.perf_counter() - t
        with h5py.File(out) as f:
            a = readable_attrs(f)
        res.setdefault(tree, []).append((wall, float(a["wall_seconds"]), float(a.get("eigenpairs_wait_seconds", 0)), r.returncode))
for tree, rows in res.items():
    print(f"{tree:14s} {st}-point: wall {np.median([r[0] for r in rows]):.3f} s, loop {np.median([r[1] for r in rows]):.3f} s, "
          f"the loop's wait for its pairs {np.median([r[2] for r in rows]):.3f} s (each {' '.join('%.3f' % r[2] for r in rows)}), rc {set(r[3] for r in rows)}")
