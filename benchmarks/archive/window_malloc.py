"""#59 item 5 / #54: the 3- and 5-point trackers' windows (16 calls of H(t)'s pairs, populations every 50
steps of h2plus_moving_large's molecule) on one core, with glibc's malloc as it starts or as a
look-ahead worker sets it (tdse.run.ahead_child.keep_memory): ms a window and a hash of the pairs.

    python benchmarks/archive/window_malloc.py [keep]
"""
import sys, time, dataclasses, hashlib
import numpy as np
sys.path.insert(0, '.')
if len(sys.argv) > 1 and sys.argv[1] == "keep":
    from tdse.run.ahead_child import keep_memory
    keep_memory()
from tdse import config as c
from tdse.model.tracker import Tracker
from threadpoolctl import threadpool_limits
out = []
for n, st in ((8192, 3), (8192, 5), (2048, 3), (256, 3)):
    cfg = c.load('inputs/h2plus_moving_large.toml')
    w = cfg.grid.x_max - cfg.grid.x_min
    cfg = cfg.with_value('time.t_end', 20000 * cfg.time.dt).with_value('output.populations_every', 50)
    cfg = dataclasses.replace(cfg, grid=dataclasses.replace(cfg.grid, stencil=st, dx=w / n))
    with threadpool_limits(1):
        tr = Tracker(cfg, cfg.output.populations)
        tr.window(0)
        h = hashlib.sha256()
        t = time.perf_counter()
        for a in range(1, 9):
            for E, phi in tr.window(a):
                h.update(np.ascontiguousarray(E).tobytes()); h.update(np.ascontiguousarray(phi).tobytes())
        dt = (time.perf_counter() - t) / 8
    out.append(f"N={n} {st}-point {dt*1e3:.1f} ms/window ({h.hexdigest()[:12]})")
print(("keep_memory: " if len(sys.argv) > 1 else "as before:   ") + "; ".join(out))
