"""#59 item 2, tried and not adopted: `tdse run` with CUDA's driver initialised and device 0's
primary context retained in a thread at the start (ctypes, which lets go of the GIL:
cuInit and cuDevicePrimaryCtxRetain beside the imports), against `python -m tdse run`;
alternate the two as new processes:

    python benchmarks/archive/warm_driver.py run inputs/atom_hhg.toml --backend cupy --force
"""
import ctypes, threading, time, sys
T0 = time.perf_counter()
spent = {}
def warm():
    t = time.perf_counter()
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        if cu.cuInit(0) != 0:
            return
        spent["init"] = time.perf_counter() - t
        dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
        ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        spent["ctx"] = time.perf_counter() - t
    except OSError:
        pass
th = threading.Thread(target=warm, daemon=True); th.start()
import atexit
atexit.register(lambda: print(f"[warm thread: {spent}, started {T0:.3f}]", file=sys.stderr))
from tdse.ui.cli import main
sys.argv[0] = "tdse"
main()
