"""#59 item 1: a GPU scan's timeline through torch.profiler's CUPTI activity (every kernel,
graph nodes included, and copy of the process): atom_hhg, B members as one batch, STEPS
steps, time_error none; one scan untraced first (compiles, plans), then one traced: the
device's busy time against the span, kernels by total time and count, per step and per
Chebyshev term.  Usage: PYTHONPATH=. python scan_trace.py B STEPS"""
import collections
import json
import sys
import tempfile

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

import tdse
from tdse.config import with_values

B, steps = int(sys.argv[1]), int(sys.argv[2])
cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("propagator.time_error", "none")
cfg = with_values(cfg, [("time.t_end", steps * cfg.time.dt)])
sets = {"field.E0": list(np.linspace(0.03, 0.09, B))}
tdse.scan(cfg, sets, backend="cupy", batch=B)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    r = tdse.scan(cfg, sets, backend="cupy", batch=B)
    torch.cuda.synchronize()
trace = tempfile.mktemp(suffix=".json")
prof.export_chrome_trace(trace)
ev = json.load(open(trace))["traceEvents"]
gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in gpu)
busy, cur = 0.0, None
for s, f in iv:
    if cur is None or s > cur[1]:
        busy += (cur[1] - cur[0]) if cur else 0.0
        cur = [s, f]
    else:
        cur[1] = max(cur[1], f)
busy += cur[1] - cur[0]
span = iv[-1][1] - iv[0][0]
K = r["batch_chebyshev_terms"][0]
print(f"B = {B}, N = {cfg.grid.n}, {steps} steps, {K} terms ({K / steps:.1f} a step); scan's loop "
      f"{r['batch_seconds'][0]:.3f} s; device span {span / 1e6:.3f} s, busy {busy / 1e6:.3f} s "
      f"({busy / span:.0%}): {busy / K:.1f} us busy a term")
by = collections.defaultdict(lambda: [0, 0.0])
for e in gpu:
    by[e["name"][:80]][0] += 1
    by[e["name"][:80]][1] += e["dur"]
for k, (n, d) in sorted(by.items(), key=lambda kv: -kv[1][1])[:16]:
    print(f"  {d / 1e3:8.1f} ms {n:7d}x {d / n:7.1f} us each, {d / K:6.2f} us a term  {k}")
gaps, prev = [], iv[0][1]
for s, f in iv[1:]:
    if s > prev:
        gaps.append((s - prev, prev))
    prev = max(prev, f)
for lo, hi in ((0, 10), (10, 100), (100, 1000), (1000, 1e12)):
    g = [x for x, _ in gaps if lo <= x < hi]
    print(f"  idle gaps {lo:>5.0f}-{hi:<6.0f} us: {len(g):6d}, {sum(g) / 1e3:7.1f} ms")
first = iv[0][0]
print("  largest gaps (us at ms):", [(round(g), round((t - first) / 1e3, 1)) for g, t in sorted(gaps, reverse=True)[:12]])
if len(sys.argv) > 3:                    # the host's side: cProfile of one more scan, untraced
    import cProfile
    import pstats
    P = cProfile.Profile()
    P.enable()
    tdse.scan(cfg, sets, backend="cupy", batch=B)
    P.disable()
    pstats.Stats(P).sort_stats("tottime").print_stats(25)
