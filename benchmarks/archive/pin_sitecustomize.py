# #54 probe: on PYTHONPATH, pins a process to CPU 0 and a multiprocessing child (the look-ahead worker, spawned or from the fork server) to CPU 1 (run-overhead_cpu2_20261201T073655_pinned.json).
import os, sys
_child = any("multiprocessing" in a or "forkserver" in a for a in sys.argv)
try:
    os.sched_setaffinity(0, {1} if _child else {0})
except Exception:
    pass
if os.environ.get("PIN_DEBUG"):
    sys.stderr.write(f"[pin {os.getpid()} child={_child} argv={sys.argv[:2]}]\n")
