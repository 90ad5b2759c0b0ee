"""#56: a GPU timeline of the laser drive's loop (none / estimate) through torch.profiler's
CUPTI activity (every kernel and copy of the process, CuPy's too): the device's busy time
against the wall, and the kernels by total time."""
import sys, time, json, collections
import numpy as np
import torch
from torch.profiler import profile, ProfilerActivity
import tdse
from benchmarks import drives
rng = np.random.default_rng(56)
cases = {k: drives.make(k, rng) for k in ("abrupt", "ramped", "laser", "fast")}
a = tdse.load_config("inputs/atom_hhg.toml")
cases["atom_hhg"] = a.with_value("time.t_end", 1000 * a.time.dt).with_value("output.every", 50)
out = sys.argv[1]
for name in sys.argv[2].split(","):
    for te in ("none", "estimate"):
        c = cases[name].with_value("propagator.time_error", te)
        tdse.simulate(c, backend="cupy"); tdse.simulate(c, backend="cupy")
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            t = time.perf_counter(); r = tdse.simulate(c, backend="cupy"); w = time.perf_counter() - t
        path = f"{out}/trace_{name}_{te}.json"
        prof.export_chrome_trace(path)
        ev = json.load(open(path))["traceEvents"]
        gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        if not gpu:
            print(name, te, "no gpu events; cats:", collections.Counter(e.get("cat") for e in ev).most_common(8)); continue
        t0 = min(e["ts"] for e in gpu); t1 = max(e["ts"] + e["dur"] for e in gpu)
        iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in gpu)
        busy, cur = 0.0, None
        for s, f in iv:
            if cur is None or s > cur[1]:
                if cur: busy += cur[1] - cur[0]
                cur = [s, f]
            else:
                cur[1] = max(cur[1], f)
        busy += cur[1] - cur[0]
        by = collections.defaultdict(lambda: [0, 0.0])
        for e in gpu:
            k = e["name"][:60]; by[k][0] += 1; by[k][1] += e["dur"]
        print(f"## {name} {te}: wall {w*1e3:.1f} ms, loop {r.seconds*1e3:.1f} ms, gpu span {(t1-t0)/1e3:.1f} ms, gpu busy {busy/1e3:.1f} ms, events {len(gpu)}")
        for k, (n, d) in sorted(by.items(), key=lambda kv: -kv[1][1])[:14]:
            print(f"   {d/1e3:8.2f} ms {n:6d}x  {k}")
        # gaps: the largest idle intervals inside the span
        gaps = []; prev = iv[0][1]
        for s, f in iv[1:]:
            if s > prev: gaps.append(s - prev)
            prev = max(prev, f)
        gaps.sort(reverse=True)
        print(f"   idle gaps: {len(gaps)}, sum {sum(gaps)/1e3:.1f} ms, largest {[round(g) for g in gaps[:8]]} us", flush=True)
