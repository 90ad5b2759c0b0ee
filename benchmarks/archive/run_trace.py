"""#54: a GPU run's timeline through torch.profiler's CUPTI activity (every kernel, copy and
CUDA runtime call of the process, CuPy's too): INPUT with method auto, no time error, STEPS
steps, populations every EVERY, through tdse.simulate (a file written; one run before it,
untraced; the trace spans its evolve only), and its bare loop (the same plan's stepper, no sinks): the device's busy time
against the span, the kernels and copies by total time, the runtime calls by total time
(a cudaEventSynchronize is the host waiting for the device), the largest idle gaps.

    python benchmarks/archive/run_trace.py INPUT STEPS EVERY OUT_DIR [SWITCH_INTERVAL]
"""
import collections, json, sys, tempfile, time
import torch
from torch.profiler import ProfilerActivity, profile
import cupy as cp
import tdse
from tdse.run.loop import evolve

path, steps, every, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if len(sys.argv) > 5:       # the interpreter's GIL switch interval (default 5 ms)
    sys.setswitchinterval(float(sys.argv[5]))
    print(f"# sys.setswitchinterval({sys.getswitchinterval()})")
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))


def report(name, trace, wall):
    ev = json.load(open(trace))["traceEvents"]
    gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    api = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"]
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
    print(f"## {name}: wall {wall:.3f} s; device span {span / 1e6:.3f} s, busy {busy / 1e6:.3f} s "
          f"({busy / span:.0%}); {busy / steps:.1f} us busy a step")
    for cat, evs in (("device", gpu), ("runtime", api)):
        by = collections.defaultdict(lambda: [0, 0.0])
        for e in evs:
            by[e["name"][:70]][0] += 1
            by[e["name"][:70]][1] += e["dur"]
        for k, (n, d) in sorted(by.items(), key=lambda kv: -kv[1][1])[:10]:
            print(f"   {cat:7s} {d / 1e3:8.1f} ms {n:7d}x  {k}")
    gaps.sort(reverse=True)
    print(f"   idle gaps: {len(gaps)}, sum {sum(gaps) / 1e3:.1f} ms, largest (us) {[round(g) for g in gaps[:10]]}")
    if name.startswith("run"):          # what the host called during the largest gaps
        gpu_sorted = sorted(gpu, key=lambda e: e["ts"])
        top = []
        last_end = gpu_sorted[0]["ts"] + gpu_sorted[0]["dur"]
        for a, b in zip(gpu_sorted, gpu_sorted[1:]):
            last_end = max(last_end, a["ts"] + a["dur"])
            if b["ts"] - last_end > 500:
                top.append((b["ts"] - last_end, last_end, b["ts"], a["name"][:30], b["name"][:30]))
        t_first = gpu_sorted[0]["ts"]
        for g, s0, s1, before, after in sorted(top, reverse=True)[:8]:
            calls = collections.Counter(e["name"] for e in api if s0 <= e["ts"] <= s1)
            print(f"   gap {g / 1e3:6.2f} ms at +{(s0 - t_first) / 1e3:7.1f} ms after {before!r}, before {after!r}; "
                  f"runtime calls in it: {dict(calls.most_common(5))}")
    for lo, hi in ((0, 100), (100, 1000), (1000, 10000), (10000, 1e12)):
        g = [x for x in gaps if lo <= x < hi]
        print(f"   gaps {lo:>5.0f}-{hi:<6.0f} us: {len(g):6d}, {sum(g) / 1e3:7.1f} ms")


import tdse.run.driver as driver
tdse.simulate(cfg, backend="cupy", out=tempfile.mkdtemp(), force=True)
torch.cuda.synchronize()
prof, real, took = profile(activities=[ProfilerActivity.CUDA]), driver.evolve, []


def traced(*a, **k):
    prof.start()
    t = time.perf_counter()
    try:
        return real(*a, **k)
    finally:
        took.append(time.perf_counter() - t)
        prof.stop()


driver.evolve = traced
tdse.simulate(cfg, backend="cupy", out=tempfile.mkdtemp(), force=True)
prof.export_chrome_trace(f"{out}/run.json")
report("run's evolve", f"{out}/run.json", took[0])
plan = tdse.prepare(cfg, backend="cupy", check_resolution=False, allow_inaccurate=True)
st = plan.stepper()
s = evolve(plan, cp.asarray(plan.psi0), stop=2, stepper=st)
cp.cuda.Device().synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    t = time.perf_counter()
    evolve(plan, s.psi, start=2, stop=steps, stepper=st, settle=False)
    cp.cuda.Device().synchronize()
    w = time.perf_counter() - t
prof.export_chrome_trace(f"{out}/bare.json")
report("bare", f"{out}/bare.json", w)
