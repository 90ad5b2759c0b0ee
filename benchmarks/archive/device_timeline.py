"""#54: where a GPU run's loop spends the time its bare steps do not -- the device's own
timeline (CUPTI through torch.profiler, which records every kernel and copy of the
process, CuPy's included).  In-process runs (no error bar, plots off), three cases: the
populations in H(t)'s states at the ends only ("ends"), every P steps by the look-ahead as
shipped ("every"), every P steps from pairs computed before the run ("given": no workers).
Beside them "bare": the suite's bare loop of the plan's steps
(benchmarks.suites._bare_steps: no rows, no file).  Each case runs once unprofiled (warm), then once under the profiler.  Per case: the loop's
wall (the file's wall_seconds) a step; the device's busy time a step (the union of its
kernels, copies and sets) and its idle time; the idle gaps over 5 us (count, sum, the five
longest with the activity before and after and the host's CUDA calls in them, by thread);
the host's CUDA calls by total time.
Usage: python loop_timeline.py INPUT N STENCIL STEPS P [OUTDIR]"""
import dataclasses, json, os, sys, tempfile, time
from collections import defaultdict
sys.path.insert(0, os.getcwd())
import h5py
import torch
import tdse
from benchmarks.suites import _bare_steps
from torch.profiler import profile, ProfilerActivity
from tdse import config as cfgmod
from tdse.model.tracker import Tracker
from tdse.run import eigenpairs
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs

path, N, st, S, P = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
out = sys.argv[6] if len(sys.argv) > 6 else tempfile.mkdtemp()
base = cfgmod.load(path)
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=int(st) if st in "35" else st))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("time.t_end", S * cfg.time.dt))
CASES = {"ends": cfg.with_value("output.populations_every", S),
         "every": cfg.with_value("output.populations_every", P),
         "given": cfg.with_value("output.populations_every", P).with_value("run.eigen_workers", "off")}
TABLE = {}
tr = Tracker(CASES["every"], cfg.output.populations)
for s in sorted(set(range(0, S + 1, P)) | {S}):
    TABLE[s] = tr(s * cfg.time.dt)
shipped = eigenpairs.Lookahead.__call__


def lookup(self, step, t):
    self.calls += 1
    return TABLE[step]


torch.zeros(1, device="cuda")            # (torch's context on the device CuPy uses)


PLAN = tdse.prepare(CASES["ends"], backend="cupy", check_resolution=False)


def go(name):
    if name == "bare":           # the suite's bare loop: the plan's steps, no rows, no file
        return _bare_steps(PLAN, S)[0] * S
    r = run(CASES[name], tempfile.mkdtemp(), backend="cupy", force=True, allow_inaccurate=True)
    with h5py.File(r.path) as f:
        return float(readable_attrs(f)["wall_seconds"])


def once(name, profiled):
    eigenpairs.Lookahead.__call__ = lookup if name == "given" else shipped
    try:
        if not profiled:
            return go(name), None
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            r = go(name)
        trace = os.path.join(out, f"trace_{name}.json")
        prof.export_chrome_trace(trace)
        return r, trace
    finally:
        eigenpairs.Lookahead.__call__ = shipped


def analyse(trace):
    with open(trace) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    dev = sorted((e["ts"], e["ts"] + e.get("dur", 0), e["name"]) for e in ev
                 if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    api = defaultdict(lambda: [0, 0.0])
    for e in ev:
        if e.get("cat") == "cuda_runtime" or e.get("cat") == "cuda_driver":
            api[e["name"]][0] += 1
            api[e["name"]][1] += e.get("dur", 0)
    names = defaultdict(lambda: [0, 0.0])
    for a, b, n in dev:
        names[n[:60]][0] += 1
        names[n[:60]][1] += b - a
    busy, gaps, end, prev = 0.0, [], None, None
    for a, b, n in dev:
        if end is None:
            busy, end, prev = b - a, b, n
            continue
        if a > end:
            gaps.append((a - end, prev, n, end))
            busy += b - a
        elif b > end:
            busy += b - end
        if b >= end:
            end, prev = b, n
    span = end - dev[0][0]
    big = [g for g in gaps if g[0] > 5.0]
    calls = sorted((e["ts"], e["ts"] + e.get("dur", 0), e["name"], e.get("tid")) for e in ev
                   if e.get("cat") in ("cuda_runtime", "cuda_driver"))
    starts = [c[0] for c in calls]
    import bisect

    def during(g):       # the host's CUDA calls that overlap the gap (from its end back)
        a, b = g[3], g[3] + g[0]
        i = bisect.bisect_right(starts, b)
        got = [c for c in calls[max(0, i - 400):i] if c[1] >= a]
        return [(round(c[0] - a, 1), round(c[1] - c[0], 1), c[2], c[3]) for c in got][-6:]
    longest = [(g[0], g[1], g[2], during(g), (g[3] - dev[0][0]) / 1e6) for g in sorted(big, reverse=True)[:5]]
    kinds = defaultdict(lambda: [0, 0.0])        # gaps > 5 us by the activities around them
    for g in big:
        kinds[(g[1][:28], g[2][:28])][0] += 1
        kinds[(g[1][:28], g[2][:28])][1] += g[0]
    kinds = sorted(kinds.items(), key=lambda kv: -kv[1][1])[:8]
    return dict(span=span, busy=busy, idle=span - busy, kernels=len(dev), gaps5=len(big),
                gaps5_sum=sum(g[0] for g in big), longest=longest, kinds=kinds,
                api=sorted(api.items(), key=lambda kv: -kv[1][1])[:8],
                names=sorted(names.items(), key=lambda kv: -kv[1][1])[:6])


rows = []
for name in ["bare", *CASES]:
    once(name, False)
    wall, trace = once(name, True)
    a = analyse(trace)
    os.remove(trace)
    print(f"\n== {name}: loop {wall:.3f} s = {wall / S * 1e6:.2f} us a step; device span {a['span'] / 1e6:.3f} s, "
          f"busy {a['busy'] / S:.2f} us a step, idle {a['idle'] / S:.2f} us a step; {a['kernels']} device "
          f"activities ({a['kernels'] / S:.2f} a step); gaps > 5 us: {a['gaps5']}, {a['gaps5_sum'] / 1e3:.1f} ms")
    for g, before, after, calls, at in a["longest"]:
        print(f"   gap {g:8.1f} us at {at:.3f} s  after {before[:50]!r}  before {after[:50]!r}")
        for c in calls:
            print(f"        host call at +{c[0]} us for {c[1]} us: {c[2]} (thread {c[3]})")
    for (before, after), (c, t) in a["kinds"]:
        print(f"   gaps {before!r} -> {after!r}: {c}, {t / 1e3:.1f} ms")
    print("   device by total:", "; ".join(f"{n[:40]} x{c} {t / 1e3:.1f} ms" for n, (c, t) in a["names"]))
    print("   host CUDA calls by total:", "; ".join(f"{n} x{c} {t / 1e3:.1f} ms" for n, (c, t) in a["api"]))
    rows.append((name, wall / S * 1e6, a["busy"] / S, a["idle"] / S, a["gaps5"], a["gaps5_sum"] / 1e3))
print(f"\nN = {N}, stencil {st}, {S} steps, populations every {P} (us a step; profiled runs)")
print("| case | loop | device busy | device idle | gaps > 5 us | their sum ms |")
print("| --- | --- | --- | --- | --- | --- |")
for r in rows:
    print("| %s | %.2f | %.2f | %.2f | %d | %.1f |" % r)
