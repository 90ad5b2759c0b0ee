"""#56: pinned host allocations of repeated GPU runs with and without the estimate (seed 56
 drives, abrupt and laser): requests a run and the cudaHostAlloc calls among them (torch.profiler)."""
import collections, json, sys, tempfile, traceback
import numpy as np
sys.path.insert(0, ".")
import cupy as cp
import torch
from torch.profiler import ProfilerActivity, profile
import tdse
from benchmarks import drives
from tdse.config import with_value
rng = np.random.default_rng(56)
cfgs = {k: drives.make(k, rng) for k in drives.KINDS}
pool = cp.get_default_pinned_memory_pool()
log = []
def alloc(size):
    log.append((size, "".join(traceback.format_stack(limit=6)[:-1])))
    return pool.malloc(size)
cp.cuda.set_pinned_memory_allocator(alloc)
for k in ("abrupt", "laser"):
    for te in ("none", "estimate"):
        cc = with_value(cfgs[k], "propagator.time_error", te)
        for i in range(4):
            log.clear()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                r = tdse.simulate(cc, backend="cupy"); torch.cuda.synchronize()
            f = tempfile.mktemp(suffix=".json"); prof.export_chrome_trace(f)
            ev = json.load(open(f))["traceEvents"]
            ha = [e for e in ev if e.get("name") == "cudaHostAlloc"]
            print(f"{k} {te} run {i}: loop {r.seconds*1e3:.1f} ms, pinned requests {len(log)} "
                  f"({sum(s for s, _ in log)/1e6:.2f} MB), cudaHostAlloc {len(ha)} ({sum(e['dur'] for e in ha)/1e3:.2f} ms), "
                  f"pool free blocks {pool.n_free_blocks()}", flush=True)
            if i == 3 and ha:
                c = collections.Counter(st for _, st in log)
                for st, n in c.most_common(4):
                    print("   ", n, "x", [s for s, t in log if t == st][:4], "\n", st[-700:])
