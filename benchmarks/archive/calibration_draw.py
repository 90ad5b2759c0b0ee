"""#54/#59 item 2: method auto's calibration on one GPU (tdse.numerics.cost._kernels): its
n0 x n0 complex matrix (n0 = 4096) drawn on the host and copied, as cost._kernels did until
2026-12-03, against drawn by CuPy's own generator (best of 3 each, after one of each); then
prepare's calibration seconds (``prepare_seconds["calibration"]``, method auto) of
h2plus_moving_large as the run-overhead suite makes it (N = 8192, 3-point), each in a fresh
process as a `tdse run` has it.  Usage: PYTHONPATH=. python calibration_draw.py"""
import subprocess
import sys
import time

import cupy as cp
import numpy as np

n0 = 4096


def host():
    rng = np.random.default_rng(12345)
    cp.asarray(rng.standard_normal((n0, n0)) + 1j * rng.standard_normal((n0, n0)))
    cp.cuda.Device().synchronize()


def device():
    rng = cp.random.default_rng(12345)
    rng.standard_normal((n0, n0)) + 1j * rng.standard_normal((n0, n0))
    cp.cuda.Device().synchronize()


for f in (host, device):
    f()
for name, f in (("drawn on the host and copied", host), ("drawn on the device", device)):
    ts = []
    for _ in range(3):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    print(f"{n0}^2 complex {name}: best {min(ts):.3f} s ({', '.join(f'{x:.3f}' for x in ts)})", flush=True)

CHILD = """
import dataclasses, tdse
base = tdse.load_config("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / 8192, stencil=3))
cfg = cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
print(plan.config.propagator.method, round(plan.prepare_seconds["calibration"], 3))
"""
for i in range(3):
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    print(f"prepare in a fresh process: method and calibration seconds: {out.stdout.strip()} {out.stderr.strip()[-300:]}", flush=True)
