"""#56 on a GPU: where the estimate's extra seconds go -- each drive of the time-error suite
(seed 56) with time_error "none" and "estimate" traced (torch.profiler's CUPTI: kernels, graph
nodes, copies): the loop's seconds, the device's busy time and span, the kernels that differ."""
import collections, json, sys, tempfile
import numpy as np
sys.path.insert(0, ".")
import torch
from torch.profiler import ProfilerActivity, profile
import tdse
from benchmarks import drives
from tdse.config import with_value
rng = np.random.default_rng(56)
cfgs = {k: drives.make(k, rng) for k in drives.KINDS}
def busy_of(ev):
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
    by = collections.defaultdict(lambda: [0, 0.0])
    for e in gpu:
        by[e["name"][:70]][0] += 1
        by[e["name"][:70]][1] += e["dur"]
    rt = collections.defaultdict(lambda: [0, 0.0])
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "cuda_runtime":
            rt[e["name"]][0] += 1
            rt[e["name"]][1] += e["dur"]
    return busy, iv[-1][1] - iv[0][0], by, rt
for k, c in cfgs.items():
    res = {}
    for te in ("none", "estimate"):
        cc = with_value(c, "propagator.time_error", te)
        tdse.simulate(cc, backend="cupy")
        secs = [tdse.simulate(cc, backend="cupy").seconds for _ in range(3)]
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            r = tdse.simulate(cc, backend="cupy")
            torch.cuda.synchronize()
        f = tempfile.mktemp(suffix=".json"); prof.export_chrome_trace(f)
        res[te] = (float(np.median(secs)), r.seconds, *busy_of(json.load(open(f))["traceEvents"]))
    print(f"== {k} N={c.grid.n} S={c.time.steps}")
    for te, (s, st, busy, span, by, rt) in res.items():
        print(f"  {te:9s} loop {s*1e3:6.1f} ms (traced {st*1e3:6.1f}); device busy {busy/1e3:6.1f} ms of span {span/1e3:6.1f} ms")
    a, b = res["none"][4], res["estimate"][4]
    diff = sorted(((b.get(n, [0, 0])[1] - a.get(n, [0, 0])[1], n, b.get(n, [0, 0])[0] - a.get(n, [0, 0])[0]) for n in set(a) | set(b)), reverse=True)
    for d, n, cnt in diff[:8]:
        print(f"    +{d/1e3:6.2f} ms {cnt:+6d}x  {n}")
    a, b = res["none"][5], res["estimate"][5]
    diff = sorted(((b.get(n, [0, 0])[1] - a.get(n, [0, 0])[1], n, b.get(n, [0, 0])[0] - a.get(n, [0, 0])[0]) for n in set(a) | set(b)), reverse=True)
    for d, n, cnt in diff[:6]:
        print(f"    runtime +{d/1e3:6.2f} ms {cnt:+6d}x  {n}")
