"""#59 item 2: what a GPU process's exit costs, by what it holds (one H200).  Each variant is
a new `python -c` process that prints time.time() as its last statement; the parent takes
the time from that mark to waitpid's return (the process's exit as the shell sees it)."""
import subprocess, sys, time, statistics, os
PRE = "import time, os\n"
V = {
 "numpy only": "import numpy as np; np.ones(10).sum()",
 "cupy init": "import cupy as cp; cp.ones(10).sum().get()",
 "cupy init, os._exit": "import cupy as cp; cp.ones(10).sum().get(); EXIT=1",
 "2 GB device": "import cupy as cp; a = cp.ones(2**28); a.sum().get()",
 "512 MB pinned": "import cupy as cp, cupyx; h = cupyx.empty_pinned((2**26,)); h[:] = 1; cp.asarray(h).sum().get()",
 "64 MB pinned": "import cupy as cp, cupyx; h = cupyx.empty_pinned((2**23,)); h[:] = 1; cp.asarray(h).sum().get()",
 "200 graphs": ("import cupy as cp\ns = cp.cuda.Stream(non_blocking=True)\nx = cp.ones(1000)\ngs = []\n"
                "for i in range(200):\n    with s:\n        s.begin_capture(); y = x * 2 + i; gs.append(s.end_capture())\n"
                "gs[0].launch(s); s.synchronize()"),
 "tdse run atom_hhg": ("import runpy, sys, tempfile\nd = tempfile.mkdtemp()\n"
     "sys.argv = ['tdse', 'run', 'inputs/atom_hhg.toml', '--out', d, '--backend', 'cupy', '--quiet', '--no-plots', '--force']\n"
     "try:\n    runpy.run_module('tdse', run_name='__main__')\nexcept SystemExit:\n    pass"),
 "cublas+cufft": "import cupy as cp; a = cp.ones((512,512)); (a @ a).sum().get(); cp.fft.fft(a).sum().get()",
}
rows = []
for name, code in V.items():
    body = code.replace("; EXIT=1", "")
    tail = "\nprint(time.time(), flush=True)\n" + ("os._exit(0)\n" if "EXIT=1" in code else "")
    src = PRE + body + tail
    gaps, walls = [], []
    for _ in range(5):
        t0 = time.time()
        r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True)
        t1 = time.time()
        mark = float(r.stdout.strip().split()[-1])
        gaps.append(t1 - mark); walls.append(t1 - t0)
    rows.append((name, statistics.median(gaps), min(gaps), max(gaps), statistics.median(walls)))
print("| variant | exit median s | min | max | wall median s |")
print("| --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r[0]} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.3f} | {r[4]:.2f} |")
