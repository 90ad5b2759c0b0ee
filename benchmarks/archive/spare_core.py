"""Is the 2-core box's second CPU spare (#23 item 3)?  The bare step loop of a run of
inputs/h2plus_moving.toml at N = 256 (STENCIL), timed alone and beside another process
looping on WORK (a Python expression; the default: H(t)'s eigenpairs as the eigenpairs
worker computes them, `tracker.Tracker`, every 10 steps' time), both held to one BLAS thread.
python benchmarks/archive/spare_core.py STENCIL [WORK]"""
import os
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SPIN = """
import sys, time, warnings
sys.path[:0] = [{here!r}, {root!r}]
from threadpoolctl import threadpool_limits; threadpool_limits(1)
warnings.simplefilter('ignore')
import numpy as np
from run_profile import case
from tdse.model import states, tracker
from tdse.model.grid import points
from tdse.model.hamiltonian import generator_dense
from tdse.model.potential import soft_core
cfg, _ = case({inp!r}, 256, {st!r}, 20, 10, 'numpy')
tr = tracker.Tracker(cfg, 4)
H = generator_dense(cfg, 1.0, soft_core(cfg.potential, points(cfg.grid), 0.3))
t, t0 = 0.0, time.time()
while time.time() - t0 < 60:
    {work}
    t += 0.2
"""

if __name__ == "__main__":
    sys.path[:0] = [HERE, ROOT]
    from threadpoolctl import threadpool_limits

    from benchmarks.suites import _bare_steps
    from run_profile import case
    warnings.simplefilter("ignore")
    threadpool_limits(1)
    st = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else "tr(t)"
    inp = os.path.join(ROOT, "inputs", "h2plus_moving.toml")
    cfg, plan = case(inp, 256, st, 2000, 10, "numpy")
    code = SPIN.format(here=HERE, root=ROOT, inp=inp, st=st, work=work)
    print(f"# {st}, beside: {work}")
    for _ in range(3):
        a = _bare_steps(plan, 2000)[0]
        p = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(2.0)
        b = _bare_steps(plan, 2000)[0]
        p.kill()
        p.wait()
        time.sleep(0.3)
        print(f"alone {a * 1e6:.0f} us a step, beside it {b * 1e6:.0f} us: {b / a:.2f}", flush=True)
