"""#56: the device's timeline (torch.profiler's CUPTI activity) of the time-error suite's
laser (its adaptive rows' draw: rng(56) after the four drives, dt = 1, output every 5):
adaptive at each TOL, and the fixed run as accurate at DT with and without its estimate --
the device's busy time against the evolve's span, the idle gaps, the kernels by time.

    python benchmarks/archive/adapt_trace.py OUT_DIR TOL[,TOL..] DT[,DT..]
"""
import collections
import json
import sys
import time

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

import tdse
import tdse.run.driver as driver
from benchmarks import drives
from tdse.config import with_values

out, tols, dts = sys.argv[1], [float(x) for x in sys.argv[2].split(",")], [float(x) for x in sys.argv[3].split(",")]
rng = np.random.default_rng(56)
for kind in drives.KINDS:
    drives.make(kind, rng)
laser = with_values(drives.make("laser", rng), [("time.dt", 1.0), ("output.every", 5)])


def report(name, trace, wall):
    ev = json.load(open(trace))["traceEvents"]
    gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in gpu)
    busy, cur, gaps, prev = 0.0, None, [], iv[0][1]
    for s, f in iv:
        if cur is None or s > cur[1]:
            if cur:
                busy += cur[1] - cur[0]
            cur = [s, f]
        else:
            cur[1] = max(cur[1], f)
    busy += cur[1] - cur[0]
    for s, f in iv[1:]:
        if s > prev:
            gaps.append(s - prev)
        prev = max(prev, f)
    span = iv[-1][1] - iv[0][0]
    print(f"## {name}: wall {wall * 1e3:.1f} ms; device span {span / 1e3:.1f} ms, busy {busy / 1e3:.1f} ms "
          f"({busy / span:.0%})")
    by = collections.defaultdict(lambda: [0, 0.0])
    for e in gpu:
        by[e["name"][:60]][0] += 1
        by[e["name"][:60]][1] += e["dur"]
    for k, (n, d) in sorted(by.items(), key=lambda kv: -kv[1][1])[:8]:
        print(f"   {d / 1e3:8.2f} ms {n:7d}x  {k}")
    for lo, hi in ((0, 20), (20, 100), (100, 1000), (1000, 1e12)):
        g = [x for x in gaps if lo <= x < hi]
        print(f"   gaps {lo:>5.0f}-{hi:<6.0f} us: {len(g):6d}, {sum(g) / 1e3:7.2f} ms")


real = driver.evolve
runs = [(f"adaptive {t:g}", with_values(laser, [("time.tolerance", t)])) for t in tols]
runs += [(f"fixed dt {d:g} {te}", with_values(laser, [("time.dt", d), ("propagator.time_error", te)]))
         for d in dts for te in ("none", "estimate")]
for name, cfg in runs:
    for _ in range(2):
        tdse.simulate(cfg, backend="cupy", progress=False)
    prof, took = profile(activities=[ProfilerActivity.CUDA]), []

    def traced(*a, **k):
        prof.start()
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            took.append(time.perf_counter() - t)
            prof.stop()
    driver.evolve = traced
    r = tdse.simulate(cfg, backend="cupy", progress=False)
    driver.evolve = real
    f = f"{out}/{name.replace(' ', '_')}.json"
    prof.export_chrome_trace(f)
    report(f"{name} (run {r.seconds * 1e3:.1f} ms)", f, took[0])
