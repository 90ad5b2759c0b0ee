"""#59 item 1: a scan's block kinetic energy by FFT against the dense T's GEMM on one GPU:
atom_hhg, B members as one batch, time_error none; wall of tdse.scan with BLOCK_FFT False /
True / None (the timed choice), the largest difference of the dipole acceleration between
the two paths, relative to its largest value."""
import sys, time
import numpy as np
import tdse
from tdse.config import with_values
from tdse.numerics import graph_fft
B = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4410
dx = float(sys.argv[3]) if len(sys.argv) > 3 else 0.4
cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("propagator.time_error", "none")
cfg = with_values(cfg, [("time.t_end", steps * cfg.time.dt), ("grid.dx", dx)])
sets = {"field.E0": list(np.linspace(0.03, 0.09, B))}
out = {}
for mode in (False, True, None, False, True):
    graph_fft.BLOCK_FFT = mode
    t = time.perf_counter()
    r = tdse.scan(cfg, sets, backend="cupy", batch=B)
    wall = time.perf_counter() - t
    key = {False: "gemm", True: "fft", None: "timed"}[mode]
    acc = np.asarray(r["acceleration"])
    out.setdefault(key, []).append(wall)
    out[key + "_acc"] = acc
    print(f"B={B} N={cfg.grid.n} steps={steps} {key}: {wall:.3f} s", flush=True)
print("timed choice:", graph_fft._BLOCK_CHOICES)
a, b = out["gemm_acc"], out["fft_acc"]
print(f"max |acc_fft - acc_gemm| / max |acc| = {np.abs(a - b).max() / np.abs(a).max():.3e}")
print("min walls:", {k: round(min(v), 3) for k, v in out.items() if not k.endswith("_acc")})
