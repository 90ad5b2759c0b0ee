"""#54 probe (2 CPUs): does work on the other core slow a one-core NumPy loop?  A fixed loop (20000
products of a 256 x 256 matrix, 20000 small element-wise ops) timed alone, beside a spinning
process and beside a dense eigensolver, each pinned to its core, interleaved 6 times."""
import os, sys, time, subprocess, numpy as np
from threadpoolctl import threadpool_limits
threadpool_limits(1); os.sched_setaffinity(0, {0})
rng = np.random.default_rng(0)
A = rng.standard_normal((256, 256)); x = rng.standard_normal((256, 2))
v = rng.standard_normal(256) + 1j * rng.standard_normal(256)
def loop():
    t = time.perf_counter()
    for _ in range(20000): y = A @ x
    for _ in range(20000): w = v * 1.5 + v        # small NumPy ops, Python-bound
    return time.perf_counter() - t
spin = "import os,time\nos.sched_setaffinity(0,{1})\nend=time.time()+%f\nwhile time.time()<end: pass"
eigh = "import os,time,numpy as np\nos.sched_setaffinity(0,{1})\nfrom threadpoolctl import threadpool_limits; threadpool_limits(1)\nH=np.random.default_rng(1).standard_normal((256,256)); H=H+H.T\nend=time.time()+%f\nwhile time.time()<end: np.linalg.eigh(H)"
res = {"alone": [], "spin": [], "eigh": []}
for k in range(6):
    res["alone"].append(loop())
    for name, code in (("spin", spin), ("eigh", eigh)):
        p = subprocess.Popen([sys.executable, "-c", code % 2.5]); time.sleep(0.4)
        res[name].append(loop()); p.wait()
for k, v_ in res.items(): print(k, [round(x, 3) for x in v_], "median", round(float(np.median(v_)), 3))
