"""#54: does work on the other vCPU slow this one's arithmetic?  A 3-point banded product (zhbmv, N = 256) timed 20000 times on CPU 0 while CPU 1 is idle, spins in Python, runs a small NumPy loop, or streams 32 MB; 6 rounds alternating, us a product."""
import os, sys, time, subprocess
import numpy as np
os.sched_setaffinity(0, {0})
from scipy.linalg.blas import zhbmv
n = 256
band = np.zeros((2, n), dtype=np.complex128); band[1] = 2.0; band[0, 1:] = -1.0
x = np.random.default_rng(0).standard_normal(n) + 0j
def work():
    t0 = time.perf_counter()
    y = x
    for _ in range(20000):
        y = zhbmv(1, 1.0, band, x)
    return (time.perf_counter() - t0) / 20000 * 1e6
SPIN = {"idle": None, "python spin": "while True: pass",
        "numpy small": "import numpy as np\na=np.random.rand(256)+0j\nwhile True: a*=1.0000001",
        "numpy 32MB": "import numpy as np\na=np.random.rand(1<<22)\nwhile True: a*=1.0000001"}
res = {k: [] for k in SPIN}
for r in range(6):
    for k, code in SPIN.items():
        p = None
        if code:
            p = subprocess.Popen([sys.executable, "-c", "import os; os.sched_setaffinity(0,{1})\n" + code]); time.sleep(0.3)
        res[k].append(work())
        if p: p.kill(); p.wait()
for k, v in res.items():
    print(f"{k:12s} zhbmv N=256 us: median {np.median(v):.2f}  ({' '.join(f'{x:.2f}' for x in v)})")
