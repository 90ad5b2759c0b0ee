"""#54 / the CI failure: Workers.close with a task running, one queued and six cancelled, the pool collected at once (as a run's end leaves it), COUNT times: the pool threads' uncaught exceptions (InvalidStateError, CPython gh-107219, before Python 3.12) and the close's wall.

    python benchmarks/archive/close_probe.py COUNT
"""
import gc, threading, time, sys
from tdse.run import eigenpairs
errors=[]
threading.excepthook = errors.append
closes = []
for i in range(int(sys.argv[1])):
    w = eigenpairs.Workers(1)
    w.ready.result(timeout=60)
    tasks = [w.submit(time.sleep, 30.0) for _ in range(8)]
    for t in tasks[2:]:
        t.cancel()
    thread = w.pool._executor_manager_thread
    t0 = time.perf_counter(); w.close(serve=False); closes.append(time.perf_counter() - t0)
    del w; gc.collect()
    thread.join(30)
import numpy as np
print("errors", len(errors), [type(e.exc_value).__name__ for e in errors][:3], f"close ms: median {np.median(closes)*1e3:.2f}, max {max(closes)*1e3:.2f}")
